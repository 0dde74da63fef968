"""The daemon's heap: the engine's long-lived objects kept out of the collector's way."""

from __future__ import annotations

import gc


def keep_heap(*, full: bool) -> None:
    """Keep the cyclic garbage collector off the engine's long-lived objects.

    The engine holds a few hundred thousand objects for as long as the daemon
    runs; each full collection walks them all (about 100 ms for a hundred
    sites), at random moments, and that was the tail of the alert latency.
    ``gc.freeze`` moves every object alive now out of the collector's sight
    (reference counting still frees them). Done after each snapshot, so what
    survived that long counts as long-lived; once an hour (``full``) the
    frozen set is put back and collected, so cyclic garbage cannot pile up.
    """
    if full:
        gc.unfreeze()
        gc.collect()
    gc.freeze()
