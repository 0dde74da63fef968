"""The one ingest rule: which well-formed inputs are taken, in the daemon and in replay.

sensors/README.md, "MQTT contract": one input gives the same events and the same rejections by
reason in the daemon (MQTT) and in ``replay`` (CSV). This module holds the parts of
that rule that are not about one message alone; both paths run this code.

Theory of operation
-------------------
An input passes three gates, in this order:

1. **The payload rules** of ``ingest/checks.py``: every ``RejectReason`` but
   ``seq_conflict``. ``parse.parse_message`` (a message) and
   ``csvfile.parse_row`` (a row) both end in ``rules.sensor_message`` or
   ``ingest/inspections.py``; a time more than 5 minutes after the
   wall clock is ``future_timestamp`` in both (a file: the clock at the time of
   the run), a time without an offset ``no_timezone`` (a file may say how to
   read it: ``--timezone``).
2. **Lateness, per site**: ``too_old`` when the input's time is more than its
   site's ``lateness_days`` before that site's reference (``rules.time_window``).
   The daemon's reference is its wall clock. A file read whole has none (the
   bound exists to keep a live daemon's memory bounded; ``sources/filerows.py``
   puts its rows in event time instead); read in arrival order (``replay
   --arrival-order``) the reference is the site's newest accepted row
   (``SiteNewest``), so a file grouped by site, whose second site is older than
   the first one's newest, loses nothing for it.
3. **Identity**. ``identity`` names a body: the first ``IDENT_BYTES`` of the
   SHA-256 of its canonical JSON (``canonical``), without ``entered_ms`` (when
   an inspection reached stormwatch, which a redelivery changes). The same
   body again is a duplicate, taken once. For one sensor, ``seq`` identifies a
   reading (``msg_seq``: not a status message's): ``SeqBook.judge`` says that
   another body under a ``seq`` already seen is a ``seq_conflict`` (a node that
   reused its numbers after losing its state, or a forgery), never a second
   reading: a repeated ``{"precip_in": 0.30, "seq": 7}`` with a new ``ts`` would
   otherwise count the rain twice. The daemon's journal fills a book per batch
   from one SQL lookup of the batch's keys (``store/journal.py``), with the
   stored ``identity``; a file keeps one book for the whole file, with the
   ``fingerprint`` of each reading (the same verdicts, at a twentieth of the
   cost: a replay reads millions of rows), judged in event time when the file is
   read whole (the body of the earlier time stands), else in the file's order.

What a book holds: per sensor, each ``seq`` seen and the identity of its
first body (about 120 bytes a reading: a replay of a site-year of one-minute
readings with ``seq`` holds some 50 MB; rows without ``seq`` cost nothing).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from .inputs import Reading

#: Bytes of SHA-256 kept as an input's identity: 128 bits make a collision (which
#: would drop a reading as a "duplicate") negligible for any realistic journal, at
#: half the index size of the full digest.
IDENT_BYTES: Final = 16

#: (seq, site, sensor): what identifies a reading that carries a seq.
SeqKey = tuple[int, str, str]
#: A body's identity in a ``SeqBook``: ``identity`` (stored), or ``fingerprint`` (in memory).
Ident = bytes | int


def canonical(obj: Any) -> str:
    """The one JSON spelling of ``obj``: sorted keys, compact, UTF-8 as is.

    ``allow_nan=False``: NaN/Infinity are not JSON; ingest rejects them before
    they get here, so meeting one is a bug that must not be written to disk.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def identity(body: Mapping[str, Any], text: str | None = None) -> bytes:
    """What identifies an input's ``body`` (``Reading.to_json()``, ``Inspection.to_json()``):
    its canonical JSON without ``entered_ms``, hashed. ``text`` is ``canonical(body)``
    when the caller has it already."""
    if "entered_ms" in body:
        text = canonical({k: v for k, v in body.items() if k != "entered_ms"})
    elif text is None:
        text = canonical(body)
    return hashlib.sha256(text.encode("utf-8")).digest()[:IDENT_BYTES]


def fingerprint(reading: Reading) -> int:
    """``identity`` for one process: two readings have the same body (``to_json()``)
    exactly when they are equal (the body is all of a reading's fields, and ``-0.0``
    is read as ``0.0``: ``models.check_value``), so their hashes tell the bodies
    apart up to a 2**-64 chance. Salted per process (str hashing): never stored."""
    return hash(reading)


def msg_seq(kind: str, body: Mapping[str, Any]) -> int | None:
    """The ``seq`` that identifies an input: a reading's (``kind`` "reading" and not a
    status message), never a status message's or an inspection's."""
    if kind != "reading" or body.get("kind") == "status":
        return None
    seq = body.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


class SeqBook:
    """The seqs seen and the identity of each one's first body (module docstring, 3).

    ``earlier`` names, in a conflict's detail line, where a body seen through
    ``judge`` came from ("earlier in this batch", "earlier in the file"); one
    recorded with ``know`` names its own place (a journal row).
    """

    def __init__(self, earlier: str) -> None:
        self.earlier = earlier
        self._seen: dict[tuple[str, str], dict[int, Ident]] = {}
        self._where: dict[SeqKey, str] = {}

    def know(self, key: SeqKey, ident: Ident, where: str) -> None:
        """Record a body seen before (the journal's, found by the daemon's lookup)."""
        self._seen.setdefault((key[1], key[2]), {})[key[0]] = ident
        self._where[key] = where

    def judge(self, key: SeqKey, ident: Ident) -> str | None:
        """``None`` when the input may be taken (a seq not seen yet, which is recorded,
        or the same body again: a duplicate); else the detail line of its
        ``seq_conflict``."""
        seqs = self._seen.get((key[1], key[2]))
        if seqs is None:
            seqs = self._seen[(key[1], key[2])] = {}
        seen = seqs.get(key[0])
        if seen is None:
            seqs[key[0]] = ident
            return None
        if seen == ident:
            return None
        return (f"seq: {key[0]} of {key[1]}/{key[2]} already identifies another reading"
                f" ({self._where.get(key, self.earlier)})")


class SiteNewest:
    """Replay's lateness reference (module docstring, 2): each site's newest accepted
    input, in ms. The daemon's is its wall clock, for every site."""

    def __init__(self) -> None:
        self.by_site: dict[str, int] = {}

    def ref_ms(self, site: str) -> int | None:
        return self.by_site.get(site)

    def saw(self, site: str, ts_ms: int) -> None:
        newest = self.by_site.get(site)
        if newest is None or ts_ms > newest:
            self.by_site[site] = ts_ms
