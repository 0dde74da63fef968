"""Engine snapshots: state, not readings, and only the checkpoints that changed."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..engine import Engine
from ..store import EngineSnapshot, Store
from .window import JournalWindow

log = logging.getLogger("stormwatch.daemon")

#: The owner name of the daemon's engine snapshots in the store.
ENGINE_OWNER = "engine"


@dataclass
class SnapshotImage:
    """One engine snapshot, taken on the engine's thread, to be written anywhere."""

    applied_seq: int
    data: dict[str, Any]
    put: list[tuple[str, int, str]]
    keep_from: dict[str, int]
    checkpoints: dict[str, dict[int, str]]
    rows: int
    replace_all: bool


class Snapshots:
    """Engine snapshots of one owner: state, not readings, and only what changed.

    ``take`` (on the engine's thread) dumps the engine and splits the timeline
    checkpoints off: a checkpoint is immutable JSON text, so it is written once
    and kept in the store until compaction passes it; the rest (the *head*:
    each fold's current state, the facts still open, the clocks) is small.
    ``write`` (on any thread, with its own store connection) stores the image
    in one transaction. Which checkpoints the store holds is tracked by
    identity of their text, so finding what changed costs no serialisation.
    """

    def __init__(self, owner: str, written: dict[str, dict[int, str]] | None = None) -> None:
        self.owner = owner
        self.written: dict[str, dict[int, str]] = written or {}
        #: After a rebuild, the store's checkpoints belong to a state that is gone.
        self.replace_all = written is None

    def take(self, engine: Engine, applied_seq: int, rows: int) -> SnapshotImage:
        data = engine.dump()
        put: list[tuple[str, int, str]] = []
        keep_from: dict[str, int] = {}
        now: dict[str, dict[int, str]] = {}
        for site_id, sd in data["sites"].items():
            for name, td in sd["timelines"].items():
                full = f"{site_id}/{name}"
                had = self.written.get(full, {})
                cps = td["checkpoints"]
                now[full] = {at: text for at, text in cps}
                put += [(full, at, text) for at, text in cps if had.get(at) is not text]
                keep_from[full] = cps[0][0]
                td["checkpoints"] = [at for at, _ in cps]
        return SnapshotImage(applied_seq, data, put, keep_from, now, rows, self.replace_all)

    def write(self, store: Store, image: SnapshotImage, *, created_ms: int) -> None:
        head = json.dumps(image.data, separators=(",", ":"), allow_nan=False)
        store.state.save_snapshot(self.owner, image.applied_seq, head, created_ms=created_ms,
                                  put=image.put, keep_from=image.keep_from,
                                  replace_all=image.replace_all)
        self.written = image.checkpoints
        self.replace_all = False


def snapshot_data(snap: EngineSnapshot) -> dict[str, Any]:
    """``Engine.dump()`` again, from a stored snapshot (``KeyError`` if rows are missing)."""
    data: dict[str, Any] = json.loads(snap.head)
    for site_id, sd in data["sites"].items():
        for name, td in sd["timelines"].items():
            texts = snap.checkpoints[f"{site_id}/{name}"]
            td["checkpoints"] = [[at, texts[at]] for at in td["checkpoints"]]
    return data


def restore_engine(config: Config, store: Store, window: JournalWindow, owner: str
                   ) -> tuple[Engine, int, Snapshots]:
    """The owner's engine from its snapshot, or a new one (seq 0) when there is none or
    it cannot be used (another configuration, another version): the journal is replayed."""
    snap = store.state.load_snapshot(owner)
    if snap is not None:
        try:
            engine = Engine.restore(config, snapshot_data(snap), window)
            return engine, snap.applied_seq, Snapshots(owner, snap.checkpoints)
        except (KeyError, ValueError, TypeError) as exc:
            log.warning("snapshot at journal %s unusable (%s); replaying the journal",
                        snap.applied_seq, exc)
    return Engine(config, window), 0, Snapshots(owner)
