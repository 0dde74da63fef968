"""The reliability suite: outages of a season, asserted by counts."""
