"""Rows of a CSV file in the replay format: a logger's card, or a test's readings.

The file has a header with ``ts`` and the sensor's fields (``tips_total`` or
``precip_in`` for rain, ``ntu`` and ``temp_c`` for turbidity, ``depth_in`` or
``distance_in`` for sediment, ``battery_v`` for any). A full replay file
(``ts,site,sensor,...``, DESIGN § 6) works too: rows of other sensors are
skipped. ``ts`` is ISO 8601 with an offset or Unix seconds; empty cells are
absent fields. A quoted cell may not span lines.

Each row becomes one reading at its own ``ts``. ``speed: max`` emits rows as
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
from ..fields import FIELDS_BY_KIND
from .base import Driver, Sample

log = logging.getLogger(__name__)

#: Rows committed in one transaction at ``speed: max``.
BATCH_ROWS: Final = 200
#: Seconds between looks for appended rows at the end of the file.
EOF_POLL_S: Final = 60.0


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
        if not self._fields:
            raise CsvFormatError(f"{self.path}: none of the columns "
                                 f"{', '.join(sorted(FIELDS_BY_KIND[self.kind]))} of a "
                                 f"{self.kind} sensor")
        self._start = self._offset = len(header)
        self._last_line = header
        self._next: tuple[int, Sample] | None = None  # the row read ahead: (end offset, sample)
        self._base: tuple[float, int] | None = None  # (monotonic s, ts ms) of pacing's origin

    # ------------------------------------------------------------------ state

    def _state(self, line: bytes, end: int) -> str:
        return json.dumps({"offset": end, "last_len": len(line), "last_sha": _digest(line)})

    def restore(self, state: str | None) -> None:
        if state is None:
            return
        saved = json.loads(state)
        offset, length = int(saved["offset"]), int(saved["last_len"])
        self._file.seek(max(offset - length, 0))
        line = self._file.read(length)
        if offset - length >= 0 and _digest(line) == saved["last_sha"]:
            self._offset = offset
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
        return out

    def wait_s(self) -> float:
        ahead = self._peek()
        if ahead is None:
            return EOF_POLL_S
        return max(self._due_in_s(ahead[1]), 0.0)

    def close(self) -> None:
        self._file.close()
