"""Per-tip logger exports in tests.

A storm whose bucket bounces (double tips 1 s after a tip), as a replay file and as a
logger's card, and the one-gauge site that reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.contract.times import MS_PER_MINUTE, iso, parse_iso

SITE = "branch-meadows"

T0 = parse_iso("2026-05-01T12:00:00Z")

MIN = MS_PER_MINUTE


def doc(**gauge: Any) -> dict[str, Any]:
    return {"state_dir": "/tmp/stormwatch-test", "sites": [{
        "id": SITE, "timezone": "UTC", "condition": "B",
        "sensors": [{"id": "rg1", "kind": "rain", "in_per_tip": 0.01,
                     "reporting": "on_tip", **gauge},
                    {"id": "tb-up", "kind": "turbidity"}]}]}


def bouncing_storm() -> list[int]:
    """45 tips (0.45 in) 2 minutes apart from 12:00; the 1st, 6th, 11th ... 26th (6 of
    them) each followed 1 s later by a double tip; one more tip 2 s after the last."""
    tips = []
    for k in range(45):
        t = T0 + k * 2 * MIN
        tips.append(t)
        if k % 5 == 0 and k <= 25:
            tips.append(t + 1000)
    tips.append(T0 + 44 * 2 * MIN + 2000)  # 2 s: a real tip (46 in all)
    return tips


def per_tip_csv(path: Path, tips: list[int], *, column: bool = True) -> Path:
    """A replay file of the tips and a turbidity row: with a ``tips`` column of 1, or
    with no rain column at all (each rain row is a tip)."""
    if column:
        rows = ["ts,site,sensor,tips,ntu"] + [f"{iso(t)},{SITE},rg1,1," for t in tips]
        rows.append(f"{iso(T0)},{SITE},tb-up,,3.5")
    else:
        rows = ["ts,site,sensor,ntu"] + [f"{iso(t)},{SITE},rg1," for t in tips]
        rows.append(f"{iso(T0)},{SITE},tb-up,3.5")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def card(tmp_path: Path, tips: list[int]) -> Path:
    path = tmp_path / "card.csv"
    path.write_text("ts,tips\n" + "".join(f"{iso(t)},1\n" for t in tips), encoding="utf-8")
    return path
