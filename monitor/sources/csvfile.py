"""Replay CSV files (DESIGN § 6): rows into engine inputs, and columns into frames.

The science never parses files (pvlib keeps its readers apart, in ``iotools``):
this module reads the replay CSV for the two commands that take one.

``parse_row`` and ``RowParser``  a row at a time, for ``stormwatch replay``,
                                 through the very rules of ``models.py`` (the
                                 MQTT payload's), so a row is rejected for
                                 the same reason a message would be;
``backtest_csv``                 the whole file at once as columns, for the
                                 vectorised ``stormwatch backtest``;
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
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..config import Config, SiteConfig
from ..contract.inputs import Inspection, Reading
from ..contract.rejects import Rejection, RejectReason
from ..contract.times import iso
from ..engine.rain_columns import empty_events, storm_events
from ..errors import UserError
from .inspectionrules import inspection_message
from .rules import (
    FIELD_RULES,
    INSPECTION,
    missing_field,
    sensor_message,
    show,
    site_index,
    time_window,
    timestamp_ms,
)

#: Columns every replay CSV has (DESIGN § 6).
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


def read_header(path: str | Path) -> list[str]:
    """The checked header of a CSV file (``check_header``), or ``CsvInputError``
    for a file that cannot be read."""
    try:
        with open(path, encoding=ENCODING, newline="") as handle:
            return check_header(next(csv.reader(handle), []))
    except OSError as exc:
        raise CsvInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise CsvInputError(f"{path}: {not_utf8(path)}") from None


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


def parse_row(config: Config, row: Mapping[str, str], *, ref_ms: int | None,
              check_future: bool = True) -> Reading | Inspection | Rejection:
    """One replay CSV row (DESIGN § 6) as an engine input, or why it is rejected.

    Columns ``ts,site,sensor`` and any payload field names of § 3; empty cells
    (and the ``None`` that ``csv.DictReader`` gives short rows) are absent
    fields. The sensor kind comes from the config. A row whose sensor is
    ``inspection`` (and not a configured sensor of that id) is an inspection;
    it needs ``inspector`` and, there being no receipt time, ``ts``.

    ``ref_ms`` is the reference time (replay: the newest reading seen); None
    skips the future and lateness checks. ``check_future=False`` keeps only
    the lateness check: against the newest reading *seen so far*, a reading
    more than 5 minutes later is simply the next one after a gap.
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
        return inspection_message(site, fields, ref_ms, check_future, via="replay")

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
    return sensor_message(site, sensor_id, kind, fields, ref_ms, check_future,
                           require_seq=False)


class RowParser:
    """``parse_row`` for the rows of one CSV, with a fast path for plain rows.

    A replay reads millions of rows, nearly all alike: a configured sensor,
    numbers in the columns of its kind, a time. Such a row is checked here
    without the general path's dicts and lookups, with the same rules
    (``FIELD_RULES``, ``missing_field``, ``timestamp_ms``, the lateness window)
    and to the same ``Reading``; a row's time text is parsed once for every
    row that repeats it (all gauges of one minute). Anything else (an
    inspection, an unknown sensor, a cell that is not a plain number, a value a
    rule refuses) goes to ``parse_row`` itself, so every rejection and its
    reason are exactly that function's.
    """

    def __init__(self, config: Config, header: list[str]) -> None:
        self.config = config
        self.header = header
        self.ts_at = header.index("ts")
        self.site_at = header.index("site")
        self.sensor_at = header.index("sensor")
        self.fields = [(i, FIELD_RULES[name]) for i, name in enumerate(header)
                       if name in FIELD_RULES]
        self.sites = site_index(config)
        self._ts_text: str | None = None
        self._ts_ms: int | Rejection = 0

    def parse(self, cells: list[str], *, refs: Mapping[str, int]
              ) -> Reading | Inspection | Rejection:
        """One row (the cells of ``csv.reader``) as ``parse_row`` would take it, with
        the lateness bound against its site's reference in ``refs`` (replay: the
        site's newest row so far, ``admission.SiteNewest``; no future check: see
        ``parse_row``)."""
        fast = self._fast(cells, refs)
        if fast is not None:
            return fast
        row = {name: cell for name, cell in zip(self.header, cells, strict=False) if cell}
        return parse_row(self.config, row, ref_ms=refs.get((row.get("site") or "").strip()),
                         check_future=False)

    def _fast(self, cells: list[str], refs: Mapping[str, int]) -> Reading | Rejection | None:
        if len(cells) != len(self.header):
            return None
        site = self.sites.get(cells[self.site_at])
        if site is None:
            return None
        sensor = cells[self.sensor_at]
        kind = site.kinds.get(sensor)
        if kind is None:
            return None
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
        if missing_field(kind, values) is not None and not (
                kind == "rain" and "precip_in" in values):
            return None
        ts_text = cells[self.ts_at]
        if ts_text != self._ts_text:
            if not ts_text or ts_text != ts_text.strip():
                return None
            self._ts_text, self._ts_ms = ts_text, timestamp_ms(_cell_ts(ts_text))
        ts_ms = self._ts_ms
        if isinstance(ts_ms, Rejection):
            return None
        ref_ms = refs.get(site.id)
        if ref_ms is not None and ts_ms < ref_ms - site.lateness_ms:
            return time_window(ts_ms, site.lateness_ms, ref_ms, False)
        return Reading(site=site.id, sensor=sensor, kind=kind, ts_ms=ts_ms,
                       **values)  # type: ignore[arg-type]  # keys are FIELD_RULES names


