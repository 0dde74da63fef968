"""End-to-end confirmation (sensors/README.md, "MQTT contract"): which of a node's readings the
daemon may tell it are safe, as a pure rule and a book of marks.

A PUBACK only says the broker holds a message, and a broker can still lose it.
So after each journal commit the daemon publishes, per sensor whose readings
carry ``seq``, the retained ``{prefix}/{site}/{sensor}/journaled`` message
``{"seq": N, "at": ...}``: every reading of that sensor with ``seq`` ≤ N that
the node still holds is committed by the daemon, and the node may delete it.
This module says what N is; ``daemon/confirmer.py`` publishes it.

Theory of operation
-------------------
1. **What the node holds.** A node numbers each sensor's readings one by one
   (``seq``) and deletes only a prefix of them: those a confirmation covers,
   the oldest past its buffer bound, and (in the PUBACK fallback) those
   acknowledged with everything before them. So it holds exactly the readings
   from its lowest unconfirmed ``seq`` upward, and its ``status`` says which
   that is (``oldest_seq``). Readings it dropped are below it: they cannot
   hold N back.
2. **What the daemon has.** A reading counts as *committed* once the journal
   commit that took its message returned: journaled now, journaled before (a
   redelivery), or refused for a reason that sending it again cannot change
   (it is kept in the dead letters with its raw bytes, counted and logged: a
   ``seq_conflict``, an invalid value, ``too_old``). Only
   ``future_timestamp`` is not final: the node's clock may be ahead, and the
   same reading sent again later is taken (``TRANSIENT_REASONS``).
3. **The mark.** N is the highest seq such that every seq from ``oldest_seq``
   to N is committed (``high_water_mark``): ``oldest_seq`` − 1 when
   ``oldest_seq`` itself is not, which confirms nothing the node holds and
   still shows it that this daemon confirms. A gap (a reading the broker
   lost) stops N below it until the node sends the reading again; what is
   committed above the gap is remembered (``runs``) and taken in at once when
   the gap fills.
4. **No status, no mark.** Until a status with ``oldest_seq`` came, the daemon
   cannot know what the node holds below the readings it has seen, so it
   confirms nothing (``SensorMark.seq`` is None). The newest status by its
   own ``ts`` wins; a stale one only understates ``oldest_seq``, which never
   confirms too much. An ``oldest_seq`` lower than before (a node that lost
   its buffer and numbers again) forgets what was known above it: the caller
   looks it up in the journal again (``ConfirmBook.status`` says so).
5. **Restarts.** The book is kept in ``meta`` (``CONFIRM_META``: each sensor's
   ``oldest_seq``, status time, node mode and N). What was committed after
   the last write is found again in the journal, walking up from N
   (``daemon/confirmer.py``); anything missed there comes back as a duplicate
   when the node sends its unconfirmed readings again.

The rule never confirms a reading the daemon has not committed: N only moves
over committed seqs, from a lower bound of what the node holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from ..contract.rejects import RejectReason
from ..store.sourcenotes import CONFIRM_META, CONFIRM_MODES, confirm_notes, is_seq

#: The topic kind of a confirmation: ``{prefix}/{site}/{sensor}/journaled``.
JOURNALED: Final = "journaled"
#: Rejections that sending the same reading again may not repeat (see 2 above).
TRANSIENT_REASONS: Final = frozenset({RejectReason.future_timestamp})
#: Rejections before the payload was read: the message names no seq we can trust.
UNREAD_REASONS: Final = frozenset({RejectReason.oversize, RejectReason.bad_topic,
                                   RejectReason.unknown_site, RejectReason.unknown_sensor,
                                   RejectReason.invalid_json, RejectReason.topic_mismatch})
#: Committed runs remembered above a gap, per sensor; beyond it the highest are
#: forgotten (they come back when the node sends them again).
MAX_RUNS: Final = 64

#: An inclusive range of committed seqs.
Run = tuple[int, int]
#: (site, sensor)
Key = tuple[str, str]


def high_water_mark(oldest_seq: int, committed: Sequence[Run]) -> int:
    """N of sensors/README.md, "MQTT contract": the highest seq such that every seq from
    ``oldest_seq`` to N is in ``committed`` (sorted, disjoint, non-adjacent runs, as ``merge_runs``
    makes them); ``oldest_seq - 1`` when ``oldest_seq`` is not committed.

    >>> high_water_mark(10, [(3, 12), (14, 20)])
    12
    >>> high_water_mark(10, [(11, 20)])
    9
    """
    mark = oldest_seq - 1
    for lo, hi in committed:
        if hi <= mark:
            continue
        if lo > mark + 1:
            break
        mark = hi
    return mark


def merge_runs(runs: Sequence[Run], seqs: Iterable[int]) -> tuple[Run, ...]:
    """``runs`` with ``seqs`` added, as sorted disjoint runs, adjacent ones joined."""
    points = sorted(set(seqs))
    added: list[Run] = []
    for s in points:
        if added and s == added[-1][1] + 1:
            added[-1] = (added[-1][0], s)
        else:
            added.append((s, s))
    out: list[Run] = []
    for lo, hi in sorted([*runs, *added]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SensorMark:
    """What the daemon knows of one sensor: the node's ``oldest_seq`` (None until a
    status said it), the ``ts`` of that status, the node's mode, and the runs of
    committed seqs from ``oldest_seq`` up (see the module docstring)."""

    oldest_seq: int | None = None
    status_ms: int | None = None
    mode: str | None = None
    runs: tuple[Run, ...] = ()

    @property
    def seq(self) -> int | None:
        """N, the mark to publish; None while no status said what the node holds."""
        if self.oldest_seq is None:
            return None
        return high_water_mark(self.oldest_seq, self.runs)

    def committed(self, seqs: Iterable[int]) -> SensorMark:
        """With these seqs committed."""
        return replace(self, runs=self._kept(merge_runs(self.runs, seqs)))

    def committed_run(self, lo: int, hi: int) -> SensorMark:
        """With every seq from ``lo`` to ``hi`` committed (found in the journal)."""
        return replace(self, runs=self._kept(merge_runs([*self.runs, (lo, hi)], ())))

    def told(self, oldest_seq: int | None, status_ms: int, mode: str | None) -> SensorMark:
        """With a status of the node (``ts`` ``status_ms``); an older one than the last
        changes nothing."""
        if self.status_ms is not None and status_ms < self.status_ms:
            return self
        oldest = self.oldest_seq if oldest_seq is None else oldest_seq
        return replace(self, oldest_seq=oldest, status_ms=status_ms,
                       mode=mode if mode is not None else self.mode)._pruned()

    def _pruned(self) -> SensorMark:
        return replace(self, runs=self._kept(self.runs))

    def _kept(self, runs: tuple[Run, ...]) -> tuple[Run, ...]:
        if self.oldest_seq is not None:
            runs = tuple(r for r in runs if r[1] >= self.oldest_seq)
        return runs[:MAX_RUNS]


class ConfirmBook:
    """The marks of every sensor, and which have news to publish (``due``)."""

    def __init__(self) -> None:
        self.marks: dict[Key, SensorMark] = {}
        #: Sensors with input since their mark was last taken for publishing.
        self.due: set[Key] = set()
        #: Changed since last written to ``meta``.
        self.dirty = False

    def committed(self, key: Key, seqs: Iterable[int]) -> None:
        """Readings of ``key`` committed by a journal commit that has returned."""
        self.marks[key] = self.marks.get(key, SensorMark()).committed(seqs)
        self.due.add(key)
        self.dirty = True

    def journaled(self, key: Key, lo: int, hi: int) -> None:
        """The journal holds every reading of ``key`` from ``lo`` to ``hi``."""
        self.marks[key] = self.marks.get(key, SensorMark()).committed_run(lo, hi)
        self.due.add(key)
        self.dirty = True

    def status(self, key: Key, status_ms: int, oldest_seq: int | None,
               mode: str | None) -> bool:
        """A status of the node, committed; True when its ``oldest_seq`` went down (the
        caller looks the sensor's readings up in the journal again from there)."""
        before = self.marks.get(key, SensorMark())
        after = before.told(oldest_seq, status_ms, mode)
        self.marks[key] = after
        self.due.add(key)
        self.dirty = True
        return (before.oldest_seq is not None and after.oldest_seq is not None
                and after.oldest_seq < before.oldest_seq)

    def take_due(self) -> dict[Key, int]:
        """The sensors due for publishing that have a mark, with it; they are no longer
        due (those without a mark stay out until a status comes)."""
        out = {}
        for key in self.due:
            seq = self.marks[key].seq
            if seq is not None:
                out[key] = seq
        self.due.clear()
        return out

    def meta(self) -> dict[str, int | str]:
        """The book as the ``meta`` value to write when it changed (the caller clears
        ``dirty`` once written), else nothing."""
        if not self.dirty:
            return {}
        return {CONFIRM_META: json.dumps(
            {f"{site}/{sensor}": {"oldest_seq": m.oldest_seq, "status_ms": m.status_ms,
                                  "confirm": m.mode, "seq": m.seq}
             for (site, sensor), m in sorted(self.marks.items())}, separators=(",", ":"))}

    @classmethod
    def from_meta(cls, text: str | int | None) -> ConfirmBook:
        """The book as ``meta`` kept it; empty when there is none or it is unreadable."""
        book = cls()
        for name, note in confirm_notes(text).items():
            site, _, sensor = name.partition("/")
            oldest, seq = note.get("oldest_seq"), note.get("seq")
            if not sensor or (oldest is not None and not is_seq(oldest)):
                continue
            runs: tuple[Run, ...] = ()
            if isinstance(oldest, int) and isinstance(seq, int) and is_seq(seq) \
                    and seq >= oldest:
                runs = ((oldest, seq),)
            status_ms = note.get("status_ms")
            mode = note.get("confirm")
            book.marks[(site, sensor)] = SensorMark(
                oldest, status_ms if isinstance(status_ms, int) else None,
                mode if mode in CONFIRM_MODES else None, runs)
        return book


# --------------------------------------------------------------------------- the messages


def status_fields(payload: bytes) -> tuple[int | None, str | None]:
    """``oldest_seq`` and ``confirm`` of an accepted status payload; None for either
    that is absent or not what the contract says (it is then not believed)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    oldest, mode = data.get("oldest_seq"), data.get("confirm")
    return (oldest if is_seq(oldest) else None), (mode if mode in CONFIRM_MODES else None)


def rejected_seq(reason: RejectReason, payload: bytes) -> int | None:
    """The seq of a rejected reading that counts as committed (module docstring, 2):
    None when the reason may not repeat, or the payload names no seq."""
    if reason in TRANSIENT_REASONS or reason in UNREAD_REASONS:
        return None
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    seq = data.get("seq") if isinstance(data, dict) else None
    return seq if is_seq(seq) else None


def journaled_topic(prefix: str, site: str, sensor: str) -> str:
    return f"{prefix.rstrip('/')}/{site}/{sensor}/{JOURNALED}"


def journaled_payload(seq: int, at: str) -> bytes:
    """The confirmation's payload: ``{"seq": N, "at": "<ISO UTC>"}``."""
    return json.dumps({"seq": seq, "at": at}, separators=(",", ":")).encode()
