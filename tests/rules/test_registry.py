"""The registry of rule families (``monitor/rules/registry.py``) against the contract."""

from __future__ import annotations

from monitor.contract.events import EVENT_TYPES
from monitor.rules.registry import FAMILIES


def test_every_event_type_has_exactly_one_family() -> None:
    declared = [t for family in FAMILIES for t in family.events]
    assert sorted(declared) == sorted(EVENT_TYPES)


def test_family_names_and_timeline_groups_are_unique() -> None:
    names = [f.name for f in FAMILIES]
    groups = [f.group for f in FAMILIES if f.group is not None]
    assert len(set(names)) == len(names) and len(set(groups)) == len(groups)
    # The timeline names a snapshot keeps (``gauge:rg1`` …) do not change.
    assert groups[:4] == ["gauge", "trap", "pair", "health"]