# --------------------------------------------------------------------------- whole files


@dataclass
class BacktestResult:
    """``stormwatch backtest``: the storm events of every configured gauge in a CSV."""

    events: pd.DataFrame
    rows: int
    skipped: dict[str, int]


def backtest_csv(config: Config, path: str) -> BacktestResult:
    """Read a replay CSV (DESIGN § 6) at once and find every gauge's storm events.

    Rows of sensors that are not rain gauges of their site are left out
    (turbidity, sediment and inspections are the engine's business:
    ``stormwatch replay``). Rows a gauge cannot use are skipped and counted by
    reason: an unknown site or sensor, a time that does not parse, neither a
    counter nor a depth, a negative or fractional counter. Each site's
    ``rain`` rules apply; with ``gauges: mean`` the gauges are still reported
    one by one. Unlike ``replay``, rows are not checked against the lateness
    bound: a backtest looks at the record as a whole.
    """
    read_header(path)  # pandas would rename a repeated column (tips_total.1) and go on
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding=ENCODING)
    except UnicodeDecodeError:
        raise CsvInputError(f"{path}: {not_utf8(path)}") from None
    rows = _GaugeRows.of(config, frame)
    out = [events for site in config.sites for events in rows.storm_events(site)]
    result = (pd.concat(out, ignore_index=True) if out
              else empty_events().assign(site=pd.Series([], dtype=str)))
    return BacktestResult(result, len(frame), rows.skipped)


