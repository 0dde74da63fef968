"""Reads of one site that a page makes at every request: the site's own rows only,
each still the latest revision, and of the types asked for; the journal of one site;
the newest log book row, which a report of one site names as the chain's head."""

from __future__ import annotations

from typing import Any

from ..support.storekit import MIN, SITE, T0, qualified, reading, started, trap_fill


def test_current_of_one_site_and_some_types(store: Any) -> None:
    store.events.record([qualified("a", T0 + 10 * MIN), started("b", T0 + 20 * MIN),
                         trap_fill("d", T0, "trap-1", 0.41, 15.0),
                         trap_fill("e", T0, "t", 0.4, 1.0, site="other-site")],
                        applied_seq=1, recorded_ms=T0)
    store.events.record([qualified("a", T0 + 5 * MIN, revision=1),
                         started("b", T0 + 20 * MIN, 1, retracted=True)],
                        applied_seq=2, recorded_ms=T0 + 1)
    storms = store.events.current(SITE, ("storm_qualified",))
    assert [(e.id, e.revision) for e in storms] == [("a", 1)]
    assert [e.id for e in store.events.current(None, ("trap_fill",))] == ["d", "e"]
    newest = store.events.logbook_newest()
    assert [r.seq for r in newest] == [store.events.logbook_head()[0]]
    assert newest[0].hash == store.events.logbook_head()[1]


def test_the_journal_of_one_site(store: Any) -> None:
    rows = [reading(T0 + i * MIN, site=SITE if i % 2 else "other-site") for i in range(6)]
    store.journal.commit(rows)
    mine = store.journal.after(0, site=SITE)
    assert [r.body for r in mine] == [r.body for r in rows if r.site == SITE]
    assert len(store.journal.after(0)) == 6
