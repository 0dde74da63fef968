"""Depths and fills are never printed across the threshold they are judged by:
``contract/figures.py``, the one function every output prints them with."""

from __future__ import annotations

import pytest

from monitor.contract.figures import depth_text, fill_text


@pytest.mark.parametrize(("depth_in", "shown"), [
    (0.496, "0.496 in"),      # "0.50 in" would read as a qualifying storm
    (0.4999, "0.4999 in"),    # three more digits at the most ...
    (0.4999999, "0.49999 in"),  # ... then cut toward the value: below stays below
    (0.5, "0.50 in"),         # on the threshold: as it is
    (0.504, "0.50 in"),       # above it, rounding down onto it is still not below
    (0.49, "0.49 in"),
    (0.70, "0.70 in"),
])
def test_a_depth_beside_the_storm_threshold(depth_in: float, shown: str) -> None:
    assert depth_text(depth_in, 0.5) == shown


def test_a_depth_without_a_threshold_is_rounded_as_usual() -> None:
    assert depth_text(0.496) == "0.50 in"


@pytest.mark.parametrize(("fraction", "shown"), [
    (0.4972, "49.7%"),    # "50%" would read as a clean-out demand
    (0.3996, "39.96%"),   # 40.0 is the warning level: one decimal is not enough
    (0.4, "40%"),         # 0.4 is 0.4, not the binary fraction beside it
    (0.5, "50%"),
    (0.53, "53%"),
    (0.7499, "75%"),      # no level near: the usual whole percent
    (float("nan"), "unknown"),
])
def test_a_fill_beside_the_warning_and_clean_out_levels(fraction: float, shown: str) -> None:
    assert fill_text(fraction, 0.4, 0.5) == shown


def test_a_fill_with_one_decimal_keeps_to_its_side_too() -> None:
    # 49.96 % with one decimal is 50.0 %: two decimals are shown.
    assert fill_text(0.4996, 0.4, 0.5, digits=1) == "49.96%"
    assert fill_text(0.4972, 0.4, 0.5, digits=1) == "49.7%"
