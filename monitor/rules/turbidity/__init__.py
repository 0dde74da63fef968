"""The turbidity family: the contrast of each upstream/downstream pair (§ 134-8C).

``turbidity.py`` is the fold of one pair, ``contrast.py`` the allowed
contrast, ``unmonitored.py`` the notices while a pair's contrast is unknown.
(The episodes the report reads, ``engine/episodes.py``, stay in the engine: they
read the engine's series.) Timelines ``pair:<id>``; a ``turbidity`` reading
goes to the pairs its probe belongs to.
"""

from __future__ import annotations

from typing import Final

from ...config import SensorConfig, SiteConfig
from ..family import Family, FoldInputs, PayloadField, SensorKindSpec
from .turbidity import PairFold

TURBIDITY = SensorKindSpec(
    fields=(
        PayloadField("ntu", False, 0, 100_000.0,
                     "turbidity in NTU; probes top out at a few thousand"),
        PayloadField("temp_c", False, -60.0, 90.0, "water temperature at the probe in °C"),
    ),
    required=(("ntu",),),
    words="turbidity contrast cannot be checked without this probe (§ 134-8C)",
    measurement="turbidity", noun="turbidity probe(s)",
    counted_when_absent=True)


def folds(site: SiteConfig) -> dict[str, FoldInputs]:
    """One fold per pair, reading both of its probes."""
    found: dict[str, FoldInputs] = {}
    for pair in site.turbidity_pairs:
        up, down = site.sensor(pair.upstream), site.sensor(pair.downstream)
        assert up is not None and down is not None
        found[f"pair:{pair.id}"] = (PairFold(site.id, pair, up, down),
                                    (pair.upstream, pair.downstream), ())
    return found


def routes(site: SiteConfig, sensor: SensorConfig) -> tuple[str, ...]:
    return tuple(f"pair:{p.id}" for p in site.turbidity_pairs
                 if sensor.id in (p.upstream, p.downstream))


#: The default alert route of each of the family's event types (a variant as
#: ``type.variant``), [] = log book only (``sinks/notify/routing.py``).
ALERT_ROUTES: Final[dict[str, tuple[str, ...]]] = {
    "turbidity_contrast": ("qp",),
    "background_missing": ("ops",),
    "pegged": ("ops",),
    # Upstream far above downstream for hours: swapped probes hide every § 134-8C
    # exceedance (the contrast comes out negative), a plume at the upstream probe is
    # a site problem. Either way the qualified professional must look, and
    # operations check the probes.
    "probes_suspect": ("qp", "ops"),
    # § 134-8C cannot be checked: the background probe dead, the downstream
    # one silent or pegged for unknown_notice_hours. Operations fix the probe; the
    # qualified professional must look at the water meanwhile, and both hear when the
    # contrast is known again.
    "turbidity_unmonitored": ("qp", "ops"),
    "turbidity_monitored": ("qp", "ops"),
}


FAMILY = Family(
    name="turbidity", group="pair", kinds={"turbidity": TURBIDITY},
    events=("turbidity_contrast", "background_missing", "pegged", "probes_suspect",
            "turbidity_unmonitored", "turbidity_monitored"),
    folds=folds, routes=routes,
    alert_routes=ALERT_ROUTES)
