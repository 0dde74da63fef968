"""The end-to-end confirmation rule (sensors/README.md, "MQTT contract",
``monitor/sources/confirm.py``): what N the daemon may publish for a sensor, worked out by hand for
each case."""

from __future__ import annotations

import json

from monitor.contract.rejects import RejectReason
from monitor.sources.confirm import (
    MAX_RUNS,
    ConfirmBook,
    SensorMark,
    high_water_mark,
    journaled_payload,
    journaled_topic,
    merge_runs,
    rejected_seq,
    status_fields,
)
from monitor.store.sourcenotes import CONFIRM_META, confirm_of

KEY = ("branch-meadows", "rg1")


# --------------------------------------------------------------------------- the rule


def test_the_mark_is_the_end_of_the_run_that_starts_at_oldest_seq() -> None:
    # The node holds 10, 11, ...; the daemon has 3..12 and 14..20: 13 is missing, so
    # everything the node holds up to 12 is committed, and nothing beyond is safe.
    assert high_water_mark(10, [(3, 12), (14, 20)]) == 12


def test_oldest_seq_not_committed_confirms_nothing_the_node_holds() -> None:
    # N = oldest - 1: "everything up to 9 that you hold" is nothing at all.
    assert high_water_mark(10, [(11, 20)]) == 9
    assert high_water_mark(10, []) == 9
    assert high_water_mark(1, []) == 0


def test_readings_the_node_dropped_below_oldest_seq_do_not_hold_the_mark_back() -> None:
    # Committed 1..5; the node dropped 6..8 past its buffer bound and says oldest 9;
    # 9..12 are committed: N = 12, although 6..8 never arrived.
    assert high_water_mark(9, [(1, 5), (9, 12)]) == 12
    # Without the status saying so, the gap 6..8 would stop it at 5.
    assert high_water_mark(1, [(1, 5), (9, 12)]) == 5


def test_merge_runs_joins_adjacent_and_overlapping_seqs() -> None:
    assert merge_runs([], [5, 3, 4, 9, 9, 10]) == ((3, 5), (9, 10))
    assert merge_runs([(1, 2), (7, 8)], [3, 6]) == ((1, 3), (6, 8))
    assert merge_runs([(1, 4)], [2, 3]) == ((1, 4),)
    assert merge_runs([(1, 4), (6, 9)], [5]) == ((1, 9),)


# --------------------------------------------------------------------------- one sensor


def test_no_mark_before_a_status_says_what_the_node_holds() -> None:
    mark = SensorMark().committed([100, 101, 102])
    assert mark.seq is None  # 99 or anything lower might still be held and lost
    told = mark.told(100, status_ms=1_000, mode="journaled")
    assert told.seq == 102


def test_a_gap_holds_the_mark_until_it_fills_then_the_run_above_is_taken_in() -> None:
    mark = SensorMark().told(1, 1_000, None).committed([1, 2, 3, 5, 6, 7])
    assert mark.seq == 3
    assert mark.committed([4]).seq == 7


def test_an_older_status_changes_nothing() -> None:
    mark = SensorMark().told(50, 2_000, "puback").committed(range(50, 60))
    later = mark.told(10, 1_000, "journaled")  # sent before the newer one, arrived after
    assert (later.oldest_seq, later.mode, later.seq) == (50, "puback", 59)


def test_a_status_without_oldest_seq_keeps_the_last_one() -> None:
    mark = SensorMark().told(50, 2_000, None).committed(range(50, 55))
    assert mark.told(None, 3_000, "journaled").seq == 54


def test_oldest_seq_moving_up_forgets_runs_below_it() -> None:
    mark = SensorMark().told(1, 1_000, None).committed([1, 2, 3, 10, 11])
    moved = mark.told(10, 2_000, None)
    assert moved.runs == ((10, 11),)
    assert moved.seq == 11


