"""The alert of a storm before a site's ``active_since`` says why no inspection is due
(monitor/README.md, "The rules").
"""

from __future__ import annotations

from monitor.sinks.notify.messages import Alert, render

from ..support.util import run, storm, ts


def test_the_alert_says_why_no_inspection_is_due() -> None:
    now = ts("2026-05-12T00:00:00Z")
    eng, _ = run(storm(ts("2026-05-01T10:00:00Z")), now, active_since="2026-05-10")
    (event,) = [e for e in eng.current_events() if e.type == "storm_qualified"]
    message = render(Alert("a1", event, now, eng.config.sites[0]))
    assert message.title == "Branch Meadows Subdivision: storm 0.50 in (informational)"
    assert message.text.startswith(
        "A storm event reached the inspection threshold. It qualified before the site "
        "became active on 2026-05-10, so no inspection deadline applies; the storm is "
        "recorded in the log book.")
    assert message.notify_type == "info"
