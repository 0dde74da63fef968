"""An inspection of kind ``other``, or by a name off the roster, parsed as a message and
applied, closes no clock (monitor/README.md, "The rules").
"""

from __future__ import annotations

import json

from monitor.contract.inputs import Inspection
from monitor.contract.times import iso
from monitor.engine import site_status
from monitor.sources.parse import parse_message

from ..support.util import SITE, final, insp, run, site_config, storm, ts


def test_kind_other_and_names_off_the_roster_close_no_clock() -> None:
    """'site foreman', kind other: recorded, closes neither the storm nor the routine clock."""
    eng, _ = run([*storm(ts("10:00"), 60), insp(ts("12:00"), "site foreman", kind="other")],
                 ts("2026-05-09T12:00:00Z"), active_since="2026-05-01")
    (rec,) = final(eng, "inspection_recorded")
    assert rec["kind"] == "other" and rec["closes"] == []
    assert not final(eng, "clock_closed")
    assert {c["clock"] for c in site_status(eng, SITE, ts("2026-05-09T12:00:00Z"))
            ["open_clocks"]} == {"storm", "routine"}

    # With a roster, an MQTT inspection naming nobody on it is recorded as ``other``;
    # one naming a qualified professional carries the roster's credential.
    config = site_config(qualified_professionals=[
        {"name": "J. Rivera", "credential": "CPESC 12345"}])
    ref = ts("12:00")
    topic = f"stormwatch/v1/{SITE}/inspection"
    at = iso(ref - 60_000)
    foreman = parse_message(config, topic, json.dumps({"inspector": "site foreman",
                                                       "ts": at}).encode(), ref_ms=ref)
    assert isinstance(foreman, Inspection) and foreman.kind == "other"
    qp = parse_message(config, topic, json.dumps({"inspector": "J. Rivera", "ts": at}).encode(),
                       ref_ms=ref)
    assert isinstance(qp, Inspection)
    assert (qp.kind, qp.credentials, qp.entered_ms) == ("routine", ("CPESC 12345",), ref)
    # The first name certifies: someone off the roster naming a qualified professional
    # as a companion closes nothing, and the companion carries no credential.
    cover = parse_message(config, topic, json.dumps({"inspector": ["site foreman", "J. Rivera"],
                                                     "ts": at}).encode(), ref_ms=ref)
    assert isinstance(cover, Inspection)
    assert (cover.kind, cover.credentials) == ("other", ("", ""))
    joint = parse_message(config, topic, json.dumps({"inspector": ["J. Rivera", "site foreman"],
                                                     "ts": at}).encode(), ref_ms=ref)
    assert isinstance(joint, Inspection)
    assert (joint.kind, joint.credentials) == ("routine", ("CPESC 12345", ""))
