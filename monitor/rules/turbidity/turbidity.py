"""Turbidity contrast between a background probe and a probe below the discharge.

§ 134-8C of the chapter: land development "shall not cause an increase in
turbidity that will result in substantial visible contrast to natural
conditions in surface waters". The chapter gives no number; a pair's ``rule``
supplies one (``limit_ntu``): a fixed ``delta_ntu`` over background, or the
preset ``wa-173-201a`` taken from Washington's water-quality standards.

Theory of operation
-------------------
One ``PairFold`` watches one pair. It sees the readings of both probes merged
in event-time order and runs four small machines over them:

*Alignment.* Each downstream reading at t is compared with the upstream
reading nearest to t within ``max_skew_minutes`` (ties go to the earlier);
failing that, with the last upstream reading at or before t that is younger
than ``background_max_age_minutes``; failing that, its contrast is unknown.
The nearest upstream may lie after t, so a downstream reading waits in
``pending`` until an input later than t + max_skew has been folded: from then
on no upstream reading that could be chosen is missing from the prefix. Time
passing without input (``advance``, always on a copy) evaluates whatever is
pending with the upstream readings known so far, which is the best answer
available now and is replaced as soon as the real neighbours arrive.

*Episode.* Evaluated readings drive ``TRANSITIONS`` (below); readings of
unknown contrast are not inputs to it. Two moves depend on elapsed time and
are written beside the table: a pending episode becomes ``exceeded`` once an
exceeding reading comes ``sustain_minutes`` after its start, and a clearing
episode becomes ``ok`` once a non-exceeding reading comes ``clear_minutes``
after clearing began. Each of those two moves emits ``turbidity_contrast``
with ``basis: "background"``.

*Absolute episode.* A dead or silent upstream probe must not hide gross
turbidity, so a downstream reading without a background is compared with the
pair's ``absolute_ntu`` instead (above it exceeds; ``null`` turns this off) and
drives a second episode through the same ``TRANSITIONS``, the same
``sustain_minutes`` and ``clear_minutes``; its facts have ``basis:
"absolute"``, null upstream fields, ``limit_ntu = absolute_ntu`` and ids of
their own (``"absolute"`` among the parts). It ends in two ways: after
``clear_minutes`` below the limit, as the background episode does, so a probe
that stays dead still closes what it opened; and at the first downstream
reading that has a background again (``cleared`` at that reading if it was
exceeded, forgotten if only pending), because the chapter's measure is the
contrast with background: once it can be measured, it alone decides, judged
on its own readings from its own state and never seeded by the absolute one.
The absolute episode is fed only while the background episode is ``ok`` or
``pending``: one that is ``exceeded`` or ``clearing`` already stands for the
pair and waits for a background, as before. With the handover this keeps the
two from being ``exceeded`` at once.

*Probe faults.* ``background_missing`` once per run of downstream readings
without a background, ``pegged`` once per run of readings of one probe at or
above its full scale (``max_ntu``). A pegged downstream reading is still
compared as read: it can only understate the contrast. A pegged *upstream*
reading is no usable background (monitor/README.md, "The rules"): the true background is
somewhere above full scale, unknown, and the contrast with it would be an
invention; the downstream reading goes to the absolute episode instead, as
when no upstream reading exists (``pegged`` has said why, so no
``background_missing`` is added).

*Suspect probes* (``suspect_delta_ntu``; off by default). Background above
the discharge should not read far above the water below it: when the
upstream reading a downstream reading is aligned with (pegged or not: a
pegged one is at least that high) exceeds it by more than
``suspect_delta_ntu`` at every aligned reading for ``suspect_hours``,
``probes_suspect`` says so once (swapped probes, or the upstream probe in a
plume); the run ends at the first aligned reading that does not. A
downstream reading without any upstream reading neither extends nor ends it.

*Unknown runs* (monitor/README.md: turbidity that cannot be checked is said). Each
instant the contrast is known, or unknown for one reason, worst first:
``downstream_stale`` (no downstream reading for the probe's
``stale_after_minutes``, or none yet), ``downstream_pegged`` (at full scale the
reading can only understate the contrast: how large it is is unknown) or
``background_missing`` (no usable upstream reading; the absolute rule may still
judge the level alone, not the contrast with natural conditions). Each
evaluated downstream reading sets the reason from its own time on; a silence is
concluded at the first input, or the tail's *now*, past it. A stretch of one
reason is a *run*, the internal fact ``_turbidity_unknown`` (``since`` null:
from before the first reading; ``until`` null: still open), made when it begins
and again, same id, when it ends. ``unmonitored.py`` decides from them what a
person is told.

The state is a function of the sorted input prefix only (``timeline.py``), so
late and repeated readings cannot change the outcome. NTU are integers in
milli-NTU, limits in 1e-4 NTU: compared exactly (``contrast.py``, the rule).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from ...config import SensorConfig, TurbidityPair
from ...contract.events import (
    BackgroundMissing,
    Fact,
    Pegged,
    ProbesSuspect,
    TurbidityContrast,
    TurbidityUnknown,
    UnknownReason,
    make_id,
)
from ...contract.inputs import Reading
from ...contract.times import MS_PER_HOUR, iso, minutes_ms
from ..readout import PairSummary
from .contrast import E4_PER_MILLI, E4_PER_NTU, allowed_e4, milli, ntu_of

UP, DOWN, OTHER = 0, 1, 2

Episode = Literal["ok", "pending", "exceeded", "clearing"]
Basis = Literal["background", "absolute"]
Emit = Literal["exceeded", "cleared"]

#: (episode, the reading exceeds its limit) -> next episode.
#: The timed moves pending -> exceeded and clearing -> ok are in ``_move``.
TRANSITIONS: dict[tuple[Episode, bool], Episode] = {
    ("ok", False): "ok",
    ("ok", True): "pending",            # s = t: the episode may be starting
    ("pending", False): "ok",           # did not persist: forgotten, nothing emitted
    ("pending", True): "pending",       # -> exceeded once t - s >= sustain
    ("exceeded", False): "clearing",    # c = t
    ("exceeded", True): "exceeded",
    ("clearing", False): "clearing",    # -> ok once t - c >= clear
    ("clearing", True): "exceeded",     # relapse: same episode, no new event
}


def _ts(pair: tuple[int, int]) -> int:
    return pair[0]


# --------------------------------------------------------------------------- the fold


@dataclass(slots=True)
class PairState:
    """Alignment buffers, episode and probe-fault flags of one pair."""

    #: Upstream (ts_ms, milli-NTU) that a pending or future reading may still use.
    ups: deque[tuple[int, int]] = field(default_factory=deque)
    #: Downstream (ts_ms, milli-NTU) not yet evaluated, in event order.
    pending: deque[tuple[int, int]] = field(default_factory=deque)
    episode: Episode = "ok"
    started: int | None = None
    clearing_since: int | None = None
    missing: bool = False
    up_pegged: bool = False
    down_pegged: bool = False
    #: The last evaluated downstream reading: (ts, up_m or None without a background,
    #: down_m, limit_e4). limit_e4 is the allowed increase over up_m; without a
    #: background it is the absolute level if the absolute episode took the reading,
    #: else None.
    last: tuple[int, int | None, int, int | None] | None = None
    #: The absolute episode (readings without a background against ``absolute_ntu``).
    abs_episode: Episode = "ok"
    abs_started: int | None = None
    abs_clearing_since: int | None = None
    #: The run of aligned readings with upstream far above downstream: (since_ms, said).
    suspect: tuple[int, bool] | None = None
    #: Whether the pair has had an input (the run before its first reading is open).
    heard: bool = False
    #: The open unknown run: (since_ms or None from before the first reading, reason,
    #: its fact's time); None while the contrast is known.
    unknown: tuple[int | None, UnknownReason, int] | None = None
    #: The time of the last evaluated downstream reading (silences are measured from it).
    last_down: int | None = None


class PairFold:
    """The § 134-8C contrast rule over one upstream/downstream pair of probes."""

    def __init__(self, site: str, pair: TurbidityPair, upstream: SensorConfig,
                 downstream: SensorConfig) -> None:
        self.site = site
        self.pair = pair
        self.upstream = upstream
        self.downstream = downstream
        self.skew_ms = minutes_ms(pair.max_skew_minutes)
        self.max_age_ms = minutes_ms(pair.background_max_age_minutes)
        self.sustain_ms = minutes_ms(pair.sustain_minutes)
        self.clear_ms = minutes_ms(pair.clear_minutes)
        # A pending reading is at least newest - skew, and may use an upstream
        # reading down to skew (nearest) or max_age (fallback) before itself.
        self.keep_ms = self.skew_ms + max(self.skew_ms, self.max_age_ms)
        self.up_max_m = milli(upstream.max_ntu_value)
        self.down_max_m = milli(downstream.max_ntu_value)
        self.absolute_m = None if pair.absolute_ntu is None else milli(pair.absolute_ntu)
        self.suspect_m = (None if pair.suspect_delta_ntu is None
                          else milli(pair.suspect_delta_ntu))
        self.suspect_ms = round(pair.suspect_hours * MS_PER_HOUR)
        self.down_stale_ms = minutes_ms(downstream.silent_after_minutes)

    # ---------------------------------------------------------------- Fold protocol

    def initial(self) -> PairState:
        return PairState()

    def key(self, item: Reading) -> tuple[Any, ...]:
        role = self._role(item)
        if role == OTHER or item.ntu is None:
            return (item.ts_ms, OTHER, 0)
        return (item.ts_ms, role, milli(item.ntu))

    def step(self, state: PairState, item: Reading, out: list[Fact]) -> None:
        role = self._role(item)
        if role == OTHER or item.ntu is None:
            return
        ts, ntu_m = item.ts_ms, milli(item.ntu)
        if not state.heard:
            state.heard = True
            self._open_run(state, None, "downstream_stale", ts, out)
        pending = state.pending
        # Every upstream reading up to ts has been folded: a downstream reading
        # more than max_skew older can no longer gain a nearer neighbour.
        while pending and pending[0][0] + self.skew_ms < ts:
            t, down_m = pending.popleft()
            self._evaluate(state, t, down_m, out)
        self._check_silence(state, ts, out)
        if role == UP:
            self._check_pegged(state, UP, ts, ntu_m, out)
            state.ups.append((ts, ntu_m))
        else:
            self._check_pegged(state, DOWN, ts, ntu_m, out)
            pending.append((ts, ntu_m))
        ups = state.ups
        horizon = ts - self.keep_ms
        while ups and ups[0][0] < horizon:
            ups.popleft()

    def advance(self, state: PairState, now_ms: int, out: list[Fact]) -> None:
        """Evaluate what is pending with the upstream readings known so far (on a copy)."""
        while state.pending:
            t, down_m = state.pending.popleft()
            self._evaluate(state, t, down_m, out)
        self._check_silence(state, now_ms, out)

    def copy(self, state: PairState) -> PairState:
        return PairState(deque(state.ups), deque(state.pending), state.episode, state.started,
                         state.clearing_since, state.missing, state.up_pegged,
                         state.down_pegged, state.last, state.abs_episode, state.abs_started,
                         state.abs_clearing_since, state.suspect, state.heard, state.unknown,
                         state.last_down)

    def dump(self, state: PairState) -> Any:
        return {
            "ups": [list(p) for p in state.ups],
            "pending": [list(p) for p in state.pending],
            "episode": state.episode,
            "started": state.started,
            "clearing_since": state.clearing_since,
            "missing": state.missing,
            "up_pegged": state.up_pegged,
            "down_pegged": state.down_pegged,
            "last": None if state.last is None else list(state.last),
            "abs_episode": state.abs_episode,
            "abs_started": state.abs_started,
            "abs_clearing_since": state.abs_clearing_since,
            "suspect": None if state.suspect is None else list(state.suspect),
            "heard": state.heard,
            "unknown": None if state.unknown is None else list(state.unknown),
            "last_down": state.last_down,
        }

    def load(self, data: Any) -> PairState:
        last, suspect, unknown = data["last"], data.get("suspect"), data.get("unknown")
        return PairState(
            deque((ts, m) for ts, m in data["ups"]),
            deque((ts, m) for ts, m in data["pending"]),
            data["episode"], data["started"], data["clearing_since"], data["missing"],
            data["up_pegged"], data["down_pegged"],
            None if last is None else (last[0], last[1], last[2], last[3]),
            # A dump from before the absolute episode existed had none open.
            data.get("abs_episode", "ok"), data.get("abs_started"),
            data.get("abs_clearing_since"),
            None if suspect is None else (suspect[0], suspect[1]),
            bool(data.get("heard", False)),
            None if unknown is None else (unknown[0], unknown[1], unknown[2]),
            data.get("last_down"))

    # ---------------------------------------------------------------- status

    def shown(self, state: PairState) -> tuple[Episode, Basis | None, int | None]:
        """The episode to show for the pair, its basis and its start (ms).

        The absolute one while it is open: the background one is then ``ok`` or a
        ``pending`` left from before the background was lost. Else the background one.
        """
        if state.abs_episode != "ok":
            return state.abs_episode, "absolute", state.abs_started
        if state.episode != "ok":
            return state.episode, "background", state.started
        return "ok", None, None

    def summary(self, state: PairState) -> PairSummary:
        """The pair's entry of ``status --json``, as far as its readings tell.

        ``state`` is the episode ``shown``, or ``unknown`` while that is ``ok`` but
        the latest downstream reading gives no contrast (no usable background, the
        probe pegged, or none evaluated yet); ``basis`` is the shown episode's (null
        when ``ok``). Pending readings count, evaluated provisionally on a copy. Why
        and since when it is unknown is the site's (``summary.pair_at``).
        """
        scratch = self.copy(state)
        self.advance(scratch, 0, [])
        shown, basis, started = self.shown(scratch)
        stale = self.down_stale_ms / 60_000
        if scratch.last is None:
            return PairSummary("unknown" if shown == "ok" else shown, basis,
                               started_ms=started, stale_after_minutes=stale)
        t, up_m, down_m, limit_e4 = scratch.last
        limit = None if limit_e4 is None else round(limit_e4 / E4_PER_NTU, 3)
        known = up_m is not None and limit_e4 is not None and down_m < self.down_max_m
        state_word = "unknown" if shown == "ok" and not known else shown
        if up_m is None or limit_e4 is None:
            return PairSummary(state_word, basis, limit_ntu=limit if basis == "absolute" else None,
                               downstream_ntu=ntu_of(down_m), at_ms=t, started_ms=started,
                               stale_after_minutes=stale)
        return PairSummary(state_word, basis, ntu_of(down_m - up_m), limit, ntu_of(up_m),
                           ntu_of(down_m), t, started, stale_after_minutes=stale)

    # ---------------------------------------------------------------- internals

    def _role(self, item: Reading) -> int:
        if item.sensor == self.pair.upstream:
            return UP
        if item.sensor == self.pair.downstream:
            return DOWN
        return OTHER

    def _background(self, ups: deque[tuple[int, int]], t: int) -> tuple[int, int] | None:
        """The upstream reading a downstream reading at ``t`` is compared with."""
        j = bisect_right(ups, t, key=_ts)
        before = ups[j - 1] if j else None
        after = ups[j] if j < len(ups) else None
        best = before if before is not None and t - before[0] <= self.skew_ms else None
        if after is not None and after[0] - t <= self.skew_ms and (
                best is None or after[0] - t < t - best[0]):
            best = after
        if best is None and before is not None and t - before[0] < self.max_age_ms:
            best = before
        return best

    def _evaluate(self, state: PairState, t: int, down_m: int, out: list[Fact]) -> None:
        background = self._background(state.ups, t)
        if background is not None:
            self._suspect_step(state, t, background[1], down_m, out)
        # No usable background: none at all, or a pegged one (module docstring).
        usable = background if background is not None and background[1] < self.up_max_m \
            else None
        # The silence before this reading, then what this reading leaves unknown.
        self._check_silence(state, t, out, next_reading=True)
        state.last_down = t
        self._set_unknown(state, t, "downstream_pegged" if down_m >= self.down_max_m
                          else "background_missing" if usable is None else None, out)
        if usable is None:
            abs_m = self.absolute_m if state.episode in ("ok", "pending") else None
            state.last = (t, None, down_m, None if abs_m is None else abs_m * E4_PER_MILLI)
            if not state.missing and background is None:
                state.missing = True
                out.append(self._probe_fact(self.upstream.id, t, BackgroundMissing(
                    sensor=self.upstream.id, pair=self.pair.id, downstream_ntu=ntu_of(down_m))))
            if abs_m is not None:
                self._absolute_step(state, t, down_m > abs_m, down_m, out)
            return
        state.missing = False
        # The handover comes first: the background episode may reach exceeded on this
        # very reading, and the absolute one must be closed by then.
        self._end_absolute(state, t, down_m, out)
        up_at, up_m = usable
        limit_e4 = allowed_e4(self.pair, up_m)
        state.last = (t, up_m, down_m, limit_e4)
        exceeding = (down_m - up_m) * E4_PER_MILLI > limit_e4
        self._episode_step(state, t, exceeding, up_at, up_m, down_m, limit_e4, out)

    def _suspect_step(self, state: PairState, t: int, up_m: int, down_m: int,
                      out: list[Fact]) -> None:
        """The suspect-probes run (module docstring), at one aligned reading."""
        if self.suspect_m is None:
            return
        if up_m - down_m <= self.suspect_m:
            state.suspect = None
            return
        if state.suspect is None:
            state.suspect = (t, False)
        since, said = state.suspect
        if said or t - since < self.suspect_ms:
            return
        state.suspect = (since, True)
        delta = self.pair.suspect_delta_ntu
        out.append(Fact(self.site, t, make_id("probes_suspect", self.site, self.pair.id, since),
                        ProbesSuspect(pair=self.pair.id, upstream_ntu=ntu_of(up_m),
                                      downstream_ntu=ntu_of(down_m),
                                      hours=round((t - since) / MS_PER_HOUR, 2),
                                      since=iso(since), upstream=self.upstream.id,
                                      downstream=self.downstream.id,
                                      suspect_delta_ntu=float(delta or 0.0))))

    def _move(self, before: Episode, started: int | None, clearing_since: int | None, t: int,
              exceeding: bool) -> tuple[Episode, int | None, int | None, Emit | None]:
        """One step of an episode: (episode, started, clearing_since, what to emit)."""
        after = TRANSITIONS[(before, exceeding)]
        if after == "pending" and before == "ok":
            started = t
        elif after == "clearing" and before == "exceeded":
            clearing_since = t
        # The timed moves; checked on entry too, so a zero duration fires at once.
        emit: Emit | None = None
        if after == "pending" and started is not None and t - started >= self.sustain_ms:
            after, emit = "exceeded", "exceeded"
        elif after == "clearing" and clearing_since is not None \
                and t - clearing_since >= self.clear_ms:
            after, emit = "ok", "cleared"
        return after, started, clearing_since, emit

    def _absolute_step(self, state: PairState, t: int, exceeding: bool, down_m: int,
                       out: list[Fact]) -> None:
        state.abs_episode, state.abs_started, state.abs_clearing_since, emit = self._move(
            state.abs_episode, state.abs_started, state.abs_clearing_since, t, exceeding)
        if emit is None or state.abs_started is None:
            return
        out.append(self._absolute_fact(emit, t, state.abs_started, down_m))
        if state.abs_episode == "ok":
            state.abs_started = state.abs_clearing_since = None

    def _end_absolute(self, state: PairState, t: int, down_m: int, out: list[Fact]) -> None:
        """A background is back: an exceeded absolute episode is cleared, a pending one
        forgotten (the background episode decides from now on)."""
        if state.abs_episode in ("exceeded", "clearing") and state.abs_started is not None:
            out.append(self._absolute_fact("cleared", t, state.abs_started, down_m))
        state.abs_episode, state.abs_started, state.abs_clearing_since = "ok", None, None

    def _absolute_fact(self, emit: Emit, t: int, started: int, down_m: int) -> Fact:
        absolute_ntu = self.pair.absolute_ntu
        if absolute_ntu is None:  # only called when the absolute episode runs
            raise ValueError(f"pair {self.pair.id}: no absolute_ntu")
        return Fact(self.site, t,
                    make_id("turbidity_contrast", self.site, self.pair.id, "absolute", emit,
                            started),
                    TurbidityContrast(pair=self.pair.id, state=emit, basis="absolute",
                                      started_at=iso(started), upstream_ntu=None,
                                      downstream_ntu=ntu_of(down_m), delta_ntu=None,
                                      limit_ntu=float(absolute_ntu), upstream_at=None))

    def _episode_step(self, state: PairState, t: int, exceeding: bool, up_at: int, up_m: int,
                      down_m: int, limit_e4: int, out: list[Fact]) -> None:
        state.episode, state.started, state.clearing_since, emit = self._move(
            state.episode, state.started, state.clearing_since, t, exceeding)
        if emit is None or state.started is None:
            return
        started = state.started
        out.append(Fact(self.site, t,
                        make_id("turbidity_contrast", self.site, self.pair.id, emit, started),
                        TurbidityContrast(pair=self.pair.id, state=emit, basis="background",
                                          started_at=iso(started), upstream_ntu=ntu_of(up_m),
                                          downstream_ntu=ntu_of(down_m),
                                          delta_ntu=ntu_of(down_m - up_m),
                                          limit_ntu=round(limit_e4 / E4_PER_NTU, 3),
                                          upstream_at=iso(up_at))))
        if state.episode == "ok":
            state.started = state.clearing_since = None

    def _check_pegged(self, state: PairState, role: int, ts: int, ntu_m: int,
                      out: list[Fact]) -> None:
        sensor, max_m = ((self.upstream, self.up_max_m) if role == UP
                         else (self.downstream, self.down_max_m))
        pegged = ntu_m >= max_m
        was = state.up_pegged if role == UP else state.down_pegged
        if pegged and not was:
            out.append(self._probe_fact(sensor.id, ts, Pegged(
                sensor=sensor.id, pair=self.pair.id, ntu=ntu_of(ntu_m),
                max_ntu=sensor.max_ntu_value)))
        if role == UP:
            state.up_pegged = pegged
        else:
            state.down_pegged = pegged

    def _check_silence(self, state: PairState, now_ms: int, out: list[Fact],
                       next_reading: bool = False) -> None:
        """The downstream probe has been silent since its last evaluated reading plus its
        ``stale_after_minutes``, if ``now_ms`` (its ``next_reading``, or an instant with
        none pending) is past that."""
        last = state.last_down
        if (next_reading or not state.pending) and last is not None \
                and now_ms - last > self.down_stale_ms:
            self._set_unknown(state, last + self.down_stale_ms, "downstream_stale", out)

    def _set_unknown(self, state: PairState, at_ms: int, reason: UnknownReason | None,
                     out: list[Fact]) -> None:
        """From ``at_ms`` on the contrast is unknown for ``reason`` (None: known): the open
        run ends there unless its reason is the same, and a new one begins."""
        run = state.unknown
        if (None if run is None else run[1]) == reason:
            return
        if run is not None:
            out.append(self._run_fact(run, at_ms))
            state.unknown = None
        if reason is not None:
            self._open_run(state, at_ms, reason, at_ms, out)

    def _open_run(self, state: PairState, since_ms: int | None, reason: UnknownReason,
                  at_ms: int, out: list[Fact]) -> None:
        state.unknown = (since_ms, reason, at_ms)
        out.append(self._run_fact(state.unknown, None))

    def _run_fact(self, run: tuple[int | None, UnknownReason, int], until_ms: int | None
                  ) -> Fact:
        since, reason, at = run
        return Fact(self.site, at,
                    make_id(TurbidityUnknown.TYPE, self.site, self.pair.id,
                            "start" if since is None else since, reason),
                    TurbidityUnknown(pair=self.pair.id, reason=reason,
                                     since=None if since is None else iso(since),
                                     until=None if until_ms is None else iso(until_ms)))

    def _probe_fact(self, sensor: str, ts: int, body: BackgroundMissing | Pegged) -> Fact:
        return Fact(self.site, ts, make_id(body.TYPE, self.site, self.pair.id, sensor, ts), body)
