"""The field app's uploads: who sent which photo, when, how many bytes, and what became
of each photo that no inspection names.

Theory of operation
-------------------
A photo is uploaded (``POST /api/v1/photos``) before the inspection that cites
it, and one that is never cited is in no chain: nothing stops an account from
filling the disk with them. Two tables in ``state_dir/web.sqlite`` (the web
app's file, not the daemon's database, so neither waits for the other's lock):

``uploads``
    one row per upload attempt: the person, the time (the app's clock), and once
    stored the photo's SHA-256 and size. ``begin`` counts the person's rows of
    the last minute (attempts, refused ones too: they cost work) and the bytes of
    the last 24 hours, refuses past the limits, and inserts the row, in one
    transaction, so two uploads racing cannot both take the last place;
    ``finish`` fills in the hash and size. The rows stay: they also say who
    uploaded a photo (``uploaded_by``: an inspection may cite only its
    recorder's own uploads, ``web/record.py``).
``photo_fates``
    per photo, what the sweep (``web/sweep.py``) or a citation decided: ``kept``
    (an inspection names it: for good, since journal rows are never deleted,
    only archived), ``removed`` (unreferenced a day after its last upload; the
    file is gone), ``cited`` (an inspection is being recorded with it: not swept
    for a day, whatever becomes of that inspection).

Every step that could race the sweep's removal of a file runs in a write
transaction of this file, and so does the removal itself (``remove_stale``
re-checks, unlinks and records in one): an upload whose row is committed, or a
citation, is seen by any removal after it; an upload whose bytes were stored
just before a removal took the same photo's old copy finds the file gone after
``finish`` and stores it again (``web/api.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from .sidedb import SideDb

MS_PER_MINUTE: Final = 60_000
MS_PER_DAY: Final = 86_400_000

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS uploads (id INTEGER PRIMARY KEY, person TEXT NOT NULL,"
    " at_ms INTEGER NOT NULL, sha256 TEXT, size_bytes INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS uploads_by_person ON uploads (person, at_ms)",
    "CREATE INDEX IF NOT EXISTS uploads_by_photo ON uploads (sha256, at_ms)",
    "CREATE TABLE IF NOT EXISTS photo_fates (sha256 TEXT PRIMARY KEY, fate TEXT NOT NULL"
    " CHECK (fate IN ('cited', 'kept', 'removed')), at_ms INTEGER NOT NULL)",
)


@dataclass(frozen=True, slots=True)
class Limits:
    """A person's uploads: at most ``per_minute`` in any minute, ``bytes_per_day`` in
    any 24 hours."""

    per_minute: int
    bytes_per_day: int


@dataclass(frozen=True, slots=True)
class Begun:
    """An upload may go on: its row, and how many bytes the day's quota leaves."""

    id: int
    bytes_left: int


@dataclass(frozen=True, slots=True)
class TooMany:
    """The person's limit is reached: which (``rate``, ``quota``) and the numbers."""

    limit: str
    used: int
    wait_s: int


