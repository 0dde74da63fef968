"""The reliability suite (issue 13, Build 4): outages of a season, asserted by counts."""
