"""Timelines: how an event-time rule stays exact when readings arrive late or twice,
in memory that does not grow with the lateness window.

Theory of operation
-------------------
Every rule that looks at a sequence of readings (a rain gauge, a sediment
trap, a turbidity pair, one sensor's health) is written as a *fold*: a pure
``step(state, reading)`` applied to the readings in event-time order, which
appends the facts it concludes. A ``Timeline`` runs one fold:

* a reading later than every other (the common case, and the only cost a live
  site pays) is folded in at once;
* a reading equal to the newest (same key: an MQTT redelivery, a duplicated
  CSV row) changes nothing;
* a late reading is put in its place: the fold restarts from the checkpoint
  before it and runs again over every reading after it. Facts produced by the
  re-run replace those produced from that point on before.

Because the state at any point is a function of the readings before it only,
the facts are a function of the *set* of readings: arrival order and
duplicates cannot change them.

What is kept, and why it is bounded. The timeline does not keep its readings
for the whole lateness window (a week of one-minute data from a hundred sites
is millions of readings). It keeps

``checkpoints``  the fold's state at the start of every hour of event time that
                 has readings (``BUCKET_MS``): the state after every reading
                 before that instant. Those older than ``recent`` are kept as
                 compact JSON text only (written once, so a snapshot stores
                 each just once, see ``daemon.Snapshots``);
``recent``       the readings of the last two such hours, so that a reading a
                 little late (two probes on two nodes, a batch that arrived
                 out of order) re-folds from memory;
``produced``     the facts concluded within the window, with the time of the
                 reading that concluded them.

A reading later than ``recent`` covers is re-folded from the timeline's
*source*: a callable that returns every reading of this stream from a given
instant on (the daemon's is the SQLite journal, see ``window.py``). Such
readings are rare (a node that buffered for hours sends its backlog *in
order*, which appends), and that re-fold costs one query. A timeline without
a source (``replay``, which reads its whole input anyway) keeps every reading
since its base in ``recent`` instead.

Time that passes without readings (a storm ends when six dry hours have gone
by; a sensor falls silent) is the *tail*: ``advance(copy(state), now)`` is
evaluated on a copy, so a later reading that lands before ``now`` still sees
the state as the readings left it. The tail is refreshed on ``advance_to``
(the engine's tick) only, not on every reading: while a node's buffered hour
streams in, each reading would otherwise retract the last "silent since"
fact and conclude a new one, and the final set is the same either way.

Compaction (``compact(horizon)``) makes the checkpoint at the horizon the
*base*: readings before it are refused from then on, and the facts they
produced are final; they leave memory (the caller keeps them elsewhere: the
daemon's store, ``replay``'s output) and ``compact`` returns their ids.

Invariant kept throughout: every hour that holds a reading has a checkpoint at
its start, and every checkpoint's state is the fold over exactly the readings
before its instant.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from ..contract.events import Fact
from ..contract.inputs import Reading
from ..contract.times import MS_PER_HOUR

S = TypeVar("S")
Key = tuple[Any, ...]

#: Checkpoints are taken at the first reading of each hour of event time.
BUCKET_MS = MS_PER_HOUR
#: The instant of the initial checkpoint: before any reading.
FIRST_MS = -(2**62)

#: Every reading of one timeline's stream at or after an instant, in journal order,
#: including the one being inserted (``window.py``).
Source = Callable[[int], Iterable[Reading]]


class Fold(Protocol[S]):
    """A pure left fold over one stream of readings, in event-time order."""

    def initial(self) -> S: ...

    def key(self, item: Reading) -> Key:
        """Sort and identity key; its first element is ``item.ts_ms``. Readings with
        equal keys are one input to the fold (the second is a duplicate)."""
        ...

    def step(self, state: S, item: Reading, out: list[Fact]) -> None:
        """Fold ``item`` into ``state`` (in place), appending concluded facts."""
        ...

    def advance(self, state: S, now_ms: int, out: list[Fact]) -> None:
        """Let time pass to ``now_ms`` with no reading; called on a copy."""
        ...

    def copy(self, state: S) -> S: ...

    def dump(self, state: S) -> Any:
        """The state as JSON-ready data."""
        ...

    def load(self, data: Any) -> S: ...


class Observer(Protocol):
    """Sees the fold's state around each step (the InfluxDB exporter derives points)."""

    def before(self, state: Any, item: Reading) -> Any: ...

    def after(self, state: Any, item: Reading, pre: Any) -> None: ...


