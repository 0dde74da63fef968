"""Input validation of MQTT payloads (sensors/README.md, "MQTT contract") and replay CSV rows
(README.md, "Commands")."""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.config import Config
from monitor.config.file import parse_config
from monitor.contract.inputs import Finding, Inspection, Reading
from monitor.contract.rejects import Rejection, RejectReason
from monitor.contract.times import MS_PER_DAY, MS_PER_MINUTE, parse_iso
from monitor.ingest.checks import FIELD_RULES, MAX_PAYLOAD_BYTES, NaiveZone, TimeRule
from monitor.sources.csvfile import RowParser, parse_row
from monitor.sources.parse import parse_message

SITE = "site-a"
REF = parse_iso("2026-05-01T12:00:00Z")
REF_S = REF // 1000
ISO = "2026-05-01T11:59:00Z"
TS = REF - MS_PER_MINUTE  # ISO as ms

CONFIG: Config = parse_config({
    "state_dir": "/tmp/stormwatch-test-models",
    "sites": [
        {"id": SITE, "sensors": [
            {"id": "rg1", "kind": "rain"},
            {"id": "tb-up", "kind": "turbidity"},
            {"id": "tb-down", "kind": "turbidity"},
            {"id": "trap1-depth", "kind": "sediment"},
        ]},
        {"id": "site-b", "lateness_days": 2, "sensors": [{"id": "rg1", "kind": "rain"}]},
    ],
})


