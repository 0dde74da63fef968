"""Turbidity that cannot be checked is said: ``turbidity_unmonitored`` and ``turbidity_monitored``.

    "Any land development activity shall not cause an increase in turbidity that
    will result in substantial visible contrast to natural conditions ..."
    — Chapter 134, § 134-8C

Theory of operation
-------------------
A dead background probe, a silent or a pegged downstream probe each tell
operations (``background_missing``, ``sensor_stale``, ``pegged``); while it
lasts nobody can say whether the site meets § 134-8C, and once it has lasted
the qualified professional must hear it: a person has to look at the water.

The inputs are each pair's *unknown runs* (``turbidity.py``: stretches of
event time with one reason, the internal facts ``_turbidity_unknown``),
whether the pair has had any reading (one that never had is unknown
throughout, ``downstream_stale``), the site's first message, its active period
(``active.ActivePeriod``: ``active_since`` to ``active_until`` or a recorded
``site close``, less the ``pauses``) and *now*. The rules, numbered as the
code follows them:

1. Runs that touch (one ends where the next begins) are one *episode*: the
   contrast was unknown throughout, though the reason may have changed.
2. Monitoring starts at the later of ``active_since`` (local midnight) and the
   site's first message. A site that has sent nothing has no notice (nothing
   is deployed yet; ``sensor_stale`` says the rest), and an episode is counted
   from that start at the earliest. Before the pair's first reading its
   downstream probe is silent, so stale once its ``stale_after_minutes`` have
   passed since monitoring started (as ``sensor_stale`` with ``last_seen:
   null`` says), and unknown from then.
3. The notice falls due ``unknown_notice_hours`` into the episode's time
   within one active span: at ``max(episode start, span start) + hours`` for
   the first span in which that instant comes before both the span's end and
   the episode's end (the contrast is still unknown then). A pause or the end
   of the active period stops the count, and a new span counts afresh; one
   episode gets one notice however many spans it crosses. It exists once *now*
   has reached it.
4. ``turbidity_unmonitored`` is dated at that instant and says the reason of
   the run then; ``since`` is the episode's start. ``turbidity_monitored``
   follows at the episode's end, whatever the period: whoever was told the
   contrast is unknown hears when it is known again.

The absolute rule does not make a pair monitored: without a usable background a
downstream reading above ``absolute_ntu`` is still a ``turbidity_contrast``
(``basis: absolute``), so gross turbidity is still caught, but an increase over
natural conditions below that level, which is what § 134-8C forbids, goes
unseen. The notice says so: its ``absolute_ntu`` names the level still watched.

Ids are made of the type, site, pair and the episode's start, so a late reading
that moves the start gives a new notice and retracts the old one. Everything
here is a function of the runs, the first message, the closure and *now*, so of
the set of inputs, as the engine's invariant requires.

Bounded memory: an ended episode whose runs the pair's timeline no longer holds
(they became final there) is final too: ``settle`` names its runs and notices.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...config import SiteConfig, TurbidityPair
from ...contract.events import (
    Fact,
    TurbidityMonitored,
    TurbidityUnknown,
    TurbidityUnmonitored,
    UnknownReason,
    make_id,
)
from ...contract.times import MS_PER_HOUR, iso, minutes_ms, parse_iso
from ..active import ActivePeriod, Span, active_start_ms


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a pair (``TurbidityUnknown``): None ``since`` is from before the pair's
    first reading, None ``until`` still open; ``fact_id`` is its fact's ("" for the
    run of a pair never heard from)."""

    since_ms: int | None
    until_ms: int | None
    reason: UnknownReason
    fact_id: str = ""
    pair: str = ""

    def to_json(self) -> list[object]:
        return [self.pair, self.since_ms, self.until_ms, self.reason, self.fact_id]

    @classmethod
    def from_json(cls, data: list[Any]) -> Run:
        pair, since, until, reason, fact_id = data
        return cls(since, until, reason, str(fact_id), str(pair))


def run_of(fact: Fact) -> Run | None:
    """The run a ``_turbidity_unknown`` fact stands for (None for any other fact)."""
    b = fact.body
    if not isinstance(b, TurbidityUnknown):
        return None
    return Run(None if b.since is None else parse_iso(b.since),
               None if b.until is None else parse_iso(b.until), b.reason, fact.id, b.pair)


