"""A replay file read whole ("A file is not a stream", monitor/README.md): the one reader
of ``replay`` and ``backtest``.

Theory of operation
-------------------
A daemon meets its readings one at a time, and to bound its memory it refuses
what comes later than its lateness bound (``too_old``). A file is there whole,
and the order of its rows is an accident of the export (a logger's newest-first
download, a spreadsheet sorted by sensor). So a file is read in three steps:

1. **Each row by the one row rule** (``RowParser``, ``PerTipRows``: the rules
   of ``ingest/checks.py``, the MQTT payload's), with every reason a message can be
   refused for but ``too_old``. The future bound is the daemon's: a row later
   than the wall clock at the time of the run (``now_ms``: the command passes
   it, the rules read no clock) plus 5 minutes is ``future_timestamp`` (an
   inspection's ``future``), so a typo'd year is refused alone instead of
   making every row after it "too old". A time without an offset is
   ``no_timezone`` unless ``zone`` (``--timezone``) says how to read it.
2. **Event-time order.** The rows taken are put in time order (a stable sort).
3. **The rules that look back** run in that order, per sensor: a per-tip row
   within ``debounce_s`` of the gauge's previous counted tip is a double tip
   (``PerTipRows.debounce``); a ``seq`` that named another body at an earlier
   time is a ``seq_conflict`` (``admission.SeqBook``: the earlier body
   stands). Rows of one sensor at one instant, which no time orders, are taken
   in the order of their content, so every order of a file's rows gives the
   same inputs, and the engine (order-free for what it takes) the same events.

What comes out (``FileRows``): the inputs in event-time order, for ``replay``'s
engine or ``backtest``'s columns; the rows read; the rejections by reason, the
first few as lines naming their row of the file; the per-tip counts.

Cost: the parsed rows are held until the end (measured: 115 to 175 bytes a
row more than a stream, a ``Reading`` each; a site-year of one-minute readings,
525 600 rows, some 90 MB; ten of them 1.26 GB against 0.33 GB) and sorted by
Python's own sort, which takes a file already in order in one pass (0.1 s for
864 000 rows). ``replay --arrival-order``
streams instead, under the daemon's lateness rule (``FileReader`` with a
reference per site), to compare a file with a daemon.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import IO, Final

from ..config import Config
from ..contract.admission import SeqBook, fingerprint
from ..contract.inputs import Inspection, Reading
from ..contract.rejects import Rejection, RejectReason
from ..ingest.checks import NaiveZone
from .csvfile import RowParser, check_header, csv_rows
from .pertip import PerTipRows

#: Rejections kept as lines (``first``): enough to see what went wrong, not a log.
FIRST_KEPT: Final = 20
#: What a book calls the earlier body of a ``seq_conflict`` when the file is read whole.
EARLIER_IN_TIME: Final = "at an earlier time in the file"

Input = Reading | Inspection
_NO_REFS: Final[Mapping[str, int]] = {}
_ts = attrgetter("ts_ms")


@dataclass
class Rejects:
    """Rejected rows, counted by reason; the first ``FIRST_KEPT`` kept as lines."""

    counts: Counter[str] = field(default_factory=Counter)
    _first: list[tuple[int, str]] = field(default_factory=list)

    def add(self, line: int, reason: str, detail: str) -> None:
        self.counts[reason] += 1
        if len(self._first) < FIRST_KEPT:
            self._first.append((line, f"row {line}: {reason}: {detail}"))

    @property
    def first(self) -> list[str]:
        """The lines kept, in the file's order."""
        return [text for _, text in sorted(self._first)]

    def summary(self, rows: int) -> str:
        """``1442 rows, 2 rejected (seq_conflict 1, too_old 1)``."""
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return f"{rows} rows, {sum(self.counts.values())} rejected ({reasons})"


