"""Rows of a CSV file in the replay format: a logger's card, or a test's readings.

The file has a header with ``ts`` and the sensor's fields (``tips_total`` or
``precip_in`` for rain, ``ntu`` and ``temp_c`` for turbidity, ``depth_in`` or
``distance_in`` for sediment, ``battery_v`` for any). A full replay file
(``ts,site,sensor,...``, README.md, "Commands") works too: rows of other sensors are
skipped. ``ts`` is ISO 8601 with an offset or Unix seconds; empty cells are
absent fields. A quoted cell may not span lines.

Each row becomes one reading at its own ``ts``. A rain gauge's file may be a
logger's per-tip export instead: a ``tips`` column (1 per row, any whole
number in general, 0 a heartbeat), or no counter or depth column at all (each
row of the sensor is one tip). A tip is a ``Sample(tips=n)``, which the node
adds to its persistent ``tips_total``, as it does the ``gpio`` driver's. A tip
that follows the last counted one by ``debounce_s`` [1.0] or less is a double
tip (the bucket bouncing, 4-14 % of the tips of real per-tip records): not
counted, counted as ``discarded`` and logged (``counter.is_double_tip``; the
last counted tip's time is part of the driver state, so a restart keeps it).

``speed: max`` emits rows as
fast as the buffer commits them (200 per transaction); ``realtime`` keeps the
gaps between rows' timestamps, a number divides them (10: ten times faster).

How far it got survives restarts: every sample carries the byte offset after
its row as driver state, and the node commits that state in the same
transaction as the reading, so after a SIGKILL the next row read is exactly
the first one not committed, never one twice with a new ``seq``. The state
also names the last line's length and hash: if the file was replaced
meanwhile, the driver starts again from its first row (and says so).

A row of this sensor that cannot be read (bad ``ts``, a field that is not a
number, NaN, a negative value) is skipped and counted as ``discarded``. At the
end of the file the driver looks for appended rows once a minute; a last line
without a line break is read as a row, so append whole lines only.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

from ..config import CsvSensor
from ..counter import is_double_tip
from ..fields import FIELDS_BY_KIND
from .base import Driver, Sample

log = logging.getLogger(__name__)

#: Rows committed in one transaction at ``speed: max``.
BATCH_ROWS: Final = 200
#: Seconds between looks for appended rows at the end of the file.
EOF_POLL_S: Final = 60.0
#: The column of a per-tip export, and the seconds between log lines of double tips.
TIPS: Final = "tips"
LOG_DOUBLES_S: Final = 60.0


class CsvFormatError(ValueError):
    """The file cannot be replayed for this sensor (no ``ts``, none of its fields)."""


def parse_ts_ms(cell: str) -> int | None:
    """``ts`` of the replay format in Unix ms; None when unreadable or without an offset."""
    text = cell.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
        return None if dt.tzinfo is None else round(dt.timestamp() * 1000)
    return round(seconds * 1000) if math.isfinite(seconds) and seconds >= 0 else None


def _digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()[:16]


class CsvReplay(Driver):
    own_timestamps = True

    def __init__(self, config: CsvSensor, sensor_id: str,
                 monotonic: Callable[[], float] = time.monotonic, site: str | None = None
                 ) -> None:
        self.path = config.file
        self.sensor_id = sensor_id
        self.site_id = site
        self.kind = config.kind
        self.factor = (None if config.speed == "max" else
                       1.0 if config.speed == "realtime" else float(config.speed))
        self._monotonic = monotonic
        self._file = open(self.path, "rb")  # noqa: SIM115 - kept open across reads
        header = self._file.readline()
        names = [c.strip() for c in next(csv.reader([header.decode("utf-8-sig")]), [])]
        if "ts" not in names:
            raise CsvFormatError(f"{self.path}: no ts column in the header")
        self._ts = names.index("ts")
        self._sensor = names.index("sensor") if "sensor" in names else None
        # A replay file of several sites may use one sensor id at each.
        self._site = names.index("site") if "site" in names and site is not None else None
        self._fields = {i: n for i, n in enumerate(names) if n in FIELDS_BY_KIND[self.kind]}
        self._tips = self._per_tip_column(names)
        self.debounce_s = config.debounce_s
        self._last_tip_ms: int | None = None
        self._doubles = self._doubles_logged = 0
        self._logged_s = -math.inf
        if not self._fields and self._tips is None:
            raise CsvFormatError(f"{self.path}: none of the columns "
                                 f"{', '.join(sorted(FIELDS_BY_KIND[self.kind]))} of a "
                                 f"{self.kind} sensor")
        self._start = self._offset = len(header)
        self._last_line = header
        self._next: tuple[int, Sample] | None = None  # the row read ahead: (end offset, sample)
        self._base: tuple[float, int] | None = None  # (monotonic s, ts ms) of pacing's origin

    def _per_tip_column(self, names: list[str]) -> int | None:
        """For a per-tip file of a rain gauge, the ``tips`` column (-1: none, each row is a
        tip); None for a file of counters or depths (or of another kind's fields)."""
        if self.kind != "rain":
            return None
        if TIPS in names:
            return names.index(TIPS)
        rain = FIELDS_BY_KIND["rain"] - {"battery_v"}
        others = set().union(*FIELDS_BY_KIND.values()) - FIELDS_BY_KIND["rain"]
        if rain & set(names) or (others & set(names) and self._sensor is None):
            return None
        return -1

    # ------------------------------------------------------------------ state

    def _state(self, line: bytes, end: int) -> str:
        saved: dict[str, object] = {"offset": end, "last_len": len(line),
                                    "last_sha": _digest(line)}
        if self._last_tip_ms is not None:
            saved["last_tip_ms"] = self._last_tip_ms
        return json.dumps(saved)

    def restore(self, state: str | None) -> None:
        if state is None:
            return
        saved = json.loads(state)
        offset, length = int(saved["offset"]), int(saved["last_len"])
        self._file.seek(max(offset - length, 0))
        line = self._file.read(length)
        if offset - length >= 0 and _digest(line) == saved["last_sha"]:
            self._offset = offset
            self._last_tip_ms = saved.get("last_tip_ms")
        else:
            log.warning("%s: %s changed since the last run; replaying it from its first row",
                        self.sensor_id, self.path)
            self._offset = self._start
        self._file.seek(self._offset)

    # ------------------------------------------------------------------ rows

    def _row(self, line: bytes, end: int) -> Sample | None:
        """The sample of one line: None for a line of another sensor or a blank one."""
        state = self._state(line, end)
        try:
            cells = next(csv.reader([line.decode("utf-8")]), [])
        except (UnicodeDecodeError, csv.Error):
            return Sample(discarded=1, state=state)
        if not any(c.strip() for c in cells):
            return None
        for column, wanted in ((self._sensor, self.sensor_id), (self._site, self.site_id)):
            if column is not None and (len(cells) <= column or cells[column].strip() != wanted):
                return None
        ts_ms = parse_ts_ms(cells[self._ts]) if len(cells) > self._ts else None
        # A bad row keeps its time when it has one, so pacing does not rush past it.
        bad = Sample(ts_ms=ts_ms, discarded=1, state=state)
        if self._tips is not None:
            return self._tip(cells, ts_ms, line, end) or bad
        fields: dict[str, float] = {}
        counter: int | None = None
        for i, name in self._fields.items():
            cell = cells[i].strip() if i < len(cells) else ""
            if not cell:
                continue
            try:
                value = float(cell)
            except ValueError:
                return bad
            if not math.isfinite(value) or (value < 0 and name != "temp_c"):
                return bad
            if name == "tips_total":
                if not value.is_integer():
                    return bad
                counter = int(value)
            else:
                fields[name] = value
        if ts_ms is None or (counter is None and not fields):
            return bad
        return Sample(fields=fields, ts_ms=ts_ms, counter=counter, state=state)

    def _tip(self, cells: list[str], ts_ms: int | None, line: bytes, end: int) -> Sample | None:
        """The sample of a per-tip row; None for a bad one."""
        column = -1 if self._tips is None else self._tips
        cell = cells[column].strip() if 0 <= column < len(cells) else ""
        try:
            tips = int(cell) if cell else 1
            battery = self._battery(cells)
        except ValueError:
            return None
        if ts_ms is None or tips < 0:
            return None
        fields = {} if battery is None else {"battery_v": battery}
        if tips and is_double_tip(self._last_tip_ms, ts_ms, self.debounce_s):
            tips -= 1
            self._doubles += 1
            if not tips:
                return Sample(ts_ms=ts_ms, discarded=1, state=self._state(line, end))
        if tips:
            self._last_tip_ms = ts_ms
        return Sample(fields=fields, ts_ms=ts_ms, tips=tips, state=self._state(line, end))

    def _battery(self, cells: list[str]) -> float | None:
        """``battery_v`` of a per-tip row, None when absent; ``ValueError`` when it is no
        voltage."""
        for i, name in self._fields.items():
            cell = cells[i].strip() if i < len(cells) else ""
            if name == "battery_v" and cell:
                value = float(cell)
                if not math.isfinite(value) or value < 0:
                    raise ValueError(cell)
                return value
        return None

    def _log_doubles(self) -> None:
        now_s = self._monotonic()
        if self._doubles > self._doubles_logged and now_s - self._logged_s >= LOG_DOUBLES_S:
            log.info("%s: %d double tip(s) dropped, each %g s or less after the tip before "
                     "(debounce_s); %d since start", self.sensor_id,
                     self._doubles - self._doubles_logged, self.debounce_s, self._doubles)
            self._doubles_logged, self._logged_s = self._doubles, now_s

    def _peek(self) -> tuple[int, Sample] | None:
        """The next row of this sensor (read ahead, not consumed); None at the end."""
        while self._next is None:
            line = self._file.readline()
            if not line:
                return None
            end = self._offset + len(line)
            sample = self._row(line, end)
            self._offset = end
            if sample is not None:
                self._next = (end, sample)
        return self._next

    def _due_in_s(self, sample: Sample) -> float:
        if self.factor is None or self._base is None or sample.ts_ms is None:
            return 0.0
        base_s, base_ms = self._base
        return base_s + (sample.ts_ms - base_ms) / 1000 / self.factor - self._monotonic()

    def read(self) -> Sequence[Sample]:
        out: list[Sample] = []
        while len(out) < BATCH_ROWS:
            ahead = self._peek()
            if ahead is None or self._due_in_s(ahead[1]) > 0:
                break
            sample = ahead[1]
            self._next = None
            if self._base is None and sample.ts_ms is not None:
                self._base = (self._monotonic(), sample.ts_ms)
            out.append(sample)
        self._log_doubles()
        return out

    def wait_s(self) -> float:
        ahead = self._peek()
        if ahead is None:
            return EOF_POLL_S
        return max(self._due_in_s(ahead[1]), 0.0)

    def close(self) -> None:
        self._file.close()
