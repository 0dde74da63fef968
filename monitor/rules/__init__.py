"""The rule families: what a site's readings mean under the law, one folder per family.

Each family (``rain``, ``traps``, ``turbidity``, ``health``, ``weather``,
``clocks``) declares in its ``__init__.py`` a ``Family`` (``family.py``): its
sensor kinds and payload fields, its events, its folds and where readings go;
``registry.FAMILIES`` lists them. ``active.py`` (a site's active period) and
``readout.py`` (the engine's answer as types) are shared by the families. Pure:
no I/O; the engine (``monitor/engine/``) drives the folds.

This ``__init__`` imports nothing, so that importing one module of a family
does not import every family.
"""
