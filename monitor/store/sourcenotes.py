"""What the sources leave in the state directory's ``meta`` for ``status`` to read.

The daemon's sources keep three notes there: the end-to-end confirmations
(``sources/confirm.py``: each sensor's node mode and the highest seq confirmed),
the node clocks that are off (``sources/nodeclocks.py``), and each site's
weather source state (``daemon/weatherpoll.py``). The writers and ``status``
take the keys and the readers from here, so the view reads a note without
loading the source that wrote it (the weather source brings an HTTP client).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from ..contract.times import iso

if TYPE_CHECKING:
    from . import Store

#: The ``meta`` key of the confirmation book.
CONFIRM_META: Final = "confirmations"
#: The node's modes, as its status says (``confirm``): keeping readings until
#: confirmed, or deleting on PUBACK (the fallback when no confirmation comes).
CONFIRM_MODES: Final = frozenset({"journaled", "puback"})
#: The largest seq of the MQTT contract (SQLite's INTEGER).
MAX_SEQ: Final = 2**63 - 1
#: The ``meta`` key of the node clocks that are off.
CLOCKS_META: Final = "node_clocks"
#: The weather source every site's state names.
WEATHER_SOURCE: Final = "nws"


def is_seq(value: Any) -> bool:
    """A seq as the contract has it: an integer (not a bool) from 0 to ``MAX_SEQ``."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEQ


def confirm_notes(text: str | int | None) -> dict[str, dict[str, Any]]:
    """The confirmation book's notes by ``site/sensor``; nothing of what is not JSON."""
    try:
        notes = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    if not isinstance(notes, dict):
        return {}
    return {k: v for k, v in notes.items() if isinstance(v, dict)}


def confirm_of(text: str | int | None, site: str, sensor: str) -> tuple[str | None, int | None]:
    """One sensor's (node mode, N) as ``status --json`` shows them, from the ``meta``
    text: (None, None) when no status of the node said."""
    note = confirm_notes(text).get(f"{site}/{sensor}", {})
    mode, seq = note.get("confirm"), note.get("seq")
    return (mode if mode in CONFIRM_MODES else None), (seq if is_seq(seq) else None)


def clock_of(notes: dict[str, Any], site: str, sensor: str) -> dict[str, Any] | None:
    """One sensor's note as ``status --json`` shows it (``sites.*.sensors.*.clock``):
    None unless the newest word from the sensor was off."""
    note = notes.get(f"{site}/{sensor}")
    if not isinstance(note, dict):
        return None
    # Cleared by order of arrival, not by comparing times: the daemon's own clock
    # may have stepped between the two.
    if note.get("ok_ms") is not None:
        return None
    offset_s = round(note["offset_ms"] / 1000)
    return {"offset_s": offset_s, "ahead": offset_s > 0, "reason": note["reason"],
            "count": note["count"], "at": iso(note["at_ms"])}


def weather_meta_key(site_id: str) -> str:
    """The store meta key of a site's weather source state (the daemon's poller writes it)."""
    return f"weather:{site_id}"


def source_state(store: Store, site_id: str) -> dict[str, Any]:
    """The last recorded ``{source, last_ok, last_error}`` of a site's weather."""
    raw = store.state.meta_get(weather_meta_key(site_id))
    known: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else {}
    return {"source": WEATHER_SOURCE, "last_ok": known.get("last_ok"),
            "last_error": known.get("last_error")}


def weather_status(store: Store, site_id: str) -> dict[str, Any]:
    """What ``status`` shows of a site's weather source: ``{source, last_ok, last_error}``;
    never fetched: ``last_error`` says so."""
    state = source_state(store, site_id)
    if state["last_ok"] is None and state["last_error"] is None:
        state["last_error"] = {"at": None, "reason": "not fetched yet"}
    return state
