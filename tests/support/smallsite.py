"""The small sites of the command-line tests, as configuration files.

``SMALL``: one gauge and a turbidity pair, and ``storm_csv()`` a storm of its gauge as a
replay file; ``write_site``: one gauge in New York, with more lines where a test says.
"""

from __future__ import annotations

from pathlib import Path

from .util import SITE


def write_config(tmp_path: Path, body: str) -> Path:
    """``body`` as ``site.yaml`` in ``tmp_path``."""
    path = tmp_path / "site.yaml"
    path.write_text(body)
    return path


SMALL = """\
state_dir: {state}
sites:
  - id: branch-meadows
    timezone: America/New_York
    condition: B
    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
      - {{id: tb-up, kind: turbidity}}
      - {{id: tb-down, kind: turbidity}}
    turbidity_pairs: [{{id: outfall-1, upstream: tb-up, downstream: tb-down}}]
"""


def storm_csv() -> str:
    """A replay file: 0.60 in on rg1 between 01:00 and 02:00 UTC, an inspection at noon."""
    rows = ["ts,site,sensor,tips_total,ntu,inspector"]
    tips = 0
    for m in range(0, 18 * 60):
        if 60 <= m < 120:
            tips += 1  # 0.60 in between 01:00 and 02:00 UTC
        rows.append(f"{1777593600 + m * 60},branch-meadows,rg1,{tips},,")
    rows.append("2026-05-01T12:00:00Z,branch-meadows,inspection,,,J. Rivera")
    return "\n".join(rows) + "\n"


#: One gauge in New York; ``{extra}`` are more lines of the site.
ONE_GAUGE = """\
state_dir: {state}
sites:
  - id: {site}
    timezone: America/New_York
    condition: B
{extra}    sensors:
      - {{id: rg1, kind: rain, in_per_tip: 0.01}}
"""


def write_site(tmp_path: Path, extra: str = "") -> Path:
    """A configuration file of the one site in New York, ``extra`` its more lines."""
    cfg = tmp_path / "site.yaml"
    cfg.write_text(ONE_GAUGE.format(state=tmp_path / "state", site=SITE, extra=extra))
    return cfg
