"""Configuration files as the documents they parse to.

The configuration reference's sketch of branch-meadows as a dict, changed where a test
says, and a whole document of such sites.
"""

from __future__ import annotations

from typing import Any


def site(**changes: Any) -> dict[str, Any]:
    """The configuration reference's sketch of branch-meadows, with nothing but what it must say."""
    data: dict[str, Any] = {
        "id": "branch-meadows",
        "sensors": [
            {"id": "rg1", "kind": "rain"},
            {"id": "tb-up", "kind": "turbidity"},
            {"id": "tb-down", "kind": "turbidity"},
            {"id": "trap1-depth", "kind": "sediment"},
        ],
        "turbidity_pairs": [{"id": "outfall-1", "upstream": "tb-up", "downstream": "tb-down"}],
        "traps": [{"id": "trap-1", "sensor": "trap1-depth", "shape": "trapezoidal",
                   "bottom_length_ft": 20, "bottom_width_ft": 10, "side_slope": 2,
                   "design_depth_ft": 4}],
    }
    data.update(changes)
    return data


def document(*sites: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A configuration of ``sites`` (by default one ``site()``) and the ``top`` sections."""
    return {"sites": list(sites) or [site()], **top}
