"""Why an input was rejected: the reason codes of sensors/README.md, "MQTT contract", and a
rejection.

The codes are a contract: the same spelling appears in the dead-letter table,
the logs, ``status --json`` (``ingest.rejected``) and ``replay``'s counts. The
rules that decide them are ``ingest/checks.py``; the store names
``seq_conflict`` when its commit finds a ``seq`` reused with another body.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RejectReason(str, Enum):
    """Why an input was rejected: one code per rejection of sensors/README.md, "MQTT contract".

    Member names are the codes themselves, so the same spelling appears in
    code, logs, the dead-letter table and ``status --json`` (``ingest.rejected``).
    """

    invalid_json = "invalid_json"          # not UTF-8, not JSON, not one object, duplicate keys
    oversize = "oversize"                  # payload > 4096 bytes
    bad_topic = "bad_topic"                # topic shape, or an id not matching ID_PATTERN
    unknown_site = "unknown_site"
    unknown_sensor = "unknown_sensor"
    wrong_kind = "wrong_kind"              # a field of another sensor kind (ntu from a gauge)
    topic_mismatch = "topic_mismatch"      # payload site/sensor differ from the topic
    missing_field = "missing_field"
    not_finite = "not_finite"              # NaN or ±Infinity
    negative_value = "negative_value"
    impossible_value = "impossible_value"  # outside the physical range of FIELD_RULES
    bad_timestamp = "bad_timestamp"        # unparseable, out of range
    #: ISO 8601 without an offset (``2026-05-01T14:00:00``): which instant it names
    #: depends on a zone nobody gave (a file: ``--timezone`` gives one), or a local
    #: time a zone cannot place (the hour clocks go back names two instants, the
    #: hour they skip none).
    no_timezone = "no_timezone"
    future_timestamp = "future_timestamp"  # > 5 minutes after the reference time
    too_old = "too_old"                    # older than the site's lateness_days
    #: An *inspection* dated > 5 minutes ahead (sensors/README.md, "MQTT contract" names it apart:
    #: it would close clocks and settle notices before their time).
    future = "future"
    #: An *inspection* without ``ts``: an inspection is a fact of its own time, and
    #: stamping it with its arrival would make every redelivered or retained copy a
    #: new inspection that closes clocks nobody inspected for (sensors/README.md, "MQTT contract").
    missing_ts = "missing_ts"
    #: An *inspection* the broker delivered from its retained store: the copy every
    #: new subscription gets again, at every daemon restart, is never a record.
    retained = "retained"
    bad_value = "bad_value"                # wrong type (a string for ntu, 1.5 tips)
    #: A reading whose ``seq`` this sensor already used for another body
    #: (sensors/README.md, "MQTT contract"). Found by the journal commit, which knows what was sent
    #: before, not by ``parse_message``.
    seq_conflict = "seq_conflict"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Rejection:
    """A rejected input: the reason code and one short line naming the field;
    ``ts_ms``, for a timestamp outside the time window, is that timestamp (the
    daemon names a node whose clock is off by it)."""

    reason: RejectReason
    detail: str
    ts_ms: int | None = None