@dataclass(frozen=True, slots=True)
class Episode:
    """Touching runs of one pair (rule 1), in time order, each with its ``since``."""

    runs: tuple[Run, ...]

    @property
    def start_ms(self) -> int:
        return self.runs[0].since_ms or 0

    @property
    def end_ms(self) -> int | None:
        return self.runs[-1].until_ms

    @property
    def key(self) -> str:
        """What its notices' ids are made of: its first run (stable as the runs grow)."""
        return self.runs[0].fact_id or "never"

    def reason_at(self, t_ms: int) -> UnknownReason:
        """The reason of the run holding ``t_ms`` (the last one from its start on)."""
        found = self.runs[0].reason
        for run in self.runs:
            if (run.since_ms or 0) <= t_ms:
                found = run.reason
        return found


@dataclass(frozen=True, slots=True)
class Unknown:
    """A pair's open episode as ``status`` shows it: why the contrast is unknown now,
    since when, and when the notice is (or falls) due; None: no notice will come in
    the active period."""

    reason: UnknownReason
    since_ms: int
    notice_ms: int | None


def runs_by_pair(runs_of_site: Iterable[Run]) -> dict[str, list[Run]]:
    """The runs by pair, in time order."""
    out: dict[str, list[Run]] = {}
    for run in runs_of_site:
        out.setdefault(run.pair, []).append(run)
    for runs in out.values():
        runs.sort(key=lambda r: -(2**62) if r.since_ms is None else r.since_ms)
    return out


def episodes(runs: Sequence[Run]) -> list[Episode]:
    """Rule 1: the runs (in time order, each with its ``since``) joined where one ends
    as the next begins."""
    out: list[list[Run]] = []
    for run in runs:
        if out and out[-1][-1].until_ms is not None and out[-1][-1].until_ms == run.since_ms:
            out[-1].append(run)
        else:
            out.append([run])
    return [Episode(tuple(rs)) for rs in out]


def monitoring_start_ms(site: SiteConfig, first_seen_ms: int | None) -> int | None:
    """Rule 2: the later of ``active_since`` and the site's first message; None before
    the site has sent anything."""
    if first_seen_ms is None:
        return None
    start = active_start_ms(site)
    return first_seen_ms if start is None else max(start, first_seen_ms)


def pair_episodes(site: SiteConfig, pair: TurbidityPair, runs: Mapping[str, Sequence[Run]],
                  heard: Mapping[str, bool], start_ms: int) -> list[Episode]:
    """The pair's episodes from monitoring start ``start_ms`` on (rule 2). Before its
    first reading the downstream probe has been silent: stale once its
    ``stale_after_minutes`` have passed since monitoring started (as a sensor never
    heard from is, ``health.never_heard``), so that run starts then, or is empty; a
    pair never heard from is one such run, open."""
    own = list(runs.get(pair.id, ()))
    if not heard.get(pair.id, False) and not own:
        own = [Run(None, None, "downstream_stale")]
    down = site.sensor(pair.downstream)
    silent_from = start_ms + (0 if down is None else minutes_ms(down.silent_after_minutes))
    out = []
    for run in own:
        if run.since_ms is None:
            if run.until_ms is not None and run.until_ms <= silent_from:
                continue  # the first reading came before the probe was overdue
            run = replace(run, since_ms=silent_from)
        out.append(run)
    return episodes(out)


def notice_due_ms(ep: Episode, spans: Sequence[Span], notice_ms: int) -> int | None:
    """Rule 3: when the notice of ``ep`` falls due (whatever *now*), or None."""
    end = ep.end_ms
    for span_start, span_end in spans:
        if end is not None and span_start >= end:
            break  # known again before this span began
        due = max(ep.start_ms, span_start) + notice_ms
        if (span_end is None or due < span_end) and (end is None or due < end):
            return due
    return None


def _notice_ms(pair: TurbidityPair) -> int:
    return round(pair.unknown_notice_hours * MS_PER_HOUR)


