"""Timelines: how an event-time rule stays exact when readings arrive late or twice.

Theory of operation
-------------------
Every rule that looks at a sequence of readings (a rain gauge, a sediment
trap, a turbidity pair, one sensor's health) is written as a *fold*: a pure
``step(state, reading)`` applied to the readings in event-time order, which
appends the facts it concludes. A ``Timeline`` owns one fold and the readings
it has seen within the lateness bound, kept sorted by the fold's key:

* a reading later than all others is folded in at once (the common case, and
  the only cost a live site pays);
* a reading already present (same key: an MQTT redelivery, a duplicated CSV
  row) changes nothing;
* a late reading is inserted in its place; the fold restarts from the last
  checkpoint before it and re-runs over the readings after it. Facts produced
  by the re-run replace those produced from that point before.

Because the state at any position is a function of the readings before that
position only, the facts are a function of the *set* of readings: arrival
order and duplicates cannot change them. Checkpoints are taken every
``CHECKPOINT_EVERY`` readings, so a late reading costs at most that many steps
plus the readings after it.

Time that passes without readings (a storm ends when six dry hours have gone
by; a sensor falls silent) is the *tail*: ``advance(copy(state), now)`` is
evaluated on a copy, so a later reading that lands before ``now`` still sees
the state as the readings left it. The tail is refreshed on ``advance_to``
(the engine's tick) only, not on every reading: while a node's buffered hour
streams in, each reading would otherwise retract the last "silent since"
fact and conclude a new one, and the final set is the same either way.

Readings older than the lateness bound are folded into the *base* state and
dropped (``compact``); their facts are final. A reading that would land
before the base can no longer be merged exactly and is refused.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Generic, Protocol, TypeVar

from .events import Fact
from .inputs import Reading

S = TypeVar("S")
Key = tuple[Any, ...]

CHECKPOINT_EVERY = 64


class Fold(Protocol[S]):
    """A pure left fold over one stream of readings, in event-time order."""

    def initial(self) -> S: ...

    def key(self, item: Reading) -> Key:
        """Sort and identity key; its first element is ``item.ts_ms``."""
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


class Timeline(Generic[S]):
    """Readings of one fold within the lateness bound, and the facts they give."""

    def __init__(self, fold: Fold[S]) -> None:
        self.fold = fold
        self.base_state: S = fold.initial()
        self.base_key: Key | None = None
        self.inputs: list[tuple[Key, Reading]] = []
        self.keys: set[Key] = set()
        self.state: S = fold.copy(self.base_state)
        self.checkpoints: list[tuple[int, S]] = [(0, fold.copy(self.base_state))]
        self.produced: list[tuple[int, Fact]] = []
        self.final: dict[str, Fact] = {}
        self.tail: list[Fact] = []
        self.tail_dirty = False
        self.now_ms: int | None = None
        self.truth: dict[str, Fact] = {}

    # ------------------------------------------------------------------ queries

    @property
    def last_ts_ms(self) -> int | None:
        return self.inputs[-1][0][0] if self.inputs else None

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
        if key in self.keys:
            return None
        if self.base_key is not None and key <= self.base_key:
            raise ValueError(f"reading at {key[0]} lies before the compacted base")
        self.keys.add(key)
        changed: set[str] = set()
        inputs = self.inputs
        if not inputs or key > inputs[-1][0]:
            pos = len(inputs)
            inputs.append((key, item))
            self._fold_from(pos, changed)
        else:
            pos = bisect_left(inputs, key, key=lambda pair: pair[0])
            inputs.insert(pos, (key, item))
            self._refold(pos, changed)
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

    def compact(self, horizon_ms: int) -> None:
        """Fold readings older than ``horizon_ms`` into the base and forget them."""
        first_kept = bisect_left(self.inputs, horizon_ms, key=lambda pair: pair[0][0])
        cut_index = bisect_right([pos for pos, _ in self.checkpoints], first_kept) - 1
        cut, cut_state = self.checkpoints[cut_index]
        if cut == 0:
            return
        self.base_state = cut_state
        self.base_key = self.inputs[cut - 1][0]
        for key, _ in self.inputs[:cut]:
            self.keys.discard(key)
        del self.inputs[:cut]
        self.checkpoints = [(pos - cut, s) for pos, s in self.checkpoints[cut_index:]]
        split = bisect_left(self.produced, cut, key=lambda pair: pair[0])
        for _, fact in self.produced[:split]:
            self.final[fact.id] = fact
        self.produced = [(pos - cut, f) for pos, f in self.produced[split:]]

    # ------------------------------------------------------------------ internals

    def _fold_from(self, start: int, changed: set[str]) -> None:
        fold, state = self.fold, self.state
        out: list[Fact] = []
        for pos in range(start, len(self.inputs)):
            if pos % CHECKPOINT_EVERY == 0 and pos > self.checkpoints[-1][0]:
                self.checkpoints.append((pos, fold.copy(state)))
            fold.step(state, self.inputs[pos][1], out)
            if out:
                for fact in out:
                    self.produced.append((pos, fact))
                    self.truth[fact.id] = fact
                    changed.add(fact.id)
                out = []

    def _refold(self, pos: int, changed: set[str]) -> None:
        index = bisect_right([p for p, _ in self.checkpoints], pos) - 1
        start, cp_state = self.checkpoints[index]
        del self.checkpoints[index + 1:]
        self.state = self.fold.copy(cp_state)
        split = bisect_left(self.produced, start, key=lambda pair: pair[0])
        dropped = {fact.id for _, fact in self.produced[split:]}
        del self.produced[split:]
        changed |= dropped
        self._fold_from(start, changed)
        # Facts dropped and not produced again fall back to an earlier value, if any.
        for fid in dropped:
            self._restore_truth(fid)

    def _restore_truth(self, fid: str) -> None:
        for _, fact in reversed(self.produced):
            if fact.id == fid:
                self.truth[fid] = fact
                return
        if fid in self.final:
            self.truth[fid] = self.final[fid]
        else:
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
        return {
            "base_state": self.fold.dump(self.base_state),
            "base_key": list(self.base_key) if self.base_key is not None else None,
            "inputs": [item.to_json() for _, item in self.inputs],
            "final": [fact.to_json() for fact in self.final.values()],
            "now_ms": self.now_ms,
            # The tail as it stands (it may be due a refresh): restoring must not
            # settle it earlier than the uninterrupted engine would.
            "tail": [fact.to_json() for fact in self.tail],
            "tail_dirty": self.tail_dirty,
        }

    @classmethod
    def restore(cls, fold: Fold[S], data: dict[str, Any]) -> Timeline[S]:
        """Rebuild from ``dump()``: the readings are folded again from the base."""
        tl = cls(fold)
        tl.base_state = fold.load(data["base_state"])
        tl.base_key = tuple(data["base_key"]) if data["base_key"] is not None else None
        tl.state = fold.copy(tl.base_state)
        tl.checkpoints = [(0, fold.copy(tl.base_state))]
        for raw in data["final"]:
            fact = Fact.from_json(raw)
            tl.final[fact.id] = fact
            tl.truth[fact.id] = fact
        items = [Reading.from_json(raw) for raw in data["inputs"]]
        tl.inputs = [(fold.key(item), item) for item in items]
        tl.keys = {key for key, _ in tl.inputs}
        tl._fold_from(0, set())
        tl.now_ms = data["now_ms"]
        tl.tail = [Fact.from_json(raw) for raw in data.get("tail", [])]
        for fact in tl.tail:
            tl.truth[fact.id] = fact
        tl.tail_dirty = bool(data.get("tail_dirty", False))
        return tl
