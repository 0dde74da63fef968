"""Unreferenced photos leave the disk a day after their last upload.

Theory of operation. A photo is uploaded before the inspection that cites it
(the page's offline queue sends the photos, then the inspection), so a photo
named by no inspection yet is normal for a moment; one still named by none a
day (``UNREFERENCED_MS``) after its last upload never will be, and is in no
chain: the sweep removes it. What it never removes is a photo any inspection
names (``store/citations.py``: the journal, the archive and the log book, read
whole; when that cannot be read completely, nothing is removed), nor one an
inspection being recorded has just cited (``Uploads.cite``, in
``web/record.py``).

1. The candidates: photos whose last upload row is older than the cutoff and
   whose fate (``store/uploads.py``) is not yet decided, and files in
   ``photos_dir`` that no upload row names (stored before uploads were
   counted, or by hand), older than the cutoff by their time on disk.
2. None: done, the record is not read. Otherwise the photos the record names
   are marked ``kept`` (for good: journal rows are never deleted) and each
   other candidate is removed in one transaction with a last check of its
   rows (``Uploads.remove_stale``): an upload or a citation of it since step 1
   saves it.
3. Upload files left in ``photos_dir/tmp`` by a crash, older than the cutoff,
   go too, and refused upload attempts are forgotten.

Every step is idempotent: a second sweep finds nothing more to do. The sweep
runs in a thread of its own (``PhotoSweep.poke``: at most one at a time, at
most every ``SWEEP_EVERY_MS``), started by the app's background task and
after each upload; requests never wait for it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..config import Config
from ..store.citations import cited_photos
from ..store.opening import open_store
from ..store.photos import is_sha256, photo_path
from ..store.uploads import MS_PER_DAY, Uploads

log = logging.getLogger("monitor.web")

#: How long a photo may stay named by no inspection after its last upload.
UNREFERENCED_MS: Final = MS_PER_DAY
#: The sweep runs at most this often (and once when the app starts).
SWEEP_EVERY_MS: Final = 3_600_000


@dataclass(frozen=True, slots=True)
class Swept:
    """What one sweep did: the photos removed, and how many it found cited."""

    removed: tuple[str, ...] = ()
    kept: int = 0


def sweep_photos(config: Config, photos_dir: Path, uploads: Uploads, now_ms: int,
                 checked: set[str]) -> Swept:
    """One sweep at ``now_ms`` (module docstring); ``checked``: archive files hashed."""
    cutoff = now_ms - UNREFERENCED_MS
    _old_uploads(photos_dir, cutoff)
    uploads.prune(cutoff)
    known = uploads.known()
    orphans = {sha for sha, mtime_ms in _files(photos_dir) if sha not in known
               and mtime_ms < cutoff} - uploads.kept()
    candidates = set(uploads.stale(cutoff)) | orphans
    if not candidates:
        return Swept()
    with open_store(config, readonly=True) as store:
        cited = cited_photos(store, checked)
    named = candidates & cited
    uploads.keep(named, now_ms)
    removed = []
    for sha in sorted(candidates - cited):
        path = photo_path(photos_dir, sha)

        def remove(path: Path = path, orphan: bool = sha in orphans) -> bool:
            if orphan and _mtime_ms(path) >= cutoff:
                return False  # written again since step 1
            path.unlink(missing_ok=True)
            return True

        if uploads.remove_stale(sha, cutoff, now_ms, remove):
            removed.append(sha)
    return Swept(tuple(removed), len(named))


def _files(photos_dir: Path) -> list[tuple[str, int]]:
    """(hash, time on disk in ms) of every photo file under ``photos_dir``."""
    out = []
    for sub in photos_dir.glob("??"):
        for path in sub.iterdir() if sub.is_dir() else ():
            if is_sha256(path.name) and path.name[:2] == sub.name:
                out.append((path.name, _mtime_ms(path)))
    return out


def _mtime_ms(path: Path) -> int:
    try:
        return round(path.stat().st_mtime * 1000)
    except FileNotFoundError:
        return 0


def _old_uploads(photos_dir: Path, cutoff: int) -> None:
    """Upload files a crash left in ``photos_dir/tmp`` (``store_photo`` removes its own)."""
    tmp = photos_dir / "tmp"
    for path in tmp.glob("upload-*") if tmp.is_dir() else ():
        if _mtime_ms(path) < cutoff:
            path.unlink(missing_ok=True)


class PhotoSweep:
    """Runs ``sweep_photos`` in a thread of its own, one at a time, at most every
    ``every_ms`` of the app's clock."""

    def __init__(self, config: Config, photos_dir: Path, uploads: Uploads,
                 every_ms: int = SWEEP_EVERY_MS) -> None:
        self.config = config
        self.photos_dir = photos_dir
        self.uploads = uploads
        self.every_ms = every_ms
        self._last_ms: int | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._checked: set[str] = set()

    def poke(self, now_ms: int) -> bool:
        """Start a sweep unless one runs or the last began less than ``every_ms`` ago."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            if self._last_ms is not None and now_ms - self._last_ms < self.every_ms:
                return False
            self._last_ms = now_ms
            self._thread = threading.Thread(target=self._run, args=(now_ms,),
                                            name="photo-sweep", daemon=True)
            self._thread.start()
            return True

    def join(self, timeout_s: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _run(self, now_ms: int) -> None:
        try:
            swept = sweep_photos(self.config, self.photos_dir, self.uploads, now_ms,
                                 self._checked)
        except Exception as exc:  # the next poke tries again; nothing was removed blindly
            log.error("web: the photo sweep stopped (%s: %s); it removes nothing it cannot"
                      " check", type(exc).__name__, exc, exc_info=exc)
            return
        if swept.removed:
            log.info("web: removed %d photo(s) no inspection named a day after their upload",
                     len(swept.removed))
