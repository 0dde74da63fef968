"""Replay CSV files (config/README.md): rows into engine inputs.

The science never parses files (pvlib keeps its readers apart, in ``iotools``):
this module reads the replay CSV for the two commands that take one.

``csv_rows``                     the rows of a file, of standard input or of an
                                 open text, as cells;
``parse_row`` and ``RowParser``  a row at a time, through the very rules of
                                 ``ingest/checks.py`` (the MQTT payload's), so a row is
                                 rejected for the same reason a message would
                                 be (``filerows.py`` reads a file whole with
                                 them, for ``replay`` and ``backtest``);
``check_header``, ``not_utf8``   what both commands refuse in a file, each as
                                 one line (``CsvInputError``).

Files are read as UTF-8, with or without the byte-order mark that Excel's
"CSV UTF-8" puts first (left in, it would be part of the first column's
name, ``\ufeffts``, and the header would lack ``ts``). A header naming a
column twice is refused: which of the two cells a row means cannot be known.

Replay parses ~500k rows per site-year; ``RowParser`` takes a plain row in
a few microseconds on a small 2-core machine.
"""

from __future__ import annotations

import csv
import io
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

from ..config import Config
from ..contract.inputs import Inspection, Reading
from ..contract.rejects import Rejection, RejectReason
from ..errors import UserError
from ..ingest.checks import (
    FIELD_RULES,
    FUTURE_TOLERANCE_MS,
    INSPECTION,
    REQUIRED,
    NaiveZone,
    SiteIndex,
    TimeRule,
    sensor_message,
    show,
    site_index,
    timestamp_ms,
)
from ..ingest.inspections import inspection_message

#: Columns every replay CSV has (README.md, "Commands").
REQUIRED_COLUMNS = ("ts", "site", "sensor")
#: Excel's "CSV UTF-8" starts the file with U+FEFF; ``utf-8-sig`` drops it.
ENCODING = "utf-8-sig"
BOM = "\ufeff"


class CsvInputError(UserError, ValueError):
    """The CSV file itself is unusable (unreadable, not UTF-8, a bad header)."""


def check_header(header: list[str]) -> list[str]:
    """The header row, with a leading byte-order mark dropped (a text source that
    was decoded as plain UTF-8 still has it), or ``CsvInputError``."""
    if header and header[0].startswith(BOM):
        header = [header[0][len(BOM):], *header[1:]]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise CsvInputError(f"CSV header lacks column(s): {', '.join(missing)}"
                            f" (found: {', '.join(header) or 'nothing'})")
    # Empty names (a spreadsheet's trailing commas) are columns nobody reads.
    repeated = [name for name, n in Counter(header).items() if n > 1 and name]
    if repeated:
        def columns(name: str) -> str:
            at = [str(i + 1) for i, h in enumerate(header) if h == name]
            return ", ".join(at[:-1]) + " and " + at[-1]

        where = "; ".join(f"{name} in columns {columns(name)}" for name in repeated)
        raise CsvInputError(f"CSV header names a column more than once ({where}): "
                            "keep one of each")
    return header


def not_utf8(path: str | Path) -> str:
    """Where the first byte that is not UTF-8 lies in a file, for a one-line error.

    The decoder's own position is within the chunk it was decoding, not the
    file, so the file is read again by lines (a newline byte is never part of
    a multi-byte UTF-8 character, so each line decodes on its own).
    """
    offset = 0
    try:
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return (f"not UTF-8 text: byte 0x{line[exc.start]:02x} at offset "
                            f"{offset + exc.start} (line {number}); save it as UTF-8 "
                            "(in Excel: CSV UTF-8)")
                offset += len(line)
    except OSError:
        pass
    return "not UTF-8 text; save it as UTF-8 (in Excel: CSV UTF-8)"