class Uploads(SideDb):
    """The tables in ``state_dir/web.sqlite``; one connection behind a lock, shared by
    the web server's threads and the sweep's."""

    SCHEMA = _SCHEMA

    def begin(self, person: str, now_ms: int, limits: Limits) -> Begun | TooMany:
        """Count the person's uploads against ``limits``; the new row, or the refusal."""
        with self._write() as conn:
            count, first = conn.execute(
                "SELECT count(*), min(at_ms) FROM uploads WHERE person = ? AND at_ms > ?",
                (person, now_ms - MS_PER_MINUTE)).fetchone()
            if count >= limits.per_minute:
                return TooMany("rate", count, _wait_s(first + MS_PER_MINUTE - now_ms))
            used, first = conn.execute(
                "SELECT ifnull(sum(size_bytes), 0), min(at_ms) FROM uploads WHERE person = ?"
                " AND at_ms > ? AND size_bytes > 0", (person, now_ms - MS_PER_DAY)).fetchone()
            if used >= limits.bytes_per_day:
                return TooMany("quota", used, _wait_s(first + MS_PER_DAY - now_ms))
            row = conn.execute("INSERT INTO uploads (person, at_ms) VALUES (?, ?)",
                               (person, now_ms))
            return Begun(int(row.lastrowid or 0), limits.bytes_per_day - used)

    def finish(self, upload_id: int, sha256: str, size_bytes: int) -> None:
        """The upload's photo, stored."""
        with self._write() as conn:
            conn.execute("UPDATE uploads SET sha256 = ?, size_bytes = ? WHERE id = ?",
                         (sha256, size_bytes, upload_id))

    def uploaded_by(self, sha256: str, person: str) -> bool:
        with self._read() as conn:
            return conn.execute("SELECT 1 FROM uploads WHERE sha256 = ? AND person = ? LIMIT 1",
                                (sha256, person)).fetchone() is not None

    def cite(self, sha256: str, now_ms: int) -> None:
        """An inspection is being recorded with this photo: not swept for a day."""
        with self._write() as conn:
            conn.execute("INSERT INTO photo_fates (sha256, fate, at_ms) VALUES (?, 'cited', ?)"
                         " ON CONFLICT (sha256) DO UPDATE SET fate = 'cited', at_ms ="
                         " excluded.at_ms WHERE fate != 'kept'", (sha256, now_ms))

    def keep(self, shas: set[str], now_ms: int) -> None:
        """These photos are named by an inspection: never swept."""
        with self._write() as conn:
            conn.executemany("INSERT INTO photo_fates (sha256, fate, at_ms) VALUES (?, 'kept', ?)"
                             " ON CONFLICT (sha256) DO UPDATE SET fate = 'kept'",
                             [(s, now_ms) for s in sorted(shas)])

    def kept(self) -> set[str]:
        with self._read() as conn:
            return {s for (s,) in conn.execute(
                "SELECT sha256 FROM photo_fates WHERE fate = 'kept'")}

    def stale(self, cutoff_ms: int) -> list[str]:
        """Photos uploaded last before ``cutoff_ms`` and neither kept, cited since, nor
        removed since their last upload."""
        with self._read() as conn:
            return [s for (s,) in conn.execute(
                "SELECT u.sha256 FROM uploads u LEFT JOIN photo_fates f USING (sha256)"
                " WHERE u.sha256 IS NOT NULL GROUP BY u.sha256 HAVING max(u.at_ms) < ?"
                " AND (f.fate IS NULL OR (f.fate = 'cited' AND f.at_ms < ?)"
                " OR (f.fate = 'removed' AND f.at_ms < max(u.at_ms)))",
                (cutoff_ms, cutoff_ms))]

    def remove_stale(self, sha256: str, cutoff_ms: int, now_ms: int,
                     remove: Callable[[], bool]) -> bool:
        """Remove the photo (``remove``: unlink its file, or say it may not) if it is
        still stale (``stale``), and record that; in one transaction with that check."""
        with self._write() as conn:
            last = conn.execute("SELECT max(at_ms) FROM uploads WHERE sha256 = ?",
                                (sha256,)).fetchone()[0]
            fate = conn.execute("SELECT fate, at_ms FROM photo_fates WHERE sha256 = ?",
                                (sha256,)).fetchone()
            if last is not None and last >= cutoff_ms:
                return False
            if fate is not None and (fate[0] == "kept"
                                     or (fate[0] == "cited" and fate[1] >= cutoff_ms)):
                return False
            if not remove():
                return False
            conn.execute("INSERT INTO photo_fates (sha256, fate, at_ms) VALUES (?, 'removed', ?)"
                         " ON CONFLICT (sha256) DO UPDATE SET fate = 'removed', at_ms ="
                         " excluded.at_ms", (sha256, now_ms))
            return True

    def known(self) -> set[str]:
        """Every photo an upload row names (the sweep's orphans are files not in it)."""
        with self._read() as conn:
            return {s for (s,) in conn.execute(
                "SELECT DISTINCT sha256 FROM uploads WHERE sha256 IS NOT NULL")}

    def prune(self, before_ms: int) -> int:
        """Forget refused attempts (no photo) older than ``before_ms``: they only
        counted for the per-minute rate."""
        with self._write() as conn:
            return conn.execute("DELETE FROM uploads WHERE sha256 IS NULL AND at_ms < ?",
                                (before_ms,)).rowcount


def _wait_s(ms: int) -> int:
    return max(1, -(-ms // 1000))
