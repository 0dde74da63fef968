"""Depths and fills as people read them: never rounded across the threshold they are judged by.

Theory of operation
-------------------
A storm of 0.496 in printed with two decimals is "0.50 in", which reads as a
storm that qualified at the 0.5 in of § 134-9A(2); a trap filled to 0.4972 of
its design volume printed as a whole percent is "50%", which reads as the
clean-out § 134-9A(1) demands. Neither is true. So every depth and fill a
person reads beside its threshold (the replay table, ``status``, the report,
the alerts, the field app) is printed here, by one rule:

1. the figure is printed with its usual digits (``digits``);
2. if that printed value sits on the other side of a threshold than the value
   itself (or on it, when the value is below it), one more digit is printed,
   and another, up to ``MORE_DIGITS`` more: ``0.496 in``, ``49.7%``;
3. if it still does not sit on the value's side (a value a hair below its
   threshold), it is truncated toward the value: below a threshold stays
   below.

The comparison is made in decimal, on the shortest text of each float
(``repr``), so a threshold such as 0.4 is 0.4 and not the binary fraction
nearest it, and a value on its threshold (0.50 in) is printed as it is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal
from typing import Final

#: How many digits beyond its usual ones a figure may take to keep to its side.
MORE_DIGITS: Final = 3
_PERCENT: Final = Decimal(100)


def figure(value: float, digits: int, thresholds: Iterable[float] = (), *,
           percent: bool = False) -> str:
    """``value`` as text with ``digits`` decimals (as a percentage of 1 when
    ``percent``), or more, never across one of ``thresholds`` (module docstring);
    ``unknown`` for NaN."""
    if math.isnan(value):
        return "unknown"
    scale = _PERCENT if percent else Decimal(1)
    exact = Decimal(repr(value)) * scale
    limits = [Decimal(repr(t)) * scale for t in thresholds]
    for places in range(digits, digits + MORE_DIGITS + 1):
        shown = exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
        if all((shown < t) == (exact < t) for t in limits):
            return f"{shown:f}"
    # Still across: truncated toward the value, below a threshold stays below it.
    return f"{exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_DOWN):f}"


def depth_text(depth_in: float, *thresholds_in: float, digits: int = 2) -> str:
    """A depth in inches (rain, a storm's total, a forecast): ``0.49 in``, ``0.496 in``."""
    return f"{figure(depth_in, digits, thresholds_in)} in"


def fill_text(fraction: float, *thresholds: float, digits: int = 0) -> str:
    """A trap's fill, a fraction of design volume, as a percentage: ``49%``, ``49.7%``."""
    shown = figure(fraction, digits, thresholds, percent=True)
    return shown if shown == "unknown" else f"{shown}%"
