"""The registry of rule families (``monitor/rules/registry.py``) against the contract
and against the node's own copy of the payload fields (``sensors/fields.py``)."""

from __future__ import annotations

from typing import get_args

from monitor.contract.events import EVENT_TYPES
from monitor.contract.inputs import SensorKind
from monitor.contract.routes import ROUTE_KEYS
from monitor.rules.registry import FAMILIES, KINDS
from monitor.sinks.notify.routing import DEFAULT_ROUTES
from sensors.fields import DECIMALS, FIELDS_BY_KIND, PRIMARY_FIELDS, REQUIRED_ANY


def test_every_event_type_has_exactly_one_family() -> None:
    declared = [t for family in FAMILIES for t in family.events]
    assert sorted(declared) == sorted(EVENT_TYPES)


def test_each_family_routes_exactly_its_own_event_types_by_default() -> None:
    """The notifier's defaults are the families' (``Family.alert_routes``): every type
    and variant a route may name has one, given by the family that concludes it."""
    for family in FAMILIES:
        assert {key.split(".")[0] for key in family.alert_routes} == set(family.events), \
            family.name
    assert set(EVENT_TYPES) <= set(DEFAULT_ROUTES) <= set(ROUTE_KEYS)


def test_family_names_and_timeline_groups_are_unique() -> None:
    names = [f.name for f in FAMILIES]
    groups = [f.group for f in FAMILIES if f.group is not None]
    assert len(set(names)) == len(names) and len(set(groups)) == len(groups)
    # The timeline names a snapshot keeps (``gauge:rg1`` …) do not change.
    assert groups[:4] == ["gauge", "trap", "pair", "health"]


def test_the_families_own_exactly_the_contracts_sensor_kinds() -> None:
    # The contract's list (config validates against it) and the families' kinds are one set.
    assert list(KINDS) == list(get_args(SensorKind))
    owned = [k for family in FAMILIES for k in family.kinds]
    assert sorted(owned) == sorted(KINDS)


def test_the_nodes_copy_of_the_payload_fields_equals_the_daemons() -> None:
    # sensors/fields.py is the node's own copy (sensors/ imports nothing of monitor/).
    assert set(FIELDS_BY_KIND) == set(KINDS) == set(REQUIRED_ANY)
    for kind, spec in KINDS.items():
        assert FIELDS_BY_KIND[kind] == {f.name for f in spec.fields} | {"battery_v"}, kind
        assert REQUIRED_ANY[kind] == {form[0] for form in spec.required}, kind
        assert PRIMARY_FIELDS[kind] == spec.required[0][0], kind
    assert set(DECIMALS) <= {f.name for spec in KINDS.values() for f in spec.fields if not
                             f.integer} | {"battery_v"}
