"""MQTT messages in (sensors/README.md, "MQTT contract"): size, topic, JSON, then the rules of
``models.py``.

``parse_message`` is the daemon's one entry point for a received message; it
never raises. The cheap checks come first (``oversize``, ``bad_topic``,
``unknown_site``, ``unknown_sensor``, ``invalid_json``, ``topic_mismatch``),
then the payload goes through the same rules as a replay CSV row. Lateness is
judged here against the daemon's wall clock; a reading's ``seq`` identity is
judged at the journal commit, by the one ingest rule replay applies too
(``admission.py``).
"""

from __future__ import annotations

import json
from typing import Any

from ..config import Config
from ..contract.inputs import Inspection, MessageKind, Reading
from ..contract.rejects import Rejection, RejectReason
from ..ingest.checks import (
    ID_RE,
    INSPECTION,
    MAX_PAYLOAD_BYTES,
    TimeRule,
    sensor_message,
    show,
    site_index,
)
from ..ingest.inspections import inspection_message


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of duplicate keys; a payload saying ntu twice is
    # ambiguous, and which copy a reader believes must not be up to the parser.
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return data


def _plainly_unique(text: str) -> bool:
    """Whether ``'":'`` in ``text`` can only be a key's end: no escaped quote (the only
    way a string value holds ``":``) and no blank before a colon. Then a flat
    object with as many ``":`` as keys has no duplicate key, and the fast C
    decoder can be used without the per-object hook (a third of the parse)."""
    return '\\"' not in text and " :" not in text and "\t:" not in text \
        and "\n:" not in text and "\r:" not in text


def _decode(payload: bytes) -> dict[str, Any] | Rejection:
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return Rejection(RejectReason.invalid_json, "payload: not UTF-8")
    if _plainly_unique(text):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            return Rejection(RejectReason.invalid_json, f"payload: {str(exc)[:80]}")
        if isinstance(data, dict) and text.count('":') == len(data):
            return _whole_characters(text, data)
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKeyError as exc:
        return Rejection(RejectReason.invalid_json, f"payload: duplicate key {show(str(exc))}")
    except (ValueError, RecursionError) as exc:
        # RecursionError: 4 KiB of "[" nests deeper than the interpreter allows.
        return Rejection(RejectReason.invalid_json, f"payload: {str(exc)[:80]}")
    if not isinstance(data, dict):
        return Rejection(RejectReason.invalid_json, "payload: not a JSON object")
    return _whole_characters(text, data)


def _whole_characters(text: str, data: dict[str, Any]) -> dict[str, Any] | Rejection:
    """``data`` unless a ``\\u`` escape left half a character in it: JSON lets
    ``"\\ud800"`` through, and such a string cannot be written as UTF-8 (the
    journal commit raised on it, and the broker redelivered the message after
    every restart: the fuzz target found it). Only payloads with an escape pay."""
    if "\\u" not in text:
        return data
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return Rejection(RejectReason.invalid_json,
                         "payload: a \\u escape is half a character (a lone surrogate)")
    return data


def topic_parts(topic: str, prefix: str) -> tuple[str, str | None, str] | Rejection:
    """(site, sensor or None, ``reading``/``status``/``inspection``) of a topic under
    ``prefix``, or ``bad_topic``."""
    prefix = prefix.rstrip("/")
    if prefix:
        if not topic.startswith(prefix + "/"):
            return Rejection(RejectReason.bad_topic,
                             f"topic: {show(topic)} is not under {prefix}/")
        parts = topic[len(prefix) + 1:].split("/")
    else:
        parts = topic.split("/")
    if len(parts) == 2 and parts[1] == INSPECTION:
        site_id, sensor_id, kind_word = parts[0], None, INSPECTION
    elif len(parts) == 3 and parts[2] in ("reading", "status"):
        site_id, sensor_id, kind_word = parts
    else:
        return Rejection(RejectReason.bad_topic,
                         f"topic: {show(topic)} is not {{prefix}}/site/sensor/reading|status "
                         "or {prefix}/site/inspection")
    for name, ident in (("site", site_id), ("sensor", sensor_id)):
        if ident is not None and not ID_RE.match(ident):
            return Rejection(RejectReason.bad_topic, f"topic: {name} id {show(ident)} is invalid")
    return site_id, sensor_id, kind_word


def parse_message(config: Config, topic: str, payload: bytes, *, ref_ms: int,
                  received_ms: int | None = None, prefix: str | None = None,
                  retained: bool = False) -> Reading | Inspection | Rejection:
    """One MQTT message (sensors/README.md, "MQTT contract") as an engine input, or why it is
    rejected.

    ``topic`` is ``{prefix}/{site}/{sensor}/reading|status`` or
    ``{prefix}/{site}/inspection``; ``prefix`` defaults to
    ``config.broker.topic_prefix``. ``ref_ms`` is the reference time of the
    future / lateness checks (the daemon passes the wall clock).
    ``received_ms`` is the receipt time, when an inspection was entered
    (``ref_ms`` when not given). ``retained``: the broker's retain flag; a
    retained inspection is never recorded (``retained``: the broker sends its
    copy to every new subscription, so to the daemon at every restart). Never
    raises on any input.
    """
    if len(payload) > MAX_PAYLOAD_BYTES:
        return Rejection(RejectReason.oversize,
                         f"payload: {len(payload)} bytes, at most {MAX_PAYLOAD_BYTES}")
    parts = topic_parts(topic, config.broker.topic_prefix if prefix is None else prefix)
    if isinstance(parts, Rejection):
        return parts
    site_id, sensor_id, kind_word = parts
    site = site_index(config).get(site_id)
    if site is None:
        return Rejection(RejectReason.unknown_site, f"site: {show(site_id)} is not configured")
    if sensor_id is not None and sensor_id not in site.kinds:
        return Rejection(RejectReason.unknown_sensor,
                         f"sensor: {show(sensor_id)} is not configured for site {site.id}")

    data = _decode(payload)
    if isinstance(data, Rejection):
        return data
    for name, ident in (("site", site_id), ("sensor", sensor_id)):
        given = data.get(name)
        if ident is not None and given is not None and given != ident:
            return Rejection(RejectReason.topic_mismatch,
                             f"{name}: payload says {show(given)}, topic says {ident!r}")

    if sensor_id is None:
        if retained:
            return Rejection(RejectReason.retained, "inspection: a retained message (the"
                             " broker's kept copy) is never recorded; publish inspections"
                             " without the retain flag")
        # Entered when it reached us: an inspection dated well before is backdated.
        entered = received_ms if received_ms is not None else ref_ms
        return inspection_message(site, data, TimeRule.wall(ref_ms), entered_ms=entered,
                                  via="mqtt")
    kind: MessageKind = "status" if kind_word == "status" else site.kinds[sensor_id]
    return sensor_message(site, sensor_id, kind, data, TimeRule.wall(ref_ms))
