"""Per-tip logger exports for ``replay`` (monitor/README.md, "Per-tip input"): a row per tip.

Many loggers record rain as one row per bucket tip, not as a counter: a
``tips`` column of 1 (a number of tips, in general), or rain rows in a file
that has neither a ``tips_total`` nor a ``precip_in`` column (a row with an
empty ``tips`` cell is then one tip). Such a row becomes a reading of
``precip_in = tips × in_per_tip`` at its own time, checked by the very rules
of a replay row (``csvfile.parse_row``: its time, its battery), so it is
rejected for the same reasons. A row with ``tips`` 0 is a heartbeat (a logger
that also writes a row per quiet interval).

Double tips. A bucket that rocks back onto its magnet tips twice within about
a second; real per-tip records hold 4–14 % such doubles, and counted they
make storms that did not happen qualify. A tip that follows the previous
*counted* tip of its gauge within the gauge's ``debounce_s`` [1.0] (``≤``:
records have one-second resolution, and a double tip is written 1 s after its
first) is dropped and counted per gauge (``replay`` and ``backtest`` print the
count on stderr). "Previous" is in event time (``filerows.py`` puts a file's
rows in that order before ``debounce`` sees them; ``replay --arrival-order``
in the file's), as a logger writes; the node's ``csv`` driver applies the same
rule to the same rows (``sensors/counter.py``, ``is_double_tip``: the two are
tested to agree), and its ``gpio`` driver the like with ``min_tip_interval_s``.

Per-tip rows of a gauge with ``reporting: interval`` are read all the same,
and named (``interval_gauges``): such a logger is silent while it is dry, and
read as ``interval`` every dry spell is a silence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..config import Config
from ..contract.inputs import Inspection, Reading
from ..contract.rejects import Rejection, RejectReason
from ..ingest.checks import TimeRule, show
from .csvfile import parse_row

#: The column of a per-tip export: tips of that row (1 for a row per tip).
TIPS = "tips"
#: The rain columns whose presence makes a row a counter or depth row, not a tip.
RAIN_FORMS = ("tips_total", "precip_in")


def is_double_tip(last_tip_ms: int | None, ts_ms: int, debounce_s: float) -> bool:
    """Whether a tip at ``ts_ms`` is the bounce of the counted tip at ``last_tip_ms``:
    it follows it by ``debounce_s`` or less (never when ``debounce_s`` is 0)."""
    return (last_tip_ms is not None and debounce_s > 0
            and 0 <= ts_ms - last_tip_ms <= round(debounce_s * 1000))


@dataclass(frozen=True, slots=True)
class _Gauge:
    in_per_tip: float
    debounce_s: float
    interval: bool


@dataclass
class PerTipRows:
    """The per-tip rows of one CSV: each turned into a reading, double tips dropped."""

    config: Config
    header: list[str]
    #: Tips dropped as double tips, and per-tip rows read, by (site, gauge).
    debounced: Counter[tuple[str, str]] = field(default_factory=Counter)
    rows: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: Gauges with ``reporting: interval`` that per-tip rows came for.
    interval_gauges: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._gauges = {(s.id, g.id): _Gauge(g.in_per_tip_value, g.debounce_s, not g.on_tip)
                        for s in self.config.sites for g in s.gauges()}
        self._at = {name: i for i, name in enumerate(self.header)}
        #: A file of counters or depths: a rain row is a tip only with a ``tips`` cell.
        self._counters = any(name in self._at for name in RAIN_FORMS)
        #: ... and without a ``tips`` column no row is one (most files: said at once).
        self.possible = not (self._counters and TIPS not in self._at)
        self._last: dict[tuple[str, str], int] = {}

    def parse(self, cells: list[str], when: TimeRule
              ) -> tuple[Reading | Inspection | Rejection, int] | None:
        """The reading of a per-tip row and its tips; None when the row is none (read it
        as a plain row). ``when``: what its time is judged against (``parse_row``).
        The reading still has to pass ``debounce``, in event time."""
        site, sensor = self._cell(cells, "site"), self._cell(cells, "sensor")
        gauge = self._gauges.get((site, sensor))
        if gauge is None:
            return None
        text = self._cell(cells, TIPS)
        if not text and self._counters:
            return None
        try:
            tips = int(text) if text else 1
        except ValueError:
            return Rejection(RejectReason.bad_value,
                             f"{TIPS}: {show(text)} is not a whole number of tips"), 0
        if tips < 0:
            return Rejection(RejectReason.negative_value, f"{TIPS}: {tips} is negative"), 0
        row = {name: cells[i] for name, i in self._at.items()
               if i < len(cells) and cells[i] and name != TIPS}
        row["precip_in"] = repr(tips * gauge.in_per_tip)
        item = parse_row(self.config, row, when=when)
        return item, tips if isinstance(item, Reading) else 0

    def debounce(self, item: Reading, tips: int) -> Reading | None:
        """``item`` (a per-tip row's reading of ``tips`` tips, rows in event time) with a
        double tip taken out (module docstring); None when it was one tip, and double."""
        if tips == 0:
            return item  # a heartbeat
        key = (item.site, item.sensor)
        gauge = self._gauges[key]
        self.rows[key] += 1
        if gauge.interval:
            self.interval_gauges.add(key)
        if is_double_tip(self._last.get(key), item.ts_ms, gauge.debounce_s):
            self.debounced[key] += 1
            if tips == 1:
                return None
            item = _with_depth(item, (tips - 1) * gauge.in_per_tip)
        self._last[key] = item.ts_ms
        return item

    def summary(self) -> list[str]:
        """What the per-tip rows came to, one line per gauge (stderr of ``replay``)."""
        lines = []
        for (site, sensor), n in sorted(self.rows.items()):
            lines.append(f"{site}/{sensor}: {n} per-tip row(s), {self.debounced[(site, sensor)]}"
                         f" double tip(s) dropped (debounce_s)")
            if (site, sensor) in self.interval_gauges:
                lines.append(f"{site}/{sensor}: per-tip rows for a gauge with reporting: "
                             "interval: its dry spells read as silences (set reporting: on_tip)")
        return lines

    def _cell(self, cells: list[str], name: str) -> str:
        i = self._at.get(name)
        return cells[i].strip() if i is not None and i < len(cells) else ""


def _with_depth(item: Reading, precip_in: float) -> Reading:
    return Reading(item.site, item.sensor, item.kind, item.ts_ms, precip_in=precip_in,
                   battery_v=item.battery_v)