def mqtt(tail: str, payload: dict[str, Any] | bytes, **kwargs: Any) -> Any:
    """parse_message on ``stormwatch/v1/{tail}`` with a dict sent as JSON."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    kwargs.setdefault("ref_ms", REF)
    return parse_message(CONFIG, f"stormwatch/v1/{tail}", raw, **kwargs)


def row(sensor: str, ts: str = ISO, site: str = SITE, **cells: str) -> dict[str, str]:
    """A replay CSV row with every payload column; unset cells are empty like in a file."""
    out = {"ts": ts, "site": site, "sensor": sensor}
    out.update({name: "" for name in FIELD_RULES})
    out.update(cells)
    return out


def reason(result: object) -> RejectReason | None:
    return result.reason if isinstance(result, Rejection) else None


# --------------------------------------------------------------------------- every reason

GOOD_RAIN = {"ts": ISO, "tips_total": 10}

#: One MQTT message per reason code: (reason, topic tail, payload, detail must contain).
REASON_CASES: list[tuple[RejectReason, str, dict[str, Any] | bytes, str]] = [
    (RejectReason.invalid_json, "site-a/rg1/reading", b"{ts: 1}", "payload"),
    (RejectReason.oversize, "site-a/rg1/reading",
     b'{"ts": 1, "pad": "' + b"x" * 4096 + b'"}', "4096"),
    (RejectReason.bad_topic, "site-a/rg1/telemetry", GOOD_RAIN, "topic"),
    (RejectReason.unknown_site, "site-z/rg1/reading", GOOD_RAIN, "site-z"),
    (RejectReason.unknown_sensor, "site-a/rg9/reading", GOOD_RAIN, "rg9"),
    (RejectReason.wrong_kind, "site-a/rg1/reading", {"ts": ISO, "ntu": 5.0}, "ntu"),
    (RejectReason.topic_mismatch, "site-a/rg1/reading", {**GOOD_RAIN, "sensor": "rg2"}, "sensor"),
    (RejectReason.missing_field, "site-a/rg1/reading", {"tips_total": 10}, "ts: required"),
    (RejectReason.not_finite, "site-a/tb-up/reading", b'{"ts": 1777636740, "ntu": NaN}', "ntu"),
    (RejectReason.negative_value, "site-a/tb-up/reading", {"ts": ISO, "ntu": -0.5},
     "ntu: must not be negative"),
    (RejectReason.impossible_value, "site-a/trap1-depth/reading",
     {"ts": ISO, "depth_in": 1200.5}, "depth_in"),
    (RejectReason.bad_timestamp, "site-a/rg1/reading", {"ts": "2026-05-01T11:59:00 EDT",
                                                        "tips_total": 1}, "ts"),
    (RejectReason.no_timezone, "site-a/rg1/reading", {"ts": "2026-05-01T11:59:00",
                                                      "tips_total": 1}, "ts"),
    (RejectReason.future_timestamp, "site-a/rg1/reading", {"ts": REF_S + 301, "tips_total": 1},
     "ts"),
    (RejectReason.too_old, "site-a/rg1/reading", {"ts": REF_S - 8 * 86400, "tips_total": 1},
     "ts"),
    (RejectReason.future, "site-a/inspection", {"ts": REF_S + 301, "inspector": "J"}, "ts"),
    (RejectReason.missing_ts, "site-a/inspection", {"inspector": "J"}, "ts: required"),
    (RejectReason.retained, "site-a/inspection", {"ts": ISO, "inspector": "J"}, "retained"),
    (RejectReason.bad_value, "site-a/tb-up/reading", {"ts": ISO, "ntu": "12"}, "ntu"),
]


#: Reasons that ``parse_message`` cannot produce, because they depend on what was sent
#: before: the journal commit finds them (``tests/sources/test_ingest_hostile.py``, and
#: ``tests/daemon/test_daemon.py`` through the real daemon).
JOURNAL_REASONS = {RejectReason.seq_conflict}
#: How a case's message arrived, when not plainly (the broker's retain flag).
ARRIVAL: dict[RejectReason, dict[str, Any]] = {RejectReason.retained: {"retained": True}}


def test_every_reason_has_a_case() -> None:
    assert {case[0] for case in REASON_CASES} | JOURNAL_REASONS == set(RejectReason)
    assert not {case[0] for case in REASON_CASES} & JOURNAL_REASONS
    assert len({r.value for r in RejectReason}) == len(RejectReason)


@pytest.mark.parametrize(("expected", "tail", "payload", "detail"), REASON_CASES,
                         ids=[case[0].value for case in REASON_CASES])
def test_reason(expected: RejectReason, tail: str, payload: dict[str, Any] | bytes,
                detail: str) -> None:
    result = mqtt(tail, payload, **ARRIVAL.get(expected, {}))
    assert isinstance(result, Rejection), result
    assert result.reason is expected
    assert detail in result.detail


#: What the fuzz target found (``tests/reliability/test_fuzz.py``): each was accepted, or
#: raised, and stopped the daemon at the journal commit or at a later tick.
FUZZ_FOUND: list[tuple[str, dict[str, Any], RejectReason, str]] = [
    ("lone surrogate", {"inspector": "J. R\ud800"}, RejectReason.invalid_json,
     "lone surrogate"),
    ("lone surrogate in notes", {"inspector": "J", "notes": "\udfff"},
     RejectReason.invalid_json, "lone surrogate"),
    ("due past datetime.max", {"inspector": "J", "corrective_actions": [
        {"id": "ca-1", "text": "fix", "due": "9999-12-31"}]}, RejectReason.bad_value,
     "corrective_actions.0.due: '9999-12-31' is outside 1970..9999"),
    ("due before 1970", {"inspector": "J", "corrective_actions": [
        {"id": "ca-1", "text": "fix", "due": "0500-06-15"}]}, RejectReason.bad_value,
     "outside 1970..9999"),
]


@pytest.mark.parametrize(("name", "payload", "expected", "detail"), FUZZ_FOUND,
                         ids=[case[0] for case in FUZZ_FOUND])
def test_what_the_fuzzer_found_is_refused(name: str, payload: dict[str, Any],
                                          expected: RejectReason, detail: str) -> None:
    result = mqtt("site-a/inspection", {"ts": ISO, **payload})
    assert isinstance(result, Rejection), result
    assert result.reason is expected and detail in result.detail, result
    good = mqtt("site-a/inspection", {"ts": ISO, "inspector": "J. R\u00e9",
                                      "corrective_actions": [
                                          {"id": "ca-1", "text": "fix", "due": "9999-12-30"}]})
    assert isinstance(good, Inspection) and good.inspector == "J. Ré", good


def test_reason_is_its_code() -> None:
    assert RejectReason("too_old") is RejectReason.too_old
    assert str(RejectReason.too_old) == "too_old"
    assert json.dumps({RejectReason.oversize: 1}) == '{"oversize": 1}'


# --------------------------------------------------------------------------- accepted payloads


def test_rain_counter() -> None:
    result = mqtt("site-a/rg1/reading", {"ts": ISO, "tips_total": 42, "battery_v": 3.9})
    assert result == Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=TS, tips_total=42,
                             battery_v=3.9)


def test_turbidity_and_sediment() -> None:
    assert mqtt("site-a/tb-down/reading", {"ts": ISO, "ntu": 7, "temp_c": -2.5}) == Reading(
        site=SITE, sensor="tb-down", kind="turbidity", ts_ms=TS, ntu=7.0, temp_c=-2.5)
    assert mqtt("site-a/trap1-depth/reading", {"ts": ISO, "distance_in": 30.5}) == Reading(
        site=SITE, sensor="trap1-depth", kind="sediment", ts_ms=TS, distance_in=30.5)
    assert mqtt("site-a/trap1-depth/reading", {"ts": ISO, "depth_in": 0}) == Reading(
        site=SITE, sensor="trap1-depth", kind="sediment", ts_ms=TS, depth_in=0.0)


def test_float_fields_come_out_as_float() -> None:
    result = mqtt("site-a/tb-up/reading", {"ts": ISO, "ntu": 7})
    assert isinstance(result, Reading)
    assert type(result.ntu) is float


def test_unknown_payload_fields_are_ignored() -> None:
    payload = {"ts": ISO, "ntu": 3.5, "fw": "1.2.3", "gps": {"lat": 41.0, "lon": -73.0},
               "flags": [1, 2], "unknown_nan": float("nan"), "inspector": 5}
    result = mqtt("site-a/tb-up/reading", payload)
    assert result == Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=TS, ntu=3.5)


def test_payload_may_repeat_its_topic_ids() -> None:
    payload = {"ts": ISO, "tips_total": 1, "site": SITE, "sensor": "rg1"}
    assert isinstance(mqtt("site-a/rg1/reading", payload), Reading)


@pytest.mark.parametrize("payload", [{"ts": ISO, "tips_total": 1, "site": "site-b"},
                                     {"ts": ISO, "tips_total": 1, "site": 7}])
def test_payload_site_must_match_topic(payload: dict[str, Any]) -> None:
    result = mqtt("site-a/rg1/reading", payload)
    assert reason(result) is RejectReason.topic_mismatch
    assert result.detail.startswith("site:")


def test_null_is_absent() -> None:
    # null for another kind's field is no wrong_kind, and null ntu is a missing ntu.
    result = mqtt("site-a/rg1/reading", {"ts": ISO, "tips_total": 1, "ntu": None})
    assert isinstance(result, Reading)
    assert reason(mqtt("site-a/tb-up/reading", {"ts": ISO, "ntu": None})) is (
        RejectReason.missing_field)


# --------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(("ts", "ms"), [
    ("2026-05-01T12:00:00Z", REF),
    ("2026-05-01T08:00:00-04:00", REF),
    ("2026-05-01T17:30:00+05:30", REF),
    ("2026-05-01T11:59:59.250Z", REF - 750),
    (REF_S, REF),
    (REF_S - 0.25, REF - 250),
    (float(REF_S), REF),
], ids=["iso-z", "iso-minus", "iso-plus", "iso-ms", "unix-int", "unix-float", "unix-float-int"])
def test_both_ts_forms(ts: str | float, ms: int) -> None:
    result = mqtt("site-a/rg1/reading", {"ts": ts, "tips_total": 1})
    assert isinstance(result, Reading), result
    assert result.ts_ms == ms


@pytest.mark.parametrize("ts", [
    "2026-05-01",               # a date, no time, no offset
    "yesterday",
    str(REF_S),                 # numbers must be JSON numbers, not strings
    True,
    [REF_S],
    -1,                         # before 1970
    1e300,                      # beyond year 9999 (and 1e300 * 1000 would overflow)
], ids=["date", "word", "numeric-string", "bool", "list", "negative", "huge"])
def test_bad_timestamp(ts: object) -> None:
    result = mqtt("site-a/rg1/reading", {"ts": ts, "tips_total": 1})
    assert reason(result) is RejectReason.bad_timestamp
    assert result.detail.startswith("ts:")


def test_a_time_without_an_offset_is_no_timezone() -> None:
    """Local to whom? The daemon has no ``--timezone``: its own reason, not a bad time."""
    result = mqtt("site-a/rg1/reading", {"ts": "2026-05-01T12:00:00", "tips_total": 1})
    assert reason(result) is RejectReason.no_timezone
    assert result.detail == "ts: '2026-05-01T12:00:00' has no UTC offset (Z or +hh:mm)"


@pytest.mark.parametrize("raw", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_timestamp_not_finite(raw: bytes) -> None:
    result = mqtt("site-a/rg1/reading", b'{"tips_total": 1, "ts": ' + raw + b"}")
    assert reason(result) is RejectReason.not_finite


@pytest.mark.parametrize(("offset_ms", "expected"), [
    (5 * MS_PER_MINUTE, None),
    (5 * MS_PER_MINUTE + 1, RejectReason.future_timestamp),
    (-7 * MS_PER_DAY, None),
    (-7 * MS_PER_DAY - 1, RejectReason.too_old),
], ids=["future-5min", "future-5min+1ms", "old-7d", "old-7d-1ms"])
def test_time_window_boundaries(offset_ms: int, expected: RejectReason | None) -> None:
    ts = (REF + offset_ms) / 1000  # Unix seconds with milliseconds
    assert reason(mqtt("site-a/rg1/reading", {"ts": ts, "tips_total": 1})) is expected


def test_lateness_is_per_site() -> None:
    ts = REF_S - 3 * 86400
    assert isinstance(mqtt("site-a/rg1/reading", {"ts": ts, "tips_total": 1}), Reading)
    assert reason(mqtt("site-b/rg1/reading", {"ts": ts, "tips_total": 1})) is (
        RejectReason.too_old)


# --------------------------------------------------------------------------- size, JSON, topic


def padded(size: int) -> bytes:
    head = b'{"ts": "2026-05-01T11:59:00Z", "tips_total": 1, "pad": "'
    tail = b'"}'
    payload = head + b"x" * (size - len(head) - len(tail)) + tail
    assert len(payload) == size
    return payload


def test_payload_limit_is_4_kib() -> None:
    assert MAX_PAYLOAD_BYTES == 4096
    assert isinstance(mqtt("site-a/rg1/reading", padded(4096)), Reading)
    result = mqtt("site-a/rg1/reading", padded(4097))
    assert reason(result) is RejectReason.oversize


def test_limit_counts_bytes_not_characters() -> None:
    # 2-byte UTF-8 characters: fewer than 4096 characters, more than 4096 bytes.
    body = b'{"ts": 1, "note": "' + "é".encode() * 2040 + b'"}'
    assert len(body.decode()) < 4096 < len(body)
    assert reason(mqtt("site-a/rg1/reading", body)) is RejectReason.oversize


@pytest.mark.parametrize("payload", [
    b"",
    b"{",
    b"\xff\xfe{}",                          # not UTF-8
    b'\xef\xbb\xbf{"ts": 1}',               # UTF-8 with a BOM is not plain JSON text
    b"[1, 2]",                              # not an object
    b"null",
    b'"text"',
    b'{"ts": 1, "tips_total": 1, "tips_total": 2}',  # which one is true?
    b'{"ts":1,"tips_total":1,"tips_total":2}',       # the same, compact
    # A blank before one key's colon and a ":" inside a string value make the
    # counts of keys and '":' agree: the cheap duplicate test must not trust that.
    b'{"ts":1,"tips_total" :1,"tips_total":2,"x" :"a\\":"}',
    b'{"ts":1,"tips_total":1,"tips_total":2,"x":"a\\":"}',
    b"[" * 4000,                            # deeper than the interpreter recurses
], ids=["empty", "truncated", "latin", "bom", "array", "null", "string", "dup-key",
        "dup-key-compact", "dup-key-blank-and-quote", "dup-key-quote", "deep"])
def test_invalid_json(payload: bytes) -> None:
    assert reason(mqtt("site-a/rg1/reading", payload)) is RejectReason.invalid_json


@pytest.mark.parametrize("topic", [
    "stormwatch/v2/site-a/rg1/reading",
    "stormwatch/v1/site-a/rg1",
    "stormwatch/v1/site-a/rg1/reading/extra",
    "stormwatch/v1/site-a/rg1/Reading",
    "stormwatch/v1/Site-A/rg1/reading",
    "stormwatch/v1/site-a/-rg1/reading",
    "stormwatch/v1/site-a//reading",
    "stormwatch/v1/site-a/inspections",
    "stormwatch/v1/site-a/rg1/inspection",
    "/stormwatch/v1/site-a/rg1/reading",
    "stormwatch/v1",
    "",
])
def test_bad_topic(topic: str) -> None:
    payload = json.dumps(GOOD_RAIN).encode()
    result = parse_message(CONFIG, topic, payload, ref_ms=REF)
    assert reason(result) is RejectReason.bad_topic


def test_prefix_from_argument_and_config() -> None:
    payload = json.dumps(GOOD_RAIN).encode()
    assert isinstance(parse_message(CONFIG, "farm/x/site-a/rg1/reading", payload, ref_ms=REF,
                                    prefix="farm/x"), Reading)
    other = parse_config({**CONFIG.model_dump(), "broker": {"topic_prefix": "acme/sw"}})
    assert isinstance(parse_message(other, "acme/sw/site-a/rg1/reading", payload, ref_ms=REF),
                      Reading)
    assert reason(parse_message(other, "stormwatch/v1/site-a/rg1/reading", payload,
                                ref_ms=REF)) is RejectReason.bad_topic


# --------------------------------------------------------------------------- field rules


@pytest.mark.parametrize(("tail", "payload", "expected"), [
    # tips_total: int >= 0, at most 2**40
    ("rg1", {"tips_total": 0}, None),
    ("rg1", {"tips_total": 2**40}, None),
    ("rg1", {"tips_total": 2**40 + 1}, RejectReason.impossible_value),
    ("rg1", {"tips_total": -1}, RejectReason.negative_value),
    ("rg1", {"tips_total": 12.5}, RejectReason.bad_value),
    ("rg1", {"tips_total": True}, RejectReason.bad_value),
    ("rg1", {"tips_total": "12"}, RejectReason.bad_value),
    # precip_in: with seq, at most 10 in per message
    ("rg1", {"precip_in": 0.01, "seq": 7}, None),
    ("rg1", {"precip_in": 10.0, "seq": 7}, None),
    ("rg1", {"precip_in": 10.01, "seq": 7}, RejectReason.impossible_value),
    ("rg1", {"precip_in": -0.01, "seq": 7}, RejectReason.negative_value),
    ("rg1", {"precip_in": 0.01, "seq": -1}, RejectReason.negative_value),
    ("rg1", {"precip_in": 0.01, "seq": 1.5}, RejectReason.bad_value),
    # ntu, temp_c
    ("tb-up", {"ntu": 100_000}, None),
    ("tb-up", {"ntu": 100_000.1}, RejectReason.impossible_value),
    ("tb-up", {"ntu": [1]}, RejectReason.bad_value),
    ("tb-up", {"ntu": 1, "temp_c": -60}, None),
    ("tb-up", {"ntu": 1, "temp_c": -60.5}, RejectReason.impossible_value),
    ("tb-up", {"ntu": 1, "temp_c": 90.5}, RejectReason.impossible_value),
    # depth_in, distance_in
    ("trap1-depth", {"depth_in": 1200}, None),
    # Past the trap bottom is a sensor fault the engine reports, as for the
    # same depth sent as distance_in; only beyond any trap is impossible.
    ("trap1-depth", {"depth_in": -0.1}, None),
    ("trap1-depth", {"depth_in": -1200.1}, RejectReason.impossible_value),
    ("trap1-depth", {"distance_in": 1e6}, RejectReason.impossible_value),
    # battery_v 0..60 on any kind
    ("trap1-depth", {"depth_in": 1, "battery_v": 60}, None),
    ("trap1-depth", {"depth_in": 1, "battery_v": 60.1}, RejectReason.impossible_value),
    ("trap1-depth", {"depth_in": 1, "battery_v": -3.3}, RejectReason.negative_value),
    ("trap1-depth", {"depth_in": 1, "battery_v": "3.3"}, RejectReason.bad_value),
])
def test_field_rules(tail: str, payload: dict[str, Any], expected: RejectReason | None) -> None:
    result = mqtt(f"site-a/{tail}/reading", {"ts": ISO, **payload})
    assert reason(result) is expected, result
    if isinstance(result, Rejection):
        assert result.detail.split(":")[0] in payload


@pytest.mark.parametrize("raw", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
@pytest.mark.parametrize("field", ["tips_total", "precip_in", "seq", "battery_v"])
def test_not_finite(raw: bytes, field: str) -> None:
    body = b'{"ts": 1777636740, "tips_total": 1, "precip_in": 0.1, "seq": 1, "battery_v": 3.9}'
    body = body.replace(b'"' + field.encode() + b'": ', b'"' + field.encode() + b'": ' + raw
                        + b", \"_was\": ")
    result = mqtt("site-a/rg1/reading", body)
    assert reason(result) is RejectReason.not_finite
    assert result.detail == f"{field}: must be finite"


def test_rain_needs_tips_total_or_precip_in_with_seq() -> None:
    counter = mqtt("site-a/rg1/reading", {"ts": ISO, "tips_total": 5})
    assert isinstance(counter, Reading) and counter.tips_total == 5 and counter.seq is None
    depth = mqtt("site-a/rg1/reading", {"ts": ISO, "precip_in": 0.02, "seq": 9})
    assert isinstance(depth, Reading) and (depth.precip_in, depth.seq) == (0.02, 9)

    alone = mqtt("site-a/rg1/reading", {"ts": ISO, "precip_in": 0.02})
    assert reason(alone) is RejectReason.missing_field
    assert alone.detail == "seq: required with precip_in"
    neither = mqtt("site-a/rg1/reading", {"ts": ISO, "seq": 9, "battery_v": 3.7})
    assert reason(neither) is RejectReason.missing_field
    assert neither.detail.startswith("tips_total or precip_in:")

    # Both forms: kept; the counter is authoritative in the engine, so no seq is needed.
    both = mqtt("site-a/rg1/reading", {"ts": ISO, "tips_total": 5, "precip_in": 0.02})
    assert isinstance(both, Reading) and (both.tips_total, both.precip_in) == (5, 0.02)


def test_integral_float_counter_is_an_int() -> None:
    result = mqtt("site-a/rg1/reading", {"ts": ISO, "tips_total": 12.0, "seq": 3.0})
    assert isinstance(result, Reading)
    assert (result.tips_total, result.seq) == (12, 3)
    assert type(result.tips_total) is int and type(result.seq) is int


@pytest.mark.parametrize(("tail", "payload"), [
    ("tb-up", {"ntu": 1.0}),
    ("trap1-depth", {"depth_in": 1.0}),
])
def test_missing_measurement(tail: str, payload: dict[str, Any]) -> None:
    del payload[next(iter(payload))]
    result = mqtt(f"site-a/{tail}/reading", {"ts": ISO, "battery_v": 3.8, **payload})
    assert reason(result) is RejectReason.missing_field


@pytest.mark.parametrize(("tail", "field", "value"), [
    ("rg1", "ntu", 5.0),
    ("rg1", "depth_in", 3.0),
    ("tb-up", "tips_total", 3),
    ("tb-up", "distance_in", 3.0),
    ("trap1-depth", "precip_in", 0.1),
    ("trap1-depth", "temp_c", 12.0),
])
def test_wrong_kind(tail: str, field: str, value: float) -> None:
    result = mqtt(f"site-a/{tail}/reading", {"ts": ISO, field: value})
    assert reason(result) is RejectReason.wrong_kind
    assert result.detail.startswith(f"{field}:")


def test_wrong_kind_wins_over_bad_values() -> None:
    # The gauge is misconfigured as a turbidity node: say so, not "battery_v negative".
    payload = {"ts": ISO, "battery_v": -1, "tips_total": "x", "ntu": float("nan")}
    result = mqtt("site-a/rg1/reading", json.dumps(payload).encode())
    assert reason(result) is RejectReason.wrong_kind


# --------------------------------------------------------------------------- status


def test_status_message() -> None:
    payload = {"ts": ISO, "battery_v": 3.6, "rssi_dbm": -71, "uptime_s": 86400,
               "buffered": 12, "ntu": 4.0}
    result = mqtt("site-a/tb-up/status", payload)
    # Measurement fields on the status topic are not a measurement: ignored.
    assert result == Reading(site=SITE, sensor="tb-up", kind="status", ts_ms=TS, battery_v=3.6,
                             rssi_dbm=-71.0, uptime_s=86400.0, buffered=12)


def test_status_needs_only_ts() -> None:
    assert mqtt("site-a/rg1/status", {"ts": ISO}) == Reading(
        site=SITE, sensor="rg1", kind="status", ts_ms=TS)
    assert reason(mqtt("site-a/rg1/status", {"battery_v": 3.6})) is RejectReason.missing_field
    assert reason(mqtt("site-a/rg1/status", {"ts": ISO, "rssi_dbm": 31})) is (
        RejectReason.impossible_value)
    assert reason(mqtt("site-a/rg9/status", {"ts": ISO})) is RejectReason.unknown_sensor


# --------------------------------------------------------------------------- inspections


def test_inspection_with_ts() -> None:
    payload = {"ts": ISO, "inspector": "J. Rivera, CPESC", "kind": "storm",
               "notes": "silt fence intact", "findings": "trap 1 at 30%", "photo": "x.jpg"}
    assert mqtt("site-a/inspection", payload) == Inspection(
        site=SITE, inspector="J. Rivera, CPESC", ts_ms=TS, kind="storm",
        notes="silt fence intact", findings=(Finding("general", "trap 1 at 30%"),),
        entered_ms=REF, via="mqtt")


def test_inspection_structured_fields() -> None:
    """Findings, corrective actions (a date due means the end of that local day), the
    actions it resolves, and a joint inspection as a list of names."""
    payload = {"ts": ISO, "inspector": ["A. Lee", "B. Ortiz", "A. Lee"],
               "findings": [{"practice": "silt-fence-north", "condition": "undermined at 2+40"}],
               "corrective_actions": [{"id": "ca-1", "text": "re-trench", "due": "2026-05-03"},
                                      {"id": "ca-2", "text": "seed", "due": None}],
               "resolves": ["ca-0"]}
    result = mqtt("site-a/inspection", payload)
    assert isinstance(result, Inspection)
    assert result.names == ("A. Lee", "B. Ortiz") and result.inspector == "A. Lee & B. Ortiz"
    assert result.findings == (Finding("silt-fence-north", "undermined at 2+40"),)
    assert result.corrective_actions[0].due_ms == parse_iso("2026-05-04T00:00:00Z")
    assert result.corrective_actions[1].due_ms is None
    assert result.resolves == ("ca-0",)
    for bad in ({"findings": [{"practice": "", "condition": "x"}]},
                {"corrective_actions": [{"id": "ca-1", "text": " "}]},
                {"corrective_actions": [{"id": "ca-1", "text": "x", "due": "soon"}]},
                {"resolves": [3]}):
        assert reason(mqtt("site-a/inspection", {**payload, **bad})) is RejectReason.bad_value


def test_corrective_action_ids_are_stormwatchs() -> None:
    """The publisher's ids are not used (one could name another inspection's action);
    each id hashes the whole inspection, so two in one minute never share one, and the
    same inspection sent again has the same ids (a duplicate, not a second record)."""
    payload = {"ts": ISO, "inspector": "A. Lee",
               "corrective_actions": [{"id": "ca-victim-1", "text": "re-trench"},
                                      {"text": "seed the slope"}]}
    first = mqtt("site-a/inspection", payload)
    assert isinstance(first, Inspection)
    ids = [a.id for a in first.corrective_actions]
    assert "ca-victim-1" not in ids and len(set(ids)) == 2
    assert all(i.startswith("ca-20260501t1159-") for i in ids)  # the site's zone is UTC
    again = mqtt("site-a/inspection", payload, received_ms=REF + 60_000)
    assert isinstance(again, Inspection) and [a.id for a in again.corrective_actions] == ids
    other = mqtt("site-a/inspection", {**payload, "inspector": "B. Ortiz"})
    assert isinstance(other, Inspection)
    assert not {a.id for a in other.corrective_actions} & set(ids)


def test_an_inspection_needs_its_own_time_and_is_never_taken_retained() -> None:
    """An inspection stamped with its arrival would be a new one at every redelivery:
    without ``ts`` it is ``missing_ts``; the broker's retained copy (sent again at every
    subscription, so at every daemon restart) is ``retained``, with or without ``ts``."""
    for payload in ({"inspector": "J. Rivera"}, {"inspector": "J. Rivera", "ts": None}):
        assert reason(mqtt("site-a/inspection", payload)) is RejectReason.missing_ts
    good = {"inspector": "J. Rivera", "ts": ISO}
    assert isinstance(mqtt("site-a/inspection", good), Inspection)
    assert reason(mqtt("site-a/inspection", good, retained=True)) is RejectReason.retained
    # A retained reading is only a duplicate of what was journaled: taken, and the
    # journal's identity drops it.
    assert isinstance(mqtt("site-a/rg1/reading", GOOD_RAIN, retained=True), Reading)


@pytest.mark.parametrize(("payload", "expected"), [
    ({}, RejectReason.missing_field),
    ({"inspector": "   "}, RejectReason.missing_field),
    ({"inspector": 42}, RejectReason.bad_value),
    ({"inspector": "J", "kind": "weekly"}, RejectReason.bad_value),
    ({"inspector": "J", "notes": ["a"]}, RejectReason.bad_value),
    ({"inspector": "J", "findings": 3}, RejectReason.bad_value),
    ({"inspector": "J", "ts": "2026-05-01"}, RejectReason.bad_timestamp),
    ({"inspector": "J", "ts": REF_S + 3600}, RejectReason.future),
    ({"inspector": "J", "ts": REF_S - 30 * 86400}, RejectReason.too_old),
    ({"inspector": "J", "site": "site-b"}, RejectReason.topic_mismatch),
])
def test_inspection_rejects(payload: dict[str, Any], expected: RejectReason) -> None:
    assert reason(mqtt("site-a/inspection", payload)) is expected


def test_inspection_unknown_site() -> None:
    assert reason(mqtt("site-z/inspection", {"inspector": "J"})) is RejectReason.unknown_site


def test_inspection_ignores_sensor_fields() -> None:
    # An inspector's app may attach its own observations; they are not sensor data.
    result = mqtt("site-a/inspection", {"inspector": "J", "ts": ISO, "depth_in": -3,
                                        "sensor": "rg1"})
    assert isinstance(result, Inspection)


# --------------------------------------------------------------------------- replay CSV rows


def test_row_rain_counter_with_empty_cells() -> None:
    result = parse_row(CONFIG, row("rg1", tips_total="12", battery_v="3.9"),
                       when=TimeRule.wall(REF))
    assert result == Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=TS, tips_total=12,
                             battery_v=3.9)


@pytest.mark.parametrize(("cells", "expected"), [
    ({"tips_total": "12.0"}, {"tips_total": 12}),
    ({"tips_total": " 12 "}, {"tips_total": 12}),
    ({"precip_in": "0.01", "seq": "4.0"}, {"precip_in": 0.01, "seq": 4}),
    ({"precip_in": "1e-2", "seq": "4"}, {"precip_in": 0.01, "seq": 4}),
])
def test_row_numbers(cells: dict[str, str], expected: dict[str, Any]) -> None:
    result = parse_row(CONFIG, row("rg1", **cells), when=TimeRule(None))
    assert result == Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=TS, **expected)
    assert all(type(getattr(result, k)) is type(v) for k, v in expected.items())


@pytest.mark.parametrize(("ts", "ms"), [
    ("2026-05-01T12:00:00Z", REF),
    ("2026-05-01T08:00:00-04:00", REF),
    (str(REF_S), REF),
    (f"{REF_S}.5", REF + 500),
])
def test_row_ts_forms(ts: str, ms: int) -> None:
    result = parse_row(CONFIG, row("tb-up", ts=ts, ntu="2.5"), when=TimeRule.wall(REF))
    assert isinstance(result, Reading) and result.ts_ms == ms


@pytest.mark.parametrize(("cells", "expected"), [
    ({"ntu": "abc"}, RejectReason.bad_value),
    ({"ntu": "nan"}, RejectReason.not_finite),
    ({"ntu": "-inf"}, RejectReason.not_finite),
    ({"ntu": "-1"}, RejectReason.negative_value),
    ({"ntu": "1", "tips_total": "3"}, RejectReason.wrong_kind),
    ({"ntu": "1", "seq": "1.5"}, RejectReason.bad_value),
    ({"ntu": "1", "ts": ""}, RejectReason.missing_field),
    ({"ntu": "1", "ts": "2026-05-01 11:59"}, RejectReason.no_timezone),
    ({"ntu": "1", "ts": "nan"}, RejectReason.not_finite),
    ({"battery_v": "3.9"}, RejectReason.missing_field),
    ({"ntu": "1", "site": ""}, RejectReason.missing_field),
    ({"ntu": "1", "sensor": ""}, RejectReason.missing_field),
    ({"ntu": "1", "site": "site-z"}, RejectReason.unknown_site),
    ({"ntu": "1", "sensor": "tb-side"}, RejectReason.unknown_sensor),
])
def test_row_rejects(cells: dict[str, str], expected: RejectReason) -> None:
    base = row("tb-up")
    base.update(cells)
    assert reason(parse_row(CONFIG, base, when=TimeRule.wall(REF))) is expected


def test_row_time_window() -> None:
    old = row("rg1", ts=str(REF_S - 8 * 86400), tips_total="1")
    ahead = row("rg1", ts=str(REF_S + 3600), tips_total="1")
    assert reason(parse_row(CONFIG, old, when=TimeRule.wall(REF))) is RejectReason.too_old
    assert reason(parse_row(CONFIG, ahead, when=TimeRule.wall(REF))) is (
        RejectReason.future_timestamp)
    # No reference at all: no window.
    assert isinstance(parse_row(CONFIG, old, when=TimeRule(None)), Reading)
    assert isinstance(parse_row(CONFIG, ahead, when=TimeRule(None)), Reading)
    # Only a lateness reference (the newest row so far): a later row is the next one.
    assert isinstance(parse_row(CONFIG, ahead, when=TimeRule(None, REF)), Reading)
    assert reason(parse_row(CONFIG, old, when=TimeRule(None, REF))) is (
        RejectReason.too_old)


def test_row_inspection() -> None:
    cells = row("inspection", inspector=" J. Rivera ", kind="storm", notes="ok")
    assert parse_row(CONFIG, cells, when=TimeRule.wall(REF)) == Inspection(
        site=SITE, inspector="J. Rivera", ts_ms=TS, kind="storm", notes="ok", via="replay")
    # The kind column is empty on reading rows and defaults on inspection rows.
    plain = {"ts": ISO, "site": SITE, "sensor": "inspection", "inspector": "J", "kind": ""}
    result = parse_row(CONFIG, plain, when=TimeRule(None))
    assert isinstance(result, Inspection) and result.kind == "routine"


@pytest.mark.parametrize(("cells", "expected"), [
    ({"sensor": "inspection", "ts": ISO, "site": SITE}, RejectReason.missing_field),
    ({"sensor": "inspection", "ts": ISO, "site": SITE, "inspector": ""},
     RejectReason.missing_field),
    # An inspection is a fact of its own time: the ts cell is required.
    ({"sensor": "inspection", "ts": "", "site": SITE, "inspector": "J"},
     RejectReason.missing_ts),
    ({"sensor": "inspection", "ts": ISO, "site": SITE, "inspector": "J", "kind": "x"},
     RejectReason.bad_value),
])
def test_row_inspection_rejects(cells: dict[str, str], expected: RejectReason) -> None:
    assert reason(parse_row(CONFIG, cells, when=TimeRule(None))) is expected


def test_rows_from_a_csv_file() -> None:
    text = (
        "ts,site,sensor,tips_total,precip_in,seq,ntu,depth_in,distance_in,battery_v,"
        "inspector,comment\n"
        f"{ISO},{SITE},rg1,100,,,,,,3.9,,first\n"
        f"{REF_S - 60},{SITE},tb-up,,,,4.5,,,,,\n"
        f"{ISO},{SITE},trap1-depth,,,,,,33.0\n"             # short row: DictReader gives None
        f"{ISO},{SITE},inspection,,,,,,,,A. Chen,walked the site\n"
        f"{ISO},{SITE},tb-down,,,,,,,,,\n"
    )
    results = [parse_row(CONFIG, r, when=TimeRule.wall(REF))
               for r in csv.DictReader(io.StringIO(text))]
    assert results[:4] == [
        Reading(site=SITE, sensor="rg1", kind="rain", ts_ms=TS, tips_total=100, battery_v=3.9),
        Reading(site=SITE, sensor="tb-up", kind="turbidity", ts_ms=TS, ntu=4.5),
        Reading(site=SITE, sensor="trap1-depth", kind="sediment", ts_ms=TS, distance_in=33.0),
        Inspection(site=SITE, inspector="A. Chen", ts_ms=TS, via="replay"),
    ]
    assert reason(results[4]) is RejectReason.missing_field


def test_row_extra_columns_ignored() -> None:
    cells = row("tb-up", ntu="2", comment="probe cleaned", rssi="abc")
    assert isinstance(parse_row(CONFIG, cells, when=TimeRule.wall(REF)), Reading)


# --------------------------------------------------------------------------- one code path

SAME_CASES: list[tuple[str, dict[str, Any]]] = [
    ("rg1", {"tips_total": 12}),
    ("rg1", {"tips_total": 12.0}),
    ("rg1", {"tips_total": 12.5}),
    ("rg1", {"tips_total": -3}),
    ("rg1", {"precip_in": 0.25}),
    ("rg1", {"precip_in": 0.25, "seq": 8}),
    ("rg1", {"precip_in": 11, "seq": 8}),
    ("rg1", {"ntu": 3}),
    ("tb-up", {"ntu": 3, "temp_c": 95}),
    ("tb-up", {"ntu": 3, "battery_v": 0}),
    ("trap1-depth", {"distance_in": 40, "battery_v": 61}),
    ("trap1-depth", {"depth_in": 2000}),
    ("trap1-depth", {"battery_v": 3.3}),
]


@pytest.mark.parametrize(("sensor", "fields"), SAME_CASES)
@pytest.mark.parametrize("ts", [ISO, REF_S - 60, REF_S + 3600, REF_S - 9 * 86400])
def test_mqtt_and_csv_agree(sensor: str, fields: dict[str, Any], ts: str | int) -> None:
    by_mqtt = mqtt(f"site-a/{sensor}/reading", {"ts": ts, **fields})
    cells = {k: str(v) for k, v in fields.items()}
    by_row = parse_row(CONFIG, row(sensor, ts=str(ts), **cells), when=TimeRule.wall(REF))
    if "precip_in" in fields and "seq" not in fields:
        # The one deliberate difference: a replay row needs no seq (recorded series
        # carry a depth per interval and nothing else; a file row is not redelivered).
        assert isinstance(by_mqtt, Rejection)
        assert by_mqtt.reason is RejectReason.missing_field
        assert not isinstance(by_row, Rejection) or by_row.reason is not \
            RejectReason.missing_field
        return
    if isinstance(by_mqtt, Rejection):
        # Same reason and field; the echoed value may read "11" in one and "11.0" in the other.
        assert isinstance(by_row, Rejection)
        assert by_row.reason is by_mqtt.reason
        assert by_row.detail.split(":")[0] == by_mqtt.detail.split(":")[0]
    else:
        assert by_mqtt == by_row


# --------------------------------------------------------------------------- never raises

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from(["ts", "site", "sensor", "inspector", "kind", "notes", *FIELD_RULES])
_topics = st.sampled_from([
    "stormwatch/v1/site-a/rg1/reading", "stormwatch/v1/site-a/tb-up/status",
    "stormwatch/v1/site-a/inspection", "stormwatch/v1/site-b/rg1/reading",
    "stormwatch/v1/site-a/trap1-depth/reading",
]) | st.text(max_size=40)


@settings(max_examples=300, deadline=None)
@given(topic=_topics, data=st.dictionaries(_keys, _json, max_size=8),
       ref=st.integers(min_value=0, max_value=2**45))
def test_any_json_object_gives_a_result(topic: str, data: dict[str, Any], ref: int) -> None:
    result = parse_message(CONFIG, topic, json.dumps(data).encode(), ref_ms=ref)
    assert isinstance(result, (Reading, Inspection, Rejection))


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=MAX_PAYLOAD_BYTES + 8))
def test_any_bytes_give_a_result(payload: bytes) -> None:
    result = parse_message(CONFIG, "stormwatch/v1/site-a/rg1/reading", payload, ref_ms=REF)
    assert isinstance(result, Rejection)


@settings(max_examples=300, deadline=None)
@given(cells=st.dictionaries(_keys, st.text(max_size=12) | st.sampled_from(
    ["1", "1.5", "-2", "nan", "inf", "1e400", "12.0", ISO, "2026-05-01"]), max_size=8),
       sensor=st.sampled_from(["rg1", "tb-up", "trap1-depth", "inspection", "x"]),
       ref=st.none() | st.integers(min_value=0, max_value=2**45))
def test_any_row_gives_a_result(cells: dict[str, str], sensor: str, ref: int | None) -> None:
    cells = {"site": SITE, "sensor": sensor, **cells}
    result = parse_row(CONFIG, cells, when=TimeRule(ref, ref))
    assert isinstance(result, (Reading, Inspection, Rejection))


# --------------------------------------------------------------------------- RowParser


# Mostly empty cells, so that many rows are plain rows of one kind (the fast path).
_CELLS = st.sampled_from([""] * 24 + ["0", "7", "-3", "12.0", "0.25", " 4 ", "1e3", "nan",
                                      "inf", "abc", "99999999", "2.5", "3.9", "61"])
_TS = st.sampled_from([ISO, "2026-05-01T11:59:00", "2026-04-20T00:00:00Z", str(REF_S - 60),
                       "", "yesterday", " 2026-05-01T11:00:00Z", "2026-05-01T11:59:00.5+02:00",
                       "1e9", "-5"])
_HEADER = ["ts", "site", "sensor", "tips_total", "precip_in", "seq", "ntu", "temp_c",
           "depth_in", "distance_in", "battery_v", "inspector", "kind"]


@settings(max_examples=400, deadline=None)
@given(ts=_TS, site=st.sampled_from([SITE, "site-b", "site-z", ""]),
       sensor=st.sampled_from(["rg1", "tb-up", "trap1-depth", "inspection", "zz", ""]),
       cells=st.lists(_CELLS, min_size=8, max_size=8),
       inspector=st.sampled_from(["", "J. Rivera"]), kind=st.sampled_from(["", "storm", "x"]),
       ref=st.sampled_from([None, REF]), now=st.sampled_from([None, REF, REF - MS_PER_DAY]),
       zone=st.sampled_from([None, "site", ZoneInfo("Asia/Tokyo")]))
def test_row_parser_is_parse_row(ts: str, site: str, sensor: str, cells: list[str],
                                 inspector: str, kind: str, ref: int | None, now: int | None,
                                 zone: NaiveZone) -> None:
    """The replay's fast path gives exactly what ``parse_row`` gives: the same input or
    the same rejection, reason and detail, whatever the wall clock of the run and the
    zone of times without an offset."""
    row = [ts, site, sensor, *cells, inspector, kind]
    parser = RowParser(CONFIG, _HEADER, now_ms=now, zone=zone)
    # Every site's reference the same (replay keeps one per site: admission.SiteNewest).
    fast = parser.parse(row, refs={} if ref is None else {s: ref for s in (SITE, "site-b")})
    slow = parse_row(CONFIG, {k: v for k, v in zip(_HEADER, row, strict=True) if v},
                     when=TimeRule(now, ref, zone))
    assert fast == slow


def test_row_parser_takes_plain_rows_on_its_fast_path() -> None:
    parser = RowParser(CONFIG, _HEADER)
    row = [ISO, SITE, "rg1", "12", "", "", "", "", "", "", "3.9", "", ""]
    assert parser._fast(row, {SITE: REF}) == Reading(SITE, "rg1", "rain", TS, tips_total=12,
                                              battery_v=3.9)
    # Outside the window, and a cell that is no plain number: the general path says why.
    assert parser._fast(["2026-04-20T00:00:00Z", *row[1:]], {SITE: REF}) is None
    assert parser._fast([ISO, SITE, "rg1", "12.0", *row[4:]], {SITE: REF}) is None


def test_an_action_may_say_it_is_routine_maintenance() -> None:
    """``kind: maintenance`` on an action (the permit's shorter deadline); without it a
    corrective action, written as before so every earlier journal row keeps its bytes."""
    actions = [{"text": "clean the inlet", "kind": "maintenance"}, {"text": "new fence"}]
    got = mqtt("site-a/inspection", {"ts": ISO, "inspector": "J", "corrective_actions": actions})
    assert isinstance(got, Inspection), got
    assert [a.kind for a in got.corrective_actions] == ["maintenance", "corrective"]
    rows = [a.to_json() for a in got.corrective_actions]
    assert [sorted(r) for r in rows] == [["due_ms", "id", "kind", "text"], ["due_ms", "id", "text"]]
    assert Inspection.from_json(json.loads(json.dumps(got.to_json()))) == got
    bad = mqtt("site-a/inspection", {"ts": ISO, "inspector": "J", "corrective_actions": [
        {"text": "clean the inlet", "kind": "repair"}]})
    assert isinstance(bad, Rejection) and bad.reason is RejectReason.bad_value
    assert bad.detail == ("corrective_actions.0.kind: must be corrective or maintenance, "
                          "got 'repair'")
