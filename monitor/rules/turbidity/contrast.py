"""The numeric reading of § 134-8C: how much turbidity over background is a contrast.

§ 134-8C of the chapter: land development "shall not cause an increase in
turbidity that will result in substantial visible contrast to natural
conditions in surface waters". The chapter gives no number; a pair's ``rule``
supplies one (``limit_ntu``): a fixed ``delta_ntu`` over background, or the
preset ``wa-173-201a`` taken from Washington's water-quality standards. The
pair's fold (``turbidity.py``) applies it reading by reading.

NTU values are integers in milli-NTU (as in the fold's key) and limits in
units of 1e-4 NTU, so the comparison with the limit is exact: 55.1 NTU over a
background of 50.1 NTU is 5 NTU, not 5.000000000000007.
"""

from __future__ import annotations

from ...config import TurbidityPair

MILLI_PER_NTU = 1000
#: Limits are kept in 1e-4 NTU: ten per milli-NTU, so 10 % of a milli-NTU reading is whole.
E4_PER_MILLI = 10
E4_PER_NTU = MILLI_PER_NTU * E4_PER_MILLI

#: WAC 173-201A-200(1)(e): the background at or below which the fixed 5 NTU applies.
WA_BACKGROUND_NTU = 50
WA_DELTA_NTU = 5
WA_PERCENT = 10


def limit_ntu(pair: TurbidityPair, upstream_ntu: float) -> float:
    """The allowed increase over background, in NTU, for a background of ``upstream_ntu``.

    ``delta_ntu``    the pair's fixed ``delta_ntu``.
    ``wa-173-201a``  Washington WAC 173-201A-200(1)(e), the aquatic-life turbidity
                     criterion of its most protected classes: 5 NTU over background
                     when the background is 50 NTU or less, a 10 % increase when it
                     is more. The two branches meet at 50 NTU.

    A numeric reading of § 134-8C ("substantial visible contrast to natural
    conditions"), which gives no number itself.
    """
    if pair.rule == "delta_ntu":
        return _delta_ntu(pair)
    if upstream_ntu <= WA_BACKGROUND_NTU:
        return float(WA_DELTA_NTU)
    return upstream_ntu * WA_PERCENT / 100


def exceeds(pair: TurbidityPair, upstream_ntu: float, downstream_ntu: float) -> bool:
    """§ 134-8C contrast: ``downstream − upstream > limit_ntu(upstream)``.

    Compared exactly on readings quantised to milli-NTU, as the fold does.
    """
    up_m, down_m = milli(upstream_ntu), milli(downstream_ntu)
    return (down_m - up_m) * E4_PER_MILLI > allowed_e4(pair, up_m)


def allowed_e4(pair: TurbidityPair, up_m: int) -> int:
    """``limit_ntu`` exactly, in 1e-4 NTU, for a background of ``up_m`` milli-NTU."""
    if pair.rule == "delta_ntu":
        return round(_delta_ntu(pair) * E4_PER_NTU)
    if up_m <= WA_BACKGROUND_NTU * MILLI_PER_NTU:
        return WA_DELTA_NTU * E4_PER_NTU
    # 10 % of up_m milli-NTU is up_m tenths of a milli-NTU.
    return up_m * E4_PER_MILLI * WA_PERCENT // 100


def _delta_ntu(pair: TurbidityPair) -> float:
    if pair.delta_ntu is None:  # the configuration validator rules this out
        raise ValueError(f"pair {pair.id}: rule delta_ntu needs delta_ntu")
    return pair.delta_ntu


def milli(ntu: float) -> int:
    """NTU as integer milli-NTU (the fold's unit)."""
    return round(ntu * MILLI_PER_NTU)


def ntu_of(milli_ntu: int) -> float:
    """Milli-NTU as NTU, to the milli-NTU."""
    return round(milli_ntu / MILLI_PER_NTU, 3)