def bucket_of(ts_ms: int) -> int:
    """The start of the checkpoint bucket holding ``ts_ms``."""
    return ts_ms - ts_ms % BUCKET_MS


def _ts(pair: tuple[Key, Reading]) -> int:
    return pair[1].ts_ms


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


def _at(cp: Checkpoint) -> int:
    return cp.at_ms


class Checkpoint:
    """The fold's state at ``at_ms`` (after every reading before it): as a state
    object while it is recent, as JSON text once frozen; never changed after."""

    __slots__ = ("at_ms", "state", "text")

    def __init__(self, at_ms: int, state: Any, text: str | None = None) -> None:
        self.at_ms = at_ms
        self.state = state
        self.text = text



class Timeline(Generic[S]):
    """One fold over one stream, exact under late and repeated readings."""

    def __init__(self, fold: Fold[S], source: Source | None = None) -> None:
        """``source`` re-reads the stream for late readings; without one, the timeline
        keeps every reading since its base in memory instead."""
        self.fold = fold
        self.source = source
        #: Readings before this instant are final and refused (None: nothing compacted).
        self.base_ms: int | None = None
        self.checkpoints: list[Checkpoint] = [Checkpoint(FIRST_MS, fold.initial())]
        self.state: S = fold.initial()
        self.last_key: Key | None = None
        self.recent: list[tuple[Key, Reading]] = []
        #: ``recent`` holds every reading from this instant on; None: none is in memory.
        self.recent_from: int | None = FIRST_MS
        self.produced: list[tuple[int, Fact]] = []
        self.truth: dict[str, Fact] = {}
        self.tail: list[Fact] = []
        self.tail_dirty = False
        self.now_ms: int | None = None
        self.observer: Observer | None = None
        #: A late reading came since the last hour began: keep ``recent`` whole.
        self._late = False

    # ------------------------------------------------------------------ queries

    @property
    def last_ts_ms(self) -> int | None:
        return self.last_key[0] if self.last_key is not None else None

    def facts(self) -> list[Fact]:
        return list(self.truth.values())

    # ------------------------------------------------------------------ changes

    def insert(self, item: Reading) -> set[str] | None:
        """Add a reading; return the ids whose fact may have changed.

        ``None`` means the reading was here already (a redelivery): nothing
        changed. A reading before the compacted base cannot be merged exactly;
        the engine refuses those before they get here (``ValueError``).
        """
        key = self.fold.key(item)
        if self.base_ms is not None and item.ts_ms < self.base_ms:
            raise ValueError(f"reading at {item.ts_ms} lies before the compacted base")
        last = self.last_key
        changed: set[str] = set()
        if last is None or key > last:
            self._append(key, item, changed)
        elif key == last or not self._insert_late(key, item, changed):
            return None
        self.tail_dirty = True
        return changed

    def advance_to(self, now_ms: int) -> set[str]:
        """Let event time pass to ``now_ms``; return ids whose fact may have changed."""
        if self.now_ms is not None and now_ms <= self.now_ms:
            if not self.tail_dirty:
                return set()
            now_ms = self.now_ms
        self.now_ms = now_ms
        changed: set[str] = set()
        self._refresh_tail(changed)
        return changed

    def compact(self, horizon_ms: int) -> list[str]:
        """Make ``horizon_ms`` (a bucket start) the base; return the ids of facts that
        became final and left memory."""
        if self.base_ms is not None and horizon_ms <= self.base_ms:
            return []
        cps = self.checkpoints
        i = bisect_left(cps, horizon_ms, key=_at)
        if i < len(cps):
            # No reading lies between the horizon and the first checkpoint after it
            # (each hour with readings has its own), so that state is the one at
            # the horizon. The checkpoint keeps its own instant too.
            cp = cps[i]
            rest = cps[i:] if cp.at_ms > horizon_ms else cps[i + 1:]
            self.checkpoints = [Checkpoint(horizon_ms, cp.state, cp.text), *rest]
        else:
            self.checkpoints = [Checkpoint(horizon_ms, self.fold.copy(self.state))]
        self.base_ms = horizon_ms
        split = bisect_left(self.produced, horizon_ms, key=_first)
        gone, after = self.produced[:split], self.produced[split:]
        if self.recent_from is not None and self.recent_from < horizon_ms:
            del self.recent[:bisect_left(self.recent, horizon_ms, key=_ts)]
            self.recent_from = horizon_ms
        live = {f.id for _, f in after} | {f.id for f in self.tail}
        final = []
        # A fact still live is not final, and its last revision before the horizon
        # stays: it is what the truth falls back to when the live one goes. (A tail
        # from a tick ahead of the readings can hold a storm end the readings then
        # concluded themselves; the next tick drops it from the tail, and without
        # this revision the storm would have no end at all.)
        kept: dict[str, tuple[int, Fact]] = {}
        for at, fact in gone:
            if fact.id in live:
                kept[fact.id] = (at, fact)
            elif self.truth.pop(fact.id, None) is not None:
                final.append(fact.id)
        self.produced = sorted(kept.values(), key=_first) + after
        return final

    # ------------------------------------------------------------------ internals

    def _text(self, cp: Checkpoint) -> str:
        if cp.text is None:
            cp.text = json.dumps(self.fold.dump(cp.state), separators=(",", ":"),
                                 allow_nan=False)
        return cp.text

    def _thaw(self, cp: Checkpoint) -> S:
        if cp.state is not None:
            state: S = self.fold.copy(cp.state)
            return state
        assert cp.text is not None
        return self.fold.load(json.loads(cp.text))

    def _append(self, key: Key, item: Reading, changed: set[str]) -> None:
        if bucket_of(item.ts_ms) > self.checkpoints[-1].at_ms:
            self._checkpoint(bucket_of(item.ts_ms), trim=not self._late)
            self._late = False
        self._step(item, changed, True)
        if self.recent_from is not None:
            self.recent.append((key, item))
        self.last_key = key

    def _checkpoint(self, bucket: int, *, trim: bool) -> None:
        previous = self.checkpoints[-1].at_ms
        self.checkpoints.append(Checkpoint(bucket, self.fold.copy(self.state)))
        if self.recent_from is None:
            # After a restore: memory covers the stream from this hour on.
            self.recent_from = bucket
            self.recent = []
        elif trim and previous > self.recent_from and self.source is not None:
            # Keep the hour before this one too: a reading late across the hour's
            # boundary is the common kind of late. While late readings keep coming
            # (a node sending its backlog, the other probe of its pair on time)
            # nothing is trimmed, so only the first of them reads the source.
            # (Without a source, every reading since the base stays here.)
            del self.recent[:bisect_left(self.recent, previous, key=_ts)]
            self.recent_from = previous
        if self.source is not None:
            # Older checkpoints are only text: a re-fold from them reads the source.
            for cp in reversed(self.checkpoints[:-2]):
                if cp.state is None:
                    break
                self._text(cp)
                cp.state = None

    def _step(self, item: Reading, changed: set[str], observe: bool) -> None:
        out: list[Fact] = []
        observer = self.observer if observe else None
        pre = observer.before(self.state, item) if observer is not None else None
        self.fold.step(self.state, item, out)
        if observer is not None:
            observer.after(self.state, item, pre)
        for fact in out:
            self.produced.append((item.ts_ms, fact))
            self.truth[fact.id] = fact
            changed.add(fact.id)

    def _insert_late(self, key: Key, item: Reading, changed: set[str]) -> bool:
        """Insert a reading older than the newest; False when it is a duplicate."""
        self._late = True
        index = bisect_right(self.checkpoints, item.ts_ms, key=_at) - 1
        start = self.checkpoints[index].at_ms
        if self.recent_from is not None and start >= self.recent_from:
            lo = bisect_left(self.recent, start, key=_ts)
            kept, inputs = self.recent[:lo], self.recent[lo:]
            pos = bisect_left(inputs, key, key=_first)
            if pos < len(inputs) and inputs[pos][0] == key:
                return False
            inputs.insert(pos, (key, item))
            self.recent = kept
        else:
            from_source = self._from_source(start, key, item)
            if from_source is None:
                return False
            inputs = from_source
            self.recent, self.recent_from = [], start
        self._refold(index, inputs, key, changed)
        return True

    def _from_source(self, start: int, key: Key, item: Reading
                     ) -> list[tuple[Key, Reading]] | None:
        """The stream from ``start`` on, read from the source, with ``item`` in place;
        None when another reading with ``item``'s key is already there."""
        if self.source is None:
            raise ValueError("a late reading needs the timeline's source, and it has none")
        by_key: dict[Key, Reading] = {}
        for reading in self.source(start):
            if reading.ts_ms < start:
                continue
            k = self.fold.key(reading)
            if k == key and reading != item:
                return None
            by_key.setdefault(k, reading)
        by_key.setdefault(key, item)
        return sorted(by_key.items(), key=_first)

    def _refold(self, index: int, inputs: list[tuple[Key, Reading]], late: Key,
                changed: set[str]) -> None:
        start = self.checkpoints[index].at_ms
        del self.checkpoints[index + 1:]
        self.state = self._thaw(self.checkpoints[index])
        split = bisect_left(self.produced, start, key=_first)
        dropped = {fact.id for _, fact in self.produced[split:]}
        del self.produced[split:]
        changed |= dropped
        for key, item in inputs:
            if bucket_of(item.ts_ms) > self.checkpoints[-1].at_ms:
                self._checkpoint(bucket_of(item.ts_ms), trim=False)
            self._step(item, changed, key >= late)
            self.recent.append((key, item))
        self.last_key = inputs[-1][0]
        # Facts dropped and not produced again fall back to an earlier value, if any.
        for fid in dropped:
            self._restore_truth(fid)

    def _restore_truth(self, fid: str) -> None:
        for _, fact in reversed(self.produced):
            if fact.id == fid:
                self.truth[fid] = fact
                return
        self.truth.pop(fid, None)

    def _refresh_tail(self, changed: set[str]) -> None:
        self.tail_dirty = False
        old = self.tail
        new: list[Fact] = []
        last = self.last_ts_ms
        if self.now_ms is not None and (last is None or self.now_ms > last):
            scratch = self.fold.copy(self.state)
            self.fold.advance(scratch, self.now_ms, new)
        if not old and not new:
            return
        self.tail = new
        for fact in old:
            changed.add(fact.id)
            self._restore_truth(fact.id)
        for fact in new:
            changed.add(fact.id)
            self.truth[fact.id] = fact

    # ------------------------------------------------------------------ persistence

    def dump(self) -> dict[str, Any]:
        """Everything but the readings, which are in the source (the journal); a
        timeline without a source includes them."""
        return {
            "base_ms": self.base_ms,
            "checkpoints": [[cp.at_ms, self._text(cp)] for cp in self.checkpoints],
            "state": self.fold.dump(self.state),
            "last_key": list(self.last_key) if self.last_key is not None else None,
            "produced": [[at, fact.to_json()] for at, fact in self.produced],
            "truth": [fact.to_json() for fact in self.truth.values()],
            "now_ms": self.now_ms,
            # The tail as it stands (it may be due a refresh): restoring must not
            # settle it earlier than the uninterrupted engine would.
            "tail": [fact.to_json() for fact in self.tail],
            "tail_dirty": self.tail_dirty,
            "readings": (None if self.source is not None
                         else [item.to_json() for _, item in self.recent]),
        }

    @classmethod
    def restore(cls, fold: Fold[S], data: dict[str, Any], source: Source | None = None
                ) -> Timeline[S]:
        """Rebuild from ``dump()``. With a source, no reading is in memory: a late one
        re-folds from ``source`` until the stream has moved on by an hour."""
        tl = cls(fold, source)
        tl.base_ms = data["base_ms"]
        tl.checkpoints = [Checkpoint(int(at), None, str(text))
                          for at, text in data["checkpoints"]]
        tl.state = fold.load(data["state"])
        tl.last_key = tuple(data["last_key"]) if data["last_key"] is not None else None
        if source is None:
            items = [Reading.from_json(raw) for raw in data["readings"] or []]
            tl.recent = [(fold.key(item), item) for item in items]
            tl.recent_from = tl.base_ms if tl.base_ms is not None else FIRST_MS
        else:
            tl.recent, tl.recent_from = [], None
        tl.produced = [(int(at), Fact.from_json(raw)) for at, raw in data["produced"]]
        tl.truth = {fact.id: fact for fact in (Fact.from_json(raw) for raw in data["truth"])}
        tl.now_ms = data["now_ms"]
        tl.tail = [Fact.from_json(raw) for raw in data["tail"]]
        tl.tail_dirty = bool(data["tail_dirty"])
        return tl