def csv_rows(source: str | Path | IO[str]) -> Iterator[list[str]]:
    """The rows of a replay CSV (``"-"``: standard input, as UTF-8 whatever the locale
    says), the header first, as ``csv.reader`` cells. A file that cannot be read or
    is not UTF-8 is ``CsvInputError``, raised where the reading stops: nothing of the
    file is to be reported on, whatever rows were read before it."""
    if not isinstance(source, str | Path):
        yield from csv.reader(source)
    elif str(source) == "-":
        handle = io.TextIOWrapper(sys.stdin.buffer, encoding=ENCODING, newline="")
        read = 0  # rows yielded, the header first
        try:
            for cells in csv.reader(handle):
                yield cells
                read += 1
        except UnicodeDecodeError:
            # The text layer decodes ahead of the reader: only a lower bound is known.
            raise CsvInputError(f"standard input: not UTF-8 text (past data row "
                                f"{max(read - 1, 0)}); save it as UTF-8 (in Excel: CSV UTF-8)"
                                ) from None
        finally:
            handle.detach()  # sys.stdin keeps its buffer
    else:
        try:
            with open(source, encoding=ENCODING, newline="") as handle:
                yield from csv.reader(handle)
        except OSError as exc:
            raise CsvInputError(f"{source}: cannot read ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise CsvInputError(f"{source}: {not_utf8(source)}") from None


# --------------------------------------------------------------------------- rows


def _cell_number(text: str, integer: bool) -> int | float | str:
    """A CSV cell as the number JSON would have carried; text that is none stays text.

    Leaving it as text lets the shared rules reject it (``bad_value``) in the
    same order as a JSON string would be, instead of a second set of checks here.
    """
    if integer:
        try:
            return int(text)
        except ValueError:
            pass
    try:
        number = float(text)
    except ValueError:
        return text
    # "12.0" for tips_total: the exporter or a spreadsheet wrote a float column.
    return int(number) if integer and number.is_integer() else number


def _cell_ts(text: str) -> float | str:
    # A cell cannot tell a number from a string: digits are Unix seconds, the
    # rest must be ISO 8601 (which always holds '-' or 'T', so never parses).
    try:
        return float(text)
    except ValueError:
        return text


def parse_row(config: Config, row: Mapping[str, str], *, when: TimeRule
              ) -> Reading | Inspection | Rejection:
    """One replay CSV row (README.md, "Commands") as an engine input, or why it is rejected.

    Columns ``ts,site,sensor`` and any payload field names of the MQTT contract; empty cells
    (and the ``None`` that ``csv.DictReader`` gives short rows) are absent
    fields. The sensor kind comes from the config. A row whose sensor is
    ``inspection`` (and not a configured sensor of that id) is an inspection;
    it needs ``inspector`` and, there being no receipt time, ``ts``.

    ``when`` says what its time is judged against (``rules.TimeRule``: a file
    read whole, the wall clock of the run and no lateness bound) and how a
    time without an offset is read.
    """
    site_id = (row.get("site") or "").strip()
    sensor_id = (row.get("sensor") or "").strip()
    if not site_id:
        return Rejection(RejectReason.missing_field, "site: required")
    if not sensor_id:
        return Rejection(RejectReason.missing_field, "sensor: required")
    site = site_index(config).get(site_id)
    if site is None:
        return Rejection(RejectReason.unknown_site, f"site: {show(site_id)} is not configured")

    fields: dict[str, object] = {}
    if sensor_id == INSPECTION and INSPECTION not in site.kinds:
        for key, text in row.items():
            if text and (text := text.strip()):
                fields[key] = _cell_ts(text) if key in ("ts", "entered_at") else text
        return inspection_message(site, fields, when, via="replay")

    kind = site.kinds.get(sensor_id)
    if kind is None:
        return Rejection(RejectReason.unknown_sensor,
                         f"sensor: {show(sensor_id)} is not configured for site {site.id}")
    for key, text in row.items():
        if not text:
            continue
        rule = FIELD_RULES.get(key)
        if rule is not None:
            text = text.strip()
            if text:
                fields[key] = _cell_number(text, rule.integer)
        elif key == "ts":
            text = text.strip()
            if text:
                fields["ts"] = _cell_ts(text)
    return sensor_message(site, sensor_id, kind, fields, when, require_seq=False)


class RowParser:
    """``parse_row`` for the rows of one CSV, with a fast path for plain rows.

    A replay reads millions of rows, nearly all alike: a configured sensor,
    numbers in the columns of its kind, a time. Such a row is checked here
    without the general path's dicts and lookups, with the same rules
    (``FIELD_RULES``, ``missing_field``, ``timestamp_ms``, ``time_window``)
    and to the same ``Reading``; a row's time text is parsed once for every
    row that repeats it (all gauges of one minute). Anything else (an
    inspection, an unknown sensor, a cell that is not a plain number, a value a
    rule refuses) goes to ``parse_row`` itself, so every rejection and its
    reason are exactly that function's.

    ``now_ms`` is the wall clock at the time of the run (None: no future
    bound) and ``zone`` how a time without an offset is read (``TimeRule``).
    """

    def __init__(self, config: Config, header: list[str], *, now_ms: int | None = None,
                 zone: NaiveZone = None) -> None:
        self.config = config
        self.header = header
        self.now_ms = now_ms
        self.zone = zone
        self.ts_at = header.index("ts")
        self.site_at = header.index("site")
        self.sensor_at = header.index("sensor")
        self.fields = [(i, FIELD_RULES[name]) for i, name in enumerate(header)
                       if name in FIELD_RULES]
        self.sites = site_index(config)
        # Each sensor's id as the configuration spells it (one string for all its
        # rows: a file read whole holds them all) and its kind.
        self._sensors = {site: {sid: (sid, kind) for sid, kind in index.kinds.items()}
                         for site, index in self.sites.items()}
        # The fields one of which makes a row of a kind complete (``missing_field``: a
        # file's ``precip_in`` needs no ``seq``; none for a status).
        self._suffices = {kind: frozenset(form[0] for form in forms
                                          if len(form) == 1 or form[0] == "precip_in")
                          for kind, forms in REQUIRED.items()}
        self._ts_key: tuple[str, ZoneInfo | None] | None = None
        self._ts_ms: int | Rejection = 0

    def rule(self, late_ref_ms: int | None) -> TimeRule:
        return TimeRule(self.now_ms, late_ref_ms, self.zone)

    def parse(self, cells: list[str], *, refs: Mapping[str, int]
              ) -> Reading | Inspection | Rejection:
        """One row (the cells of ``csv.reader``) as ``parse_row`` would take it, with
        the lateness bound against its site's reference in ``refs`` (none for a file
        read whole; in arrival order, the site's newest row so far,
        ``admission.SiteNewest``)."""
        fast = self._fast(cells, refs)
        if fast is not None:
            return fast
        row = {name: cell for name, cell in zip(self.header, cells, strict=False) if cell}
        return parse_row(self.config, row,
                         when=self.rule(refs.get((row.get("site") or "").strip())))

    def _fast(self, cells: list[str], refs: Mapping[str, int]) -> Reading | None:
        if len(cells) != len(self.header):
            return None
        site = self.sites.get(cells[self.site_at])
        if site is None:
            return None
        known = self._sensors[site.id].get(cells[self.sensor_at])
        if known is None:
            return None
        sensor, kind = known
        values: dict[str, int | float] = {}
        for i, rule in self.fields:
            text = cells[i]
            if not text:
                continue
            if rule.implies is not None and rule.implies != kind:
                return None
            try:
                value: int | float = int(text) if rule.integer else float(text)
            except ValueError:
                return None
            if not (rule.low <= value <= rule.high) or value != value:
                return None
            values[rule.name] = value
        needs = self._suffices[kind]
        if needs and needs.isdisjoint(values):
            return None
        ts_ms = self._time(cells[self.ts_at], site)
        if ts_ms is None:
            return None
        # Outside the time window (rare): ``parse_row`` says why, as for any refusal.
        if self.now_ms is not None and ts_ms > self.now_ms + FUTURE_TOLERANCE_MS:
            return None
        ref_ms = refs.get(site.id)
        if ref_ms is not None and ts_ms < ref_ms - site.lateness_ms:
            return None
        return Reading(site=site.id, sensor=sensor, kind=kind, ts_ms=ts_ms,
                       **values)  # type: ignore[arg-type]  # keys are FIELD_RULES names

    def _time(self, ts_text: str, site: SiteIndex) -> int | None:
        """A plain row's time in ms (the last text's, again), None for the general path."""
        zone = site.zone if self.zone == "site" else self.zone
        if (ts_text, zone) != self._ts_key:
            if not ts_text or ts_text != ts_text.strip():
                return None
            self._ts_key, self._ts_ms = (ts_text, zone), timestamp_ms(_cell_ts(ts_text), zone)
        ts_ms = self._ts_ms
        return None if isinstance(ts_ms, Rejection) else ts_ms