def test_runs_above_a_gap_are_bounded() -> None:
    # Every other seq committed above a gap that never fills: at most MAX_RUNS kept,
    # the lowest ones (the ones that matter first when the gap fills).
    mark = SensorMark().told(1, 1_000, None).committed(range(3, 3 + 4 * MAX_RUNS, 2))
    assert len(mark.runs) == MAX_RUNS
    assert mark.runs[0] == (3, 3)
    assert mark.seq == 0


# --------------------------------------------------------------------------- the book


def test_the_book_says_when_oldest_seq_went_down() -> None:
    book = ConfirmBook()
    assert book.status(KEY, 1_000, 500, "journaled") is False  # the first: nothing before
    assert book.status(KEY, 2_000, 600, "journaled") is False
    # A node that lost its buffer and numbers from lower: the journal must be asked.
    assert book.status(KEY, 3_000, 7, "journaled") is True


def test_take_due_gives_only_sensors_with_a_mark_and_clears() -> None:
    book = ConfirmBook()
    other = ("branch-meadows", "tb-up")
    book.committed(KEY, [5, 6])
    book.committed(other, [1])
    book.status(KEY, 1_000, 5, "journaled")
    assert book.take_due() == {KEY: 6}  # tb-up: no status yet, no mark
    assert book.take_due() == {}
    book.journaled(KEY, 7, 9)
    assert book.take_due() == {KEY: 9}


def test_the_book_survives_meta_and_a_stale_mark_stays_a_lower_bound() -> None:
    book = ConfirmBook()
    book.status(KEY, 1_000, 5, "puback")
    book.committed(KEY, range(5, 12))
    (text,) = book.meta().values()
    assert json.loads(str(text)) == {"branch-meadows/rg1": {
        "oldest_seq": 5, "status_ms": 1_000, "confirm": "puback", "seq": 11}}
    again = ConfirmBook.from_meta(text)
    assert again.marks[KEY].seq == 11
    assert again.marks[KEY].mode == "puback"
    assert confirm_of(text, *KEY) == ("puback", 11)
    assert confirm_of(text, "branch-meadows", "tb-up") == (None, None)
    assert list(book.meta()) == [CONFIRM_META]
    assert ConfirmBook.from_meta("not json").marks == {}
    assert ConfirmBook.from_meta(None).marks == {}


# --------------------------------------------------------------------------- the messages


def test_status_fields_believes_only_what_the_contract_says() -> None:
    assert status_fields(b'{"ts":1,"oldest_seq":42,"confirm":"puback"}') == (42, "puback")
    assert status_fields(b'{"ts":1}') == (None, None)
    assert status_fields(b'{"ts":1,"oldest_seq":-1,"confirm":"maybe"}') == (None, None)
    assert status_fields(b'{"ts":1,"oldest_seq":true}') == (None, None)
    assert status_fields(b'{"ts":1,"oldest_seq":4.5}') == (None, None)


def test_a_rejected_reading_counts_as_committed_unless_sending_it_again_may_help() -> None:
    body = b'{"ts":"2020-01-01T00:00:00Z","seq":77,"ntu":1}'
    assert rejected_seq(RejectReason.too_old, body) == 77
    assert rejected_seq(RejectReason.impossible_value, body) == 77
    assert rejected_seq(RejectReason.seq_conflict, body) == 77
    # The node's clock ahead: the same reading is taken once the daemon's clock catches up.
    assert rejected_seq(RejectReason.future_timestamp, body) is None
    # Nothing read from the payload, or nothing to read.
    assert rejected_seq(RejectReason.invalid_json, body) is None
    assert rejected_seq(RejectReason.unknown_sensor, body) is None
    assert rejected_seq(RejectReason.too_old, b'{"ts":1}') is None


def test_the_confirmation_message_is_the_contracts() -> None:
    assert journaled_topic("stormwatch/v1/", "branch-meadows", "rg1") == \
        "stormwatch/v1/branch-meadows/rg1/journaled"
    assert json.loads(journaled_payload(12, "2026-05-01T14:00:00Z")) == \
        {"seq": 12, "at": "2026-05-01T14:00:00Z"}
