"""stormwatch: stormwater compliance monitoring for construction sites (Chapter 134)."""

__version__ = "0.1.0"