def notices(site: SiteConfig, runs: Mapping[str, Sequence[Run]], heard: Mapping[str, bool],
            first_seen_ms: int | None, closed_ms: int | None, now_ms: int | None
            ) -> tuple[dict[str, Fact], int | None]:
    """Every pair's ``turbidity_unmonitored`` and ``turbidity_monitored`` facts that hold at
    ``now_ms``, by id (module docstring), and the instant the next one falls due if the
    inputs stay as they are (None: none will)."""
    start = monitoring_start_ms(site, first_seen_ms)
    out: dict[str, Fact] = {}
    if start is None or now_ms is None:
        return out, None
    spans = active_spans(site, start, closed_ms)
    later: list[int] = []
    for pair in site.turbidity_pairs:
        for ep in pair_episodes(site, pair, runs, heard, start):
            due = notice_due_ms(ep, spans, _notice_ms(pair))
            if due is not None and due > now_ms:
                later.append(due)
            elif due is not None:
                for fact in _facts(site, pair, ep, due):
                    out[fact.id] = fact
    return out, min(later, default=None)


def _facts(site: SiteConfig, pair: TurbidityPair, ep: Episode, due_ms: int) -> list[Fact]:
    """Rule 4: the notice of ``ep``, and its end once the contrast is known again."""
    reason = ep.reason_at(due_ms)
    since = iso(ep.start_ms)
    # The level the absolute rule still watches while the background is missing.
    absolute = pair.absolute_ntu if reason == "background_missing" else None
    out = [Fact(site.id, due_ms, make_id(TurbidityUnmonitored.TYPE, site.id, pair.id, ep.key),
                TurbidityUnmonitored(pair=pair.id, reason=reason, since=since,
                                     upstream=pair.upstream, downstream=pair.downstream,
                                     absolute_ntu=absolute))]
    if ep.end_ms is not None:
        out.append(Fact(site.id, ep.end_ms,
                        make_id(TurbidityMonitored.TYPE, site.id, pair.id, ep.key),
                        TurbidityMonitored(pair=pair.id, reason=reason, since=since,
                                           upstream=pair.upstream, downstream=pair.downstream,
                                           absolute_ntu=absolute, known_at=iso(ep.end_ms))))
    return out


def open_unknown(site: SiteConfig, pair: TurbidityPair, runs: Mapping[str, Sequence[Run]],
                 heard: Mapping[str, bool], first_seen_ms: int | None, closed_ms: int | None
                 ) -> Unknown | None:
    """The pair's open episode (``Unknown``), or None when its contrast is known (or the
    site has sent nothing: nothing is deployed to be unknown)."""
    start = monitoring_start_ms(site, first_seen_ms)
    if start is None:
        return None
    eps = pair_episodes(site, pair, runs, heard, start)
    if not eps or eps[-1].end_ms is not None:
        return None
    ep = eps[-1]
    due = notice_due_ms(ep, active_spans(site, start, closed_ms), _notice_ms(pair))
    return Unknown(ep.runs[-1].reason, ep.start_ms, due)


def settle(site: SiteConfig, runs: Mapping[str, Sequence[Run]], heard: Mapping[str, bool],
           first_seen_ms: int | None, live: Mapping[str, Container[str]]
           ) -> tuple[list[str], list[str]]:
    """The runs no longer ``live`` (held by the pair's timeline) of the episodes that
    ended, and of a first run that counted for nothing: (their ids, the ids the
    episodes' notices have or would have)."""
    start = monitoring_start_ms(site, first_seen_ms)
    run_ids: list[str] = []
    notice_ids: list[str] = []
    if start is None:
        return run_ids, notice_ids
    for pair in site.turbidity_pairs:
        held = live.get(pair.id, ())
        counted: set[str] = set()
        for ep in pair_episodes(site, pair, runs, heard, start):
            counted |= {r.fact_id for r in ep.runs}
            if ep.end_ms is None or any(r.fact_id in held for r in ep.runs):
                continue
            run_ids += [r.fact_id for r in ep.runs]
            notice_ids += [make_id(t, site.id, pair.id, ep.key)
                           for t in (TurbidityUnmonitored.TYPE, TurbidityMonitored.TYPE)]
        run_ids += [r.fact_id for r in runs.get(pair.id, ())
                    if r.fact_id not in counted and r.fact_id not in held]
    return run_ids, notice_ids


def active_spans(site: SiteConfig, start_ms: int, closed_ms: int | None) -> list[Span]:
    """The site's active spans from ``start_ms`` on: until ``active_until`` or the
    recorded ``site close``, less the pauses (``active.ActivePeriod``)."""
    return ActivePeriod.of(site, None, closed_ms).spans(start_ms)