@dataclass
class _GaugeRows:
    """The rows of a backtest's CSV that rain gauges can use, with their time in ms and
    their numbers parsed; ``skipped`` counts the others by reason."""

    frame: pd.DataFrame
    columns: dict[str, pd.Series]
    skipped: dict[str, int]
    now_ms: int | None

    @classmethod
    def of(cls, config: Config, frame: pd.DataFrame) -> _GaugeRows:
        rows = cls(frame, {}, {}, None)
        known = {f"{s.id}\x1f{sensor.id}" for s in config.sites for sensor in s.sensors}
        gauges = {f"{s.id}\x1f{g.id}" for s in config.sites for g in s.gauges()}
        pair = frame["site"] + "\x1f" + frame["sensor"]
        rows.keep(pair.isin(known) | (frame["sensor"] == "inspection"), "unknown_sensor")
        # As replay ends: time advanced to the newest row of the file, of any kind (an
        # inspection a day after the rain ends the storm in both).
        every_ms, every_ok = _column_ms(rows.frame["ts"])
        rows.now_ms = int(every_ms[every_ok].max()) if every_ok.any() else None
        rows.frame = rows.frame[(rows.frame["site"] + "\x1f" + rows.frame["sensor"]).isin(gauges)]
        ms, valid = _column_ms(rows.frame["ts"])
        rows.frame = rows.frame.assign(ts_ms=ms)
        rows.keep(valid, "bad_timestamp")
        rows.columns = {c: pd.to_numeric(rows.frame[c].replace("", np.nan), errors="coerce")
                        for c in ("tips_total", "precip_in", "seq") if c in rows.frame.columns}
        tips, precip = rows.column("tips_total"), rows.column("precip_in")
        ok = tips.notna() | (precip.notna() & (precip >= 0))
        ok &= tips.isna() | ((tips >= 0) & (tips == np.floor(tips)))
        rows.keep(ok, "bad_value")
        return rows

    def keep(self, mask: npt.NDArray[np.bool_] | pd.Series, reason: str) -> None:
        """Keep the rows of ``mask``; count the others as skipped for ``reason``."""
        bad = int((~np.asarray(mask, dtype=bool)).sum())
        if bad:
            self.skipped[reason] = self.skipped.get(reason, 0) + bad
            self.frame = self.frame[np.asarray(mask, dtype=bool)]

    def column(self, name: str) -> pd.Series:
        """A parsed number column on the rows kept (all NaN when the CSV has none)."""
        values = self.columns.get(name)
        if values is None:
            return pd.Series(np.nan, index=self.frame.index)
        return values[self.frame.index]

    def storm_events(self, site: SiteConfig) -> list[pd.DataFrame]:
        """The storm events of the site's gauges (``rain_columns.storm_events``), one
        frame per rain form (counters, depths) the site's rows use."""
        frame, out = self.frame, []
        mine = frame["site"] == site.id
        per_tip = {g.id: g.in_per_tip_value for g in site.gauges()}
        for form in ("tips_total", "precip_in"):
            values = self.column(form)
            rows_of = mine & values.notna()
            if not rows_of.any():
                continue
            data = pd.DataFrame({"ts": frame.loc[rows_of, "ts_ms"],
                                 "gauge": frame.loc[rows_of, "sensor"].astype("category"),
                                 form: values[rows_of]})
            if form == "precip_in" and "seq" in self.columns:
                data["seq"] = self.column("seq")[rows_of]
            events = storm_events(
                data, site.rain, per_tip,
                stale_after_minutes={g.id: g.reveal_after_minutes for g in site.gauges()},
                counter_bits={g.id: g.counter_bits for g in site.gauges()},
                max_rate_in_per_hour={g.id: g.max_rate_in_per_hour for g in site.gauges()},
                now=self.now_ms)
            events.insert(0, "site", site.id)
            out.append(events)
        return out


def _column_ms(column: pd.Series) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """A ``ts`` column (ISO 8601 with an offset, or Unix seconds) as ms, and which parsed."""
    ts = column.str.strip()
    seconds = pd.to_numeric(ts, errors="coerce")
    stamps = pd.to_datetime(ts.where(seconds.isna()), utc=True, errors="coerce",
                            format="ISO8601")
    stamp_ms = stamps.to_numpy(dtype="datetime64[ms]").astype(np.int64)
    ms = np.where(seconds.notna(), (seconds.fillna(0) * 1000).round(), stamp_ms)
    return ms.astype(np.int64), np.asarray(seconds.notna() | stamps.notna(), dtype=bool)


def event_rows(events: pd.DataFrame) -> list[dict[str, object]]:
    """The storm table as JSON-ready rows, times as the engine writes them (``iso``)."""
    out = []
    for row in events.itertuples(index=False):
        rec: dict[str, object] = {}
        for name, value in zip(events.columns, row, strict=True):
            if isinstance(value, pd.Timestamp):
                rec[name] = iso(value.value // 1_000_000)
            elif value is pd.NaT or (isinstance(value, float) and np.isnan(value)):
                rec[name] = None
            elif isinstance(value, np.bool_ | bool):
                rec[name] = bool(value)
            else:
                rec[name] = value.item() if isinstance(value, np.generic) else value
        out.append(rec)
    return out