class FileReader:
    """The row rules of one file: a row into an input (``parse``), and what looks back at
    the inputs before it (``look_back``). ``earlier`` names the body a ``seq_conflict``
    meets (``SeqBook``)."""

    def __init__(self, config: Config, header: list[str], *, now_ms: int | None,
                 zone: NaiveZone, earlier: str = EARLIER_IN_TIME) -> None:
        self.parser = RowParser(config, header, now_ms=now_ms, zone=zone)
        self.per_tip = PerTipRows(config, header)
        self.rejects = Rejects()
        self.book = SeqBook(earlier=earlier)
        self._whole = self.parser.rule(None)

    def parse(self, line: int, cells: list[str], refs: Mapping[str, int] = _NO_REFS
              ) -> tuple[Input, int] | None:
        """The input of a row and its tips (0 for any but a per-tip row), or None when
        it is rejected (counted). ``refs``: each site's lateness reference (none: a file
        read whole)."""
        tips = None
        if self.per_tip.possible:
            rule = self._whole
            if refs:
                at = self.parser.site_at
                rule = self.parser.rule(refs.get(cells[at].strip() if at < len(cells) else ""))
            tips = self.per_tip.parse(cells, rule)
        item, count = tips if tips is not None else (self.parser.parse(cells, refs=refs), 0)
        if isinstance(item, Rejection):
            self.rejects.add(line, item.reason.value, item.detail)
            return None
        return item, count

    def look_back(self, line: int, item: Input, tips: int) -> Input | None:
        """``item`` after the rules that look back (module docstring, 3), or None: a
        double tip (counted by ``per_tip``) or a ``seq_conflict`` (counted here)."""
        if tips and isinstance(item, Reading):
            kept = self.per_tip.debounce(item, tips)
            if kept is None:
                return None
            item = kept
        if isinstance(item, Reading) and item.seq is not None and item.kind != "status":
            conflict = self.book.judge((item.seq, item.site, item.sensor), fingerprint(item))
            if conflict is not None:
                self.rejects.add(line, RejectReason.seq_conflict.value, conflict)
                return None
        return item


@dataclass
class FileRows:
    """A file read whole: its inputs in event-time order, and what was not taken."""

    inputs: list[Input]
    rows: int
    rejects: Rejects
    per_tip: PerTipRows


def header_and_rows(source: str | Path | IO[str]) -> tuple[list[str], Iterator[list[str]]]:
    """The checked header of a replay CSV and an iterator over its other rows."""
    rows = csv_rows(source)
    return check_header(next(rows, [])), rows


def read_whole(config: Config, source: str | Path | IO[str], *, now_ms: int | None,
               zone: NaiveZone = None, progress: Callable[[str], None] | None = None
               ) -> FileRows:
    """Every row of a replay CSV through the row rules, in event-time order (module
    docstring). ``now_ms``: the wall clock at the time of the run (None: no future
    bound); ``zone``: how a time without an offset is read; ``progress`` is told how
    far the reading is."""
    header, rows = header_and_rows(source)
    reader = FileReader(config, header, now_ms=now_ms, zone=zone)
    taken: list[Input | None] = []
    # The rows a look-back rule sees (per-tip rows, rows with a seq): where they are in
    # ``taken``, their line in the file, their tips.
    back, back_lines, back_tips = array("q"), array("q"), array("q")
    n = 0
    for n, cells in enumerate(rows, 1):
        if progress is not None and n % 50_000 == 0:
            progress(f"{n:,} rows read")
        parsed = reader.parse(n + 1, cells)
        if parsed is None:
            continue
        item, count = parsed
        if count or (isinstance(item, Reading) and item.seq is not None):
            back.append(len(taken))
            back_lines.append(n + 1)
            back_tips.append(count)
        taken.append(item)
    for j in _in_event_order(taken, back):
        before = taken[back[j]]
        assert before is not None
        taken[back[j]] = reader.look_back(back_lines[j], before, back_tips[j])
    inputs = [item for item in taken if item is not None]
    del taken
    inputs.sort(key=_ts)
    return FileRows(inputs, n, reader.rejects, reader.per_tip)


def _in_event_order(taken: list[Input | None], back: array[int]) -> list[int]:
    """The positions in ``back`` (indices into ``taken``) ordered by time, then sensor; the
    rows of one sensor at one instant by their content (``repr``: every field), whatever
    their order in the file."""
    def key(j: int) -> tuple[int, str, str]:
        item = taken[back[j]]
        assert isinstance(item, Reading)
        return item.ts_ms, item.site, item.sensor

    order = sorted(range(len(back)), key=key)
    start = 0
    for end in range(1, len(order) + 1):
        if end == len(order) or key(order[end]) != key(order[start]):
            if end - start > 1:
                order[start:end] = sorted(order[start:end], key=lambda j: repr(taken[back[j]]))
            start = end
    return order
