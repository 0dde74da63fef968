"""The store's schema, as the migrations that build it (data only).

Migration *n* (0-based) brings the file from version n to n + 1; ``db.Db``
runs the missing ones in one transaction with the version bump. A new table
or column is a new migration at the end: a file written by an older
stormwatch is brought up to date, never rebuilt.
"""

from __future__ import annotations

from typing import Final

# Schema: migration *n* (0-based) brings the file from version n to n + 1.
# Each is a list of single statements, run inside one transaction with the
# version bump, so a crash mid-migration leaves the old version intact.
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        # seq is AUTOINCREMENT so it never goes back, even if the newest rows are
        # ever pruned: applied_seq and the exporter's cursor rely on it. An
        # ignored duplicate may still use up a number, so seqs can have gaps.
        """CREATE TABLE journal (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL CHECK (kind IN ('reading', 'inspection', 'tick')),
            site TEXT,
            sensor TEXT,
            ts_ms INTEGER NOT NULL,
            ident BLOB NOT NULL,
            body TEXT NOT NULL,
            topic TEXT,
            received_ms INTEGER
        )""",
        # The identity of a row. ifnull: NULLs are distinct in a UNIQUE index, so
        # a tick (no site, no sensor) would never be recognised as a repeat
        # without it. ts_ms is part of the body, so it adds nothing to identity;
        # it is here because it puts a new row near the end of its sensor's
        # range instead of at a random place (the hash): measured 4.5x faster
        # inserts at 200k rows, as each commit touches and fsyncs far fewer
        # index pages. The index leads with kind, so journal_count is answered
        # from it.
        """CREATE UNIQUE INDEX journal_identity
            ON journal (kind, ifnull(site, ''), ifnull(sensor, ''), ts_ms, ident)""",
        """CREATE TABLE dead_letters (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            topic TEXT,
            payload BLOB NOT NULL,
            reason TEXT NOT NULL,
            detail TEXT NOT NULL,
            received_ms INTEGER NOT NULL
        )""",
        "CREATE INDEX dead_letters_reason ON dead_letters (reason)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
        # at_ms beside the ISO text: iso() drops zero milliseconds, so the text
        # does not sort in time order ("...:00Z" > "...:00.500Z").
        """CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            type TEXT NOT NULL,
            site TEXT NOT NULL,
            at TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            retracted INTEGER NOT NULL DEFAULT 0 CHECK (retracted IN (0, 1)),
            body TEXT NOT NULL,
            recorded_ms INTEGER NOT NULL,
            UNIQUE (id, revision)
        )""",
        """CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            event_seq INTEGER NOT NULL REFERENCES events (seq),
            alert_id TEXT NOT NULL,
            tag TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'delivered', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_ms INTEGER NOT NULL,
            last_error TEXT,
            delivered_ms INTEGER,
            UNIQUE (alert_id, tag)
        )""",
        # Partial: the worker only ever asks for pending rows; delivered ones
        # pile up forever and should not weigh on that index.
        "CREATE INDEX outbox_due ON outbox (next_attempt_ms) WHERE status = 'pending'",
        "CREATE INDEX outbox_event ON outbox (event_seq)",
        # seq is assigned by the store (head + 1), not by SQLite: it is part of
        # the sealed content, so it must be known before the insert.
        """CREATE TABLE logbook (
            seq INTEGER PRIMARY KEY,
            recorded_ms INTEGER NOT NULL,
            site TEXT NOT NULL,
            type TEXT NOT NULL,
            event_id TEXT NOT NULL,
            revision INTEGER NOT NULL,
            body TEXT NOT NULL,
            canonical TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        )""",
        """CREATE TRIGGER logbook_no_update BEFORE UPDATE ON logbook
            BEGIN SELECT RAISE(ABORT, 'the log book is append-only'); END""",
        """CREATE TRIGGER logbook_no_delete BEFORE DELETE ON logbook
            BEGIN SELECT RAISE(ABORT, 'the log book is append-only'); END""",
        """CREATE TABLE snapshots (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            applied_seq INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            data TEXT NOT NULL
        )""",
    ),
    (
        # Alert delivery (monitor/notify): per-target receipts, why a row was
        # settled without sending, and when a row was made (escalation rows are
        # made long after their event; NULL = the event's recorded_ms).
        """CREATE TABLE outbox_receipts (
            outbox_id INTEGER NOT NULL REFERENCES outbox (id),
            target TEXT NOT NULL,
            delivered_ms INTEGER NOT NULL,
            PRIMARY KEY (outbox_id, target)
        ) WITHOUT ROWID""",
        "ALTER TABLE outbox ADD COLUMN withheld TEXT",
        "ALTER TABLE outbox ADD COLUMN created_ms INTEGER",
        "CREATE INDEX outbox_alert ON outbox (alert_id)",
    ),
    (
        # Identity on plain columns, time first. The old index led with kind,
        # site and sensor (on ifnull() expressions): every batch then touched a
        # leaf page per sensor, and each touched page is written to the WAL and
        # fsynced at commit, so inserts cost four times as much with 400
        # sensors (bench/README.md). Time first puts a batch's rows together at
        # the end of the index. The body's hash names the site and sensor (they
        # are in the body), and the same index serves "these sensors' readings
        # since t", which the engine asks when a late reading is refolded
        # (rarely: see engine/timeline.py).
        "UPDATE journal SET site = '' WHERE site IS NULL",
        "UPDATE journal SET sensor = '' WHERE sensor IS NULL",
        "DROP INDEX journal_identity",
        "CREATE UNIQUE INDEX journal_key ON journal (ts_ms, ident)",
        "ALTER TABLE snapshots ADD COLUMN owner TEXT NOT NULL DEFAULT 'engine'",
        "CREATE INDEX snapshots_owner ON snapshots (owner, id)",
        """CREATE TABLE checkpoints (
            owner TEXT NOT NULL,
            timeline TEXT NOT NULL,
            at_ms INTEGER NOT NULL,
            state TEXT NOT NULL,
            PRIMARY KEY (owner, timeline, at_ms)
        ) WITHOUT ROWID""",
        """CREATE TABLE site_status (
            site TEXT PRIMARY KEY,
            updated_ms INTEGER NOT NULL,
            applied_seq INTEGER NOT NULL,
            data TEXT NOT NULL
        ) WITHOUT ROWID""",
    ),
    (
        # Events of a site whose backlog is being applied wait here for their log
        # book and outbox rows: only the revision that settles gets them
        # (EventLog.settle_deferred).
        """CREATE TABLE deferred (
            event_seq INTEGER PRIMARY KEY REFERENCES events (seq),
            site TEXT NOT NULL
        )""",
        # "Was any revision of this event logged already?" when a deferral settles.
        "CREATE INDEX logbook_event ON logbook (event_id)",
    ),
    (
        # For one sensor, seq identifies a reading (sensors/README.md, "MQTT contract"): the same
        # seq with another body is a dead letter (seq_conflict), not a second
        # reading. msg_seq is the body's seq on reading-topic rows, NULL on
        # everything else (status messages, inspections, ticks, readings
        # without seq). Rows of the last 7 days (the default lateness bound)
        # before this migration get it too, but only the first row of each
        # (site, sensor, seq): an older file may already hold the conflicts
        # this index exists to refuse. Not older rows: that would rewrite the
        # whole journal (a WAL as big as the file, on a disk that may be
        # nearly full) for readings no node resends.
        "ALTER TABLE journal ADD COLUMN msg_seq INTEGER",
        """UPDATE journal SET msg_seq = json_extract(body, '$.seq')
            WHERE seq IN (SELECT min(seq) FROM journal
                          WHERE ts_ms >= (SELECT max(ts_ms) FROM journal) - 604800000
                            AND kind = 'reading' AND json_type(body, '$.seq') = 'integer'
                            AND json_extract(body, '$.kind') != 'status'
                          GROUP BY site, sensor, json_extract(body, '$.seq'))""",
        # seq first, not (site, sensor): a batch holds one reading of many
        # sensors, and nodes number from similar starts (the bench from 1, our
        # node from its first boot's clock), so a batch's entries land on a few
        # leaf pages at the end instead of one page per sensor (each touched
        # page is written to the WAL and fsynced at commit; see journal_key).
        # Partial: rows without seq cost nothing here.
        """CREATE UNIQUE INDEX journal_msg_seq ON journal (msg_seq, site, sensor)
            WHERE msg_seq IS NOT NULL""",
        # Dead letters are bounded (dead_letters.max_mb): the first 4 KiB of a
        # payload are kept, size is its original length (NULL: kept whole,
        # rows older than this migration), and a running total of the bytes
        # held lets the journal prune oldest first without summing the table.
        "ALTER TABLE dead_letters ADD COLUMN size INTEGER",
        """UPDATE dead_letters SET size = length(payload), payload = substr(payload, 1, 4096)
            WHERE length(payload) > 4096""",
        """INSERT INTO counters (name, value)
            SELECT 'dead_letter_bytes', ifnull(sum(length(payload) + length(detail)
                                                   + ifnull(length(topic), 0) + 64), 0)
            FROM dead_letters WHERE true HAVING count(*) > 0
            ON CONFLICT (name) DO UPDATE SET value = excluded.value""",
    ),
    (
        # The archive (``archive.py``): one row per Parquet file under
        # state_dir/archive/, written in the transaction that seals its log book
        # row (``logbook_seq``), before its rows leave the journal. ``done`` = 0
        # while rows the file holds may still be in the journal (the deletes run
        # in short transactions after it; a crash between them is finished by the
        # next run, and readers take a seq once whichever side holds it).
        """CREATE TABLE archive_files (
            name TEXT PRIMARY KEY,
            site TEXT NOT NULL,
            month TEXT NOT NULL,
            rows INTEGER NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            min_ts_ms INTEGER NOT NULL,
            max_ts_ms INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            logbook_seq INTEGER NOT NULL,
            created_ms INTEGER NOT NULL,
            done INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1))
        ) WITHOUT ROWID""",
        # "Is any of the journal after seq N archived?" (every read of the journal
        # asks) and "this site's files since t" (a late reading re-folded).
        "CREATE INDEX archive_files_last ON archive_files (last_seq)",
        "CREATE INDEX archive_files_site ON archive_files (site, max_ts_ms)",
    ),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)
