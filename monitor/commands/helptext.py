"""What ``stormwatch COMMAND --help`` says: the long account of each command.

The README gives one line per command; the whole story of a command (what it
reads and writes, what it refuses, its exit codes) is here, where the person
running it looks, and ``cli.py`` hands it to argparse. Texts are laid out by
hand (``RawDescriptionHelpFormatter``): paragraphs and lists stay as written.
Chapter 134 sections are quoted where they say why.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import Any

EXIT_CODES = "exit codes: 0 ok, 1 a check failed, 2 bad usage or bad configuration"

#: The state-directory refusal every command that reads the database shares.
_MISSING_DB = """\
A missing or unreadable database (no file, not an SQLite database of this
version, no permission) or an unusable state_dir is refused with one line
naming its path, exit 2: no answer is better than one made from no data."""

#: name: (one line for the command list, the description, the epilog)
HELP: dict[str, tuple[str, str, str]] = {
    "check-config": ("validate a configuration file", """
        Exit 0 with a one-paragraph summary of what the configuration will watch,
        or exit 2 with every problem on a line of its own as
        `path.to.field: message`, numbers said in the field's unit
        ("must be at least 1 minute (got 3.6 seconds)").

        Values that validate but are almost always a mistake (a threshold of
        12.7 "in" that is 0.5 in written in millimetres, a trap 48 ft deep) are
        warned about on stderr, one `warning: path.to.field: message` line each,
        and the exit stays 0; --strict refuses them (exit 2). The list of
        warnings is in config/README.md ("Warnings").""", """
        example:
          stormwatch check-config config/example.yaml

        """ + EXIT_CODES),

    "replay": ("run the engine over recorded readings (CSV)", """
        The engine the daemon runs, over a CSV of readings and inspections
        (format: config/README.md, "Replay input"; config/sample-readings.csv
        goes with config/example.yaml).

          --format jsonl  (default) one event per line, in event-time order:
                          the latest, non-retracted revision of each
          --format table  a summary per site, in the site's local time

        A file is not a stream: it is read whole, each row by the daemon's own
        rules, and the rows taken are folded in event time, whatever the file's
        order. No row is too old (lateness_days bounds a daemon's memory); one
        later than the clock at the time of the run plus 5 minutes is refused
        (future_timestamp: a typo'd year is refused alone), as is a seq reused
        with another body (seq_conflict) and a time without an offset
        (no_timezone) unless --timezone ZONE (the logger's IANA zone) or
        --timezone site says how to read it. Rejected rows are counted by
        reason on stderr; a file of which no row is taken exits 1. A per-tip
        export (a tips column, or rain rows without a counter) is read tip by
        tip, double tips within the gauge's debounce_s dropped and counted. At
        the end, time advances to the newest row (storms whose dry gap has
        passed end; silent sensors are stale). --arrival-order folds the rows in
        file order under the daemon's lateness rule instead (too_old against
        the site's newest row so far), to compare a file with a daemon.

        The CSV is UTF-8, with or without a byte-order mark (Excel's "CSV
        UTF-8"); a byte that is not UTF-8 is refused with its offset and line,
        and so is a header naming a column twice. --input - reads standard
        input.""", """
        example:
          stormwatch replay --config config/example.yaml \\
              --input config/sample-readings.csv --format table

        An output that cannot be written (a full disk, > /dev/full) is one line
        and exit 2; a pipe closed early (| head) is not an error.

        """ + EXIT_CODES),

    "backtest": ("storm events of every gauge in a CSV, computed on whole columns", """
        The storm events (§ 134-9A(2): "any storm event producing 0.5 inch of
        precipitation or more") of every gauge in a replay CSV, on whole
        columns with pandas: the same storms (gauge, start, end, totals,
        qualified_at) as `replay`, whose reading of the file it shares (rows
        taken and refused, event time, per-tip, --timezone, exit 1 when no row
        is taken). Storms only. What its column rule cannot take it refuses in
        one line, exit 2, never as "no storms": a gauge with counter and depth
        rows, a file without rain. jsonl gives UTC times, the table local.""",
                 EXIT_CODES),

    "run": ("the daemon, in the foreground (SIGTERM drains and exits 0)", """
        Subscribes to the MQTT topics, journals every accepted reading before
        acknowledging it, runs the engine, records events, alerts (the outbox)
        and log book entries. Logs to stderr (log_format: text or json),
        starting with check-config's warnings. Under systemd it is Type=notify
        with a watchdog (deploy/systemd/stormwatch.service).

        SIGTERM or Ctrl-C stops it in order, under any traffic, within about
        10 s, exit 0, no traceback: the MQTT client takes nothing new (the
        broker keeps the rest in the daemon's session, unacknowledged), what
        was received is journaled and acknowledged, the final state and
        snapshot are written.

        An unusable state_dir (a file where the directory should be, or on its
        path; no permission; a database file that is not one) is refused
        before anything starts, with one line naming the path, exit 2.
        What survives a crash, a broker restart, a full disk: deploy/README.md.""",
        EXIT_CODES),

    "status": ("per site: clocks, traps, turbidity, sensors; ingest and alerts", """
        Per site: open inspection clocks with due times and hours left (or how
        long overdue, and for a routine clock the weeks it has missed); the
        weeks without a required inspection over the season (§ 134-12D: "each
        week's continued violation shall constitute a separate additional
        violation"); open corrective actions; final stabilization; the last
        inspection; trap fill; turbidity state (never ok while the contrast
        cannot be checked: unknown, then unmonitored once the qualified
        professional has been told, with why and since when); sensor health
        (and a WARNING for a node whose clock is off); the weather source's
        state.

        It reads the state the daemon records as it goes (within half a second
        of new input, with every event, and at every tick), so it answers at
        once at any journal size, whether the daemon runs or not. Hours left
        and staleness are worked out at this command's own time, or at the
        engine's event time when that is later (a demo's simulated clock runs
        ahead), so a clock the engine closed is never shown open.

        The header says how old the newest input and the recorded state are
        ("newest input 12 s ago; state recorded 3 s ago"), with a WARNING line
        when the state was never recorded, was last recorded more than 90 s
        ago (a running daemon records it at least once a minute: it is stopped
        or stuck), or was recorded by a clock ahead of this one. A site the
        daemon has not recorded yet is shown as unknown (every sensor stale),
        never as "no open clocks"; journal rows not yet applied are counted.

        --json prints one object. Besides the sites (open_clocks, missed_weeks,
        corrective_actions: id, text, due, overdue, opened_at, inspector;
        closed_at, last_inspection, traps, turbidity (state, the last reading's
        values, unknown: {reason, since, notice_at} or null), sensors with readings,
        buffered, dropped, clock; event_time; with a weather section, weather:
        source, last_ok, last_error {at, reason}: a source that does not answer
        is UNREACHABLE, never "no storm forecast"), it holds:
          ingest    accepted, rejected (by reason), duplicates, lag_s,
                    journal_seq, applied_seq, dead_letters_pruned,
                    disk_full_since, store_error (the disk full)
          export    behind_rows; with an influx section also behind_s,
                    behind_events, cursor, last_write_at, error, error_since,
                    dead_letters
          notify    pending, delivered, failed, withheld, oldest_pending_at
          broker    state (connected, disconnected, unknown), since
          journal   newest_received_at (arrival of the newest reading or
                    inspection journaled), age_s (its age in seconds)
          daemon    state_written_at (the newest recorded site status), age_s
                    (negative: written ahead), stale_after_s (90), stale (true
                    when older than that, never recorded, or written more than
                    5 s ahead of this clock), ticked_at (the daemon's last
                    engine tick, null before the first), wall_clock_step_s (a
                    step of this machine's wall clock the ticks are not
                    following, null when none: deploy/README.md, "Clocks")
        and per sensor `clock` (a node whose clock is off, null when its newest
        reading was on time), per site `event_time` (the engine's event time
        when it recorded the site).

        """ + _MISSING_DB, EXIT_CODES),

    "duties": ("each duty of a site's permits: source, trigger, deadline, state now", """
        For each permit of the site (permits:, or Chapter 134 alone) and each
        of its rules that applies to the site's choices: the source (permit,
        section, the rule's words, where they were read, verified or TO
        VERIFY against your permit), the trigger ("storm: 0.25 in within
        24 h"), the rule of the deadline ("24 h after the storm qualifies"),
        and the state now: the permit's open clocks with due and hours left,
        read from the state directory as status reads it (for a corrective
        action or maintenance rule: the open actions of that kind, each with
        the deadline the permit gives it); "not monitored"
        when the site lacks the sensor the trigger needs (a rain gauge, a
        snow sensor, dewatering probes); "no state yet" before the daemon
        first records the site. The text fits a phone-width terminal.

        --json prints one object: site, permits [{permit, profile, title,
        duties [{rule, duty, section, quote, source, verified, trigger,
        deadline, state {status, clocks [{clock_id, due, hours_left,
        overdue}] or actions [{action_id, text, due, overdue}] or reason}}]}].
        An unknown --site is refused (exit 2).
        The profiles and their citations: config/README.md, "Permits".""", """
        example:
          stormwatch duties --config config/example.yaml --site branch-meadows

        """ + EXIT_CODES),

    "inspect": ("record an inspection by the qualified professional", """
        Records an inspection (§ 134-9A(2): "a qualified professional conduct
        site inspections ... Inspection reports shall be maintained in a site
        log book"): into the journal of a running daemon, which applies it
        within its next loop, or, when no daemon runs, into the database with
        the engine brought up to date. It never uses the broker. It prints, in
        the site's local time, the clocks it closed, whether on time, and the
        id given to each corrective action (ca-<local time>-<n>, to name with
        --resolved once repaired; --resolved of no open action is refused).

        * Repeat --inspector for a joint inspection: one record, every name.
        * With a qualified_professionals roster, a name off it is refused
          (exit 2, the roster listed) unless --kind other: a walk-through,
          recorded, closing no clock.
        * --at more than 5 minutes ahead of the clock is refused (exit 2); an
          inspection entered more than backdate_alert_hours after its --at is
          accepted and marked backdated (the officer is alerted).
        * --due is a date (by the end of that local day) or an ISO time.
        * --maintenance TEXT is routine maintenance rather than a corrective
          action: under a permit with a maintenance rule it is due by the close
          of the next business day (EPA CGP 2022 Part 2.1.4.b).

        """ + _MISSING_DB, """
        example:
          stormwatch inspect --config /etc/stormwatch/stormwatch.yaml \\
              --site branch-meadows --inspector "J. Rivera" --kind storm \\
              --finding "silt fence: undermined at the east corner" \\
              --corrective-action "re-trench the silt fence" --due 2026-05-04

        """ + EXIT_CODES),

    "site": ("site life cycle: `site close` records final stabilization, `site shutdown` "
             "and `site resume` a temporary shutdown", """
        `stormwatch site close` records final stabilization; `stormwatch site
        shutdown --notice "…"` a temporary shutdown with its written notice, and
        `stormwatch site resume` its end.""", EXIT_CODES),

    "site shutdown": ("record a temporary shutdown with its written notice", """
        Records a temporary shutdown from --at (default now) with the written notice
        the permit asks for (site_shutdown in the log book). A permit with a
        shutdown rule inspects at its cadence meanwhile (New York GP-0-25-001:
        every 30 calendar days); a clock open when it begins is cut there. Other
        permits, Chapter 134 among them, are unchanged.

        example:
          stormwatch site shutdown --config /etc/stormwatch/stormwatch.yaml \\
              --site mill-lot --notice "Winter shutdown; notice mailed to DEC Dec 1"
        """, EXIT_CODES),

    "site resume": ("record the end of a temporary shutdown", """
        Records that soil disturbance restarted at --at (default now): the
        permits' routine cadence runs again from then.""", EXIT_CODES),

    "site close": ("record final stabilization (inspection clocks end)", """
        Records final stabilization (site_closed in the log book): no inspection
        clock runs from --at on. A clock still open then is cut there; a storm
        after it is still recorded, as informational (no inspection is due).
        --at is a date (its local midnight) or an ISO time with offset; default
        now; not in the future.""", EXIT_CODES),

    "logbook": ("export the site log book, verify its hash chain, or print (and send) "
                "its head as an anchor", """
        The site log book of § 134-9A(2) ("Inspection reports shall be
        maintained in a site log book"): every event the daemon recorded, one
        row each, chained by SHA-256.

          logbook [export] --site ID [--format csv|md]
              the log book with times in the site's local time, the zone named
              (2026-05-14 08:00 EDT); the CSV keeps the UTC times (recorded_at,
              at) beside the local ones (recorded_local, at_local). A row a later
              revision withdrew is marked RETRACTED (the CSV's last column,
              retracted); an inspection lists its photos (caption, SHA-256).
              md says each row as a sentence ("Sediment trap trap-1 is 50%
              full — clean it out, § 134-9A(1)"), its hashes in the last
              column; csv keeps its columns, the details by field name.

          logbook verify [--anchor SEQ:HASH]
              recomputes the chain and compares the events table (which status
              and the InfluxDB export read) with the log book; exit 1 naming
              each edited, deleted or reordered row and each event edited,
              added or removed outside stormwatch. With --anchor (a head printed
              or sent earlier by `logbook anchor`, SEQ:HASH or only the hash)
              it also checks that the log book still holds that row with that
              hash and the rows after it chained from it: exit 1 naming what
              differs ("anchor: row 1234 now has hash ...", "row 1234 is gone"),
              exit 2 for an anchor that is not one.

          logbook anchor [--json] [--send [--tag T]]
              prints the head to keep elsewhere ("log book head: row 1234,
              sha256 <64 hex digits>, recorded 2026-11-30 14:00 EST") and the
              verify --anchor command that checks against it; --json prints
              one object (seq, hash, anchor, recorded_at, recorded_local, rows,
              intact, problems; sent with --send). --send also sends it to the
              notification targets of the tag (default officer);
              deploy/systemd/stormwatch-anchor.timer does that weekly. Exit 1
              when the chain does not verify (the head is printed and sent all
              the same, saying so) or a target did not take it; exit 2 when no
              target receives the tag.

        What the chain and the anchor prove, and what they do not:
        deploy/README.md.

        """ + _MISSING_DB, EXIT_CODES),

    "shards": ("check that the shard daemons' configurations work side by side", """
        Several daemons, each owning the sites its configuration lists (its
        shard: {id}), on one broker or cluster: deploy/README.md, "Beyond one
        machine". Reads each --config and says who owns what. Refused (exit
        2): a configuration without shard:, two shards with one shard id,
        broker.client_id (the broker keeps one session per id), state_dir or
        broker account, or different topic prefixes. Failed (exit 1): a site
        owned by two shards, or, with --nodes, a site a node publishes for and
        no shard owns.""", """
        example:
          stormwatch shards --config /etc/stormwatch/north.yaml \\
              /etc/stormwatch/south.yaml --nodes /etc/stormwatch/nodes/*.yaml

        """ + EXIT_CODES),

    "acl": ("write the Mosquitto ACL for the configured nodes", """
        The Mosquitto acl_file for the configured sites: the daemon's account
        reads every topic (a shard's, its own sites' topics only: concatenate
        the shards' files into the broker's one acl_file); each node account
        (SITE.NODE for sensors that name their node, SITE.SENSOR for one that
        names none) writes its sensors' reading and status topics and nothing
        else; each site's qualified professional (SITE.qp) its inspection
        topic. The file's header has the mosquitto_passwd commands.
        Deployment: deploy/README.md.""", """
        example:
          stormwatch acl --config /etc/stormwatch/stormwatch.yaml \\
              --out /etc/mosquitto/stormwatch.acl && systemctl reload mosquitto

        An --out it cannot write (a missing folder, a directory, no permission)
        is one line naming it, exit 2.

        """ + EXIT_CODES),

    "weather": ("fetch the forecast and the reference once, and say what follows", """
        Fetches, once, what the daemon fetches every weather.poll_minutes from
        the National Weather Service API: the gridpoint forecast of each site's
        location and the observations of its reference stations. Prints per
        site the forecast rain per local day (each forecast interval spread
        evenly over its hours), each reference station's rain of the last 24
        hours (hours it left unreported are unknown, never dry), and what the
        daemon would conclude from these inputs (the engine's own rule: a
        storm_forecast when any 24 hours of the next forecast_hours reach the
        site's threshold). The gauges' side of the comparison with the
        reference (gauge_disagrees) needs their readings, which are in the
        daemon's journal: this command reads no state.""", """
        example:
          stormwatch weather --config /etc/stormwatch/stormwatch.yaml --site branch-meadows

        A source that cannot be reached (after retries; a Retry-After longer
        than two minutes is not waited out) is one line with the reason, exit 1:
        no answer is better than "no storm forecast" made from no data.

        """ + EXIT_CODES),

    "archive": ("move final journal rows into compressed files (nothing deleted)", """
        The journal is the site's record and is kept at least five years after
        final stabilization, while the database costs about 250 bytes a
        reading. This moves the journal rows that can no longer change any
        event (older than --before, or archive.after_days before now; older
        than each site's lateness window; covered by the engine snapshot and
        by the InfluxDB exporter) into Parquet files, zstd-compressed, under
        state_dir/archive/SITE/, one per site and month and run. Each file's
        SHA-256 is sealed in the log book (a journal_archived row), and the
        database gives the space back. A restart, `report` and `logbook
        verify` read archive and journal as one; `logbook verify` exits 1
        naming an archive file that was edited or removed. stormwatch never
        deletes an archive file: copy state_dir/archive/ with your backups.

        It runs beside the daemon (which archives by itself with an archive:
        section). With the daemon stopped, the first run converts a database
        made before the archive existed so that it can shrink (a full VACUUM,
        needing free space the size of the database).""", """
        examples:
          stormwatch archive --config /etc/stormwatch/stormwatch.yaml --dry-run
          stormwatch archive --config /etc/stormwatch/stormwatch.yaml --before 2026-06-01

        """ + EXIT_CODES),

    "report": ("compliance report with plots (HTML or PDF)", """
        A compliance report for a period, as one HTML file with rainfall,
        trap-fill and turbidity plots inline (every time in the site's zone).
        Its header carries the log book head (row and full hash) that the
        report's events are read from, and whether the chain verifies. It
        counts the events of the period, a storm in the period in which it
        qualified (two consecutive weekly reports count each storm once), and
        what was owed at the end of the period, never when the report is made
        (a period not over yet: where the engine last judged the site). Then:
        storms with their total (still raining at the end: the running total),
        storm and routine inspections met and late in the period and open at
        its end (of them overdue); the weeks without a required inspection;
        backdated inspections; every duty still outstanding at the end of the
        period (open and overdue inspection clocks, a clean-out demanded and
        not done, open corrective actions, a turbidity exceedance not cleared)
        with since when and its section; inspections with both times
        (inspected, entered), each inspector's credential, findings and
        corrective actions, and their photos (thumbnails, SHA-256, EXIF time
        and position; a missing or altered file is shown as such); a
        corrective-action table (asked, due, resolved, late); trap clean-out
        demands; turbidity episodes with their peak; the sensors' health now.
        A report generated before the events it shows (a demo's clock) says
        so.

        --from and --to are dates YYYY-MM-DD, inclusive, in the site's time
        zone, or ISO times with offset. --format pdf (or an --out ending in
        .pdf) writes the same report as PDF, laid out for paper (Letter
        landscape, two plots a page) with page numbers; nothing is fetched
        from the network for either form: the HTML file holds its
        stylesheet, plots and photos.""", """
        Exit 2, and no file written, on a missing or unreadable database, an
        unknown site, bad or reversed dates, or an unwritable file; exit 1, and
        no file, when a log book row cannot be read (it was edited).

        """ + EXIT_CODES),

    "simulate": ("realistic readings for the configured sites (a design storm), "
                 "published through the sensor-node runtime", """
        Publishes readings for the configured sites through the sensor-node
        runtime (stormwatch-node with simulated sensors, its on-disk buffer and
        MQTT link): dry heartbeats, a design storm of --storm-in inches over
        --storm-hours, distributed by the SCS (NRCS TR-55) type II or III
        24-hour curve, sediment accumulating with runoff, downstream turbidity
        rising with intensity.

        --speed X runs simulated time X times faster. By default the run starts
        in the past so that it ends now: the daemon refuses readings ahead of
        its clock, and older than lateness_days, so a span that would need
        them is refused (exit 2). Progress goes to stderr.""", """
        Exit 0 when every reading was acknowledged, 1 when some were not (the
        buffer directory is kept and named), 2 for bad usage.
        """),

    "notify-test": ("send a test message to every notification target", """
        Sends one test message to every notification target (or to those that
        receive --tag) and prints a verdict per target:

          ok     qp-mail [qp]
          FAILED json://127.0.0.1:8080/hook [officer]: A Connection error ...

        Run it first, and after every change of targets. Targets and routes:
        config/README.md, "Alerts".""", """
        Exit 0 when every target took the message; 1 when some did not (named
        on stderr); 2 for a configuration problem or when no target matches.
        """),

    "user": ("the field app's people: add, link, token, list, sites, revoke, remove", """
        The people who use the field app (`stormwatch web`), kept in
        state_dir/users.sqlite beside the daemon's database. No passwords: a
        person signs in with a single-use link (`user link`), a script with a
        bearer token (`user token`). Tokens are shown once and stored only as
        their SHA-256.

        `user list` shows who has access and what of it works; `user sites`
        changes where a qp records, `user revoke` ends every session, token
        and link of a person, `user remove` removes the person. The web app
        looks each request's session or token up in that file, so each of
        these holds from the person's very next request, while the web app
        runs.""", EXIT_CODES),

    "user add": ("add a qualified professional or an officer to the field app", """
        --role qp: a qualified professional, who records inspections (§ 134-9A(2):
        "a qualified professional conduct site inspections") on the sites
        given with --site, or on every site without it. The name must be on
        the qualified_professionals roster of each of those sites that has
        one, as `stormwatch inspect --inspector` must.

        --role officer: the stormwater management officer, who reads every
        site and records nothing (--site is refused).

        An unknown site, a name already taken or a name not on the roster is
        refused with one line naming the flag (exit 2).""", """
        example:
          stormwatch user add --config site.yaml --name "J. Rivera" --role qp \\
              --email jrivera@example.org --site branch-meadows

        """ + EXIT_CODES),

    "user link": ("a single-use sign-in link for a person", """
        Prints {web.public_url}/signin/TOKEN: opened once, before it expires
        (15 minutes; --valid-minutes up to 1440), it signs the person in on
        that phone or browser for web.session_days. A person needs one for
        each new phone or browser and after their session ends. The first
        comes from this command; later ones they ask for themselves: every
        page of the field app that finds them not signed in (and /signin)
        takes their e-mail address and mails them a new link, as --send does,
        when notify.targets has a mail target (without one the page answers
        the same and the web app's log says nothing could be sent). This
        command stays for a person without an e-mail address, and a server
        without a mail target.

        --send mails it to the person's own address instead of printing it,
        through the first mail target (mailto:// or mailtos://) of
        notify.targets that takes it: the same server and login, the person
        as the only recipient (a sign-in link must not reach a shared
        channel). Needs web: in the configuration.""", """
        Exit 0 when printed or sent; 1 when every mail target refused it
        (each named on stderr); 2 for an unknown person, no web: section, or
        --send without a mail target or an address."""),

    "user token": ("a bearer token for the field app's API", """
        Prints a token for `Authorization: Bearer TOKEN` on the API
        (POST /api/v1/sites/ID/inspections, /api/v1/photos): it acts as the
        person, with their role and sites. It works --valid-days days
        (default 90, at most 366; when it ends is said on stderr, so standard
        output is the token alone). It is shown this once; a new one replaces
        the previous, which stops working, and `user revoke` ends it.""",
        EXIT_CODES),

    "user list": ("who has access to the field app, and what of it works", """
        One line per person: name, role, e-mail, where they record (a qp) or
        that they read every site (an officer), and what still works of their
        access: sessions (phones and browsers signed in), the API token and
        until when, unused sign-in links. No token is shown.""", EXIT_CODES),

    "user sites": ("change where a qualified professional records", """
        --site ID (repeatable) gives the sites they record on from now on,
        --all-sites every site. Checked as `user add` checks it: an unknown
        site, or a site whose qualified_professionals roster does not list
        them, is refused with one line (exit 2). An officer reads every site
        and has none to change. It holds from their next request: a page or
        form of a site taken away answers as for a site that does not
        exist.""", """
        example:
          stormwatch user sites --config site.yaml --name "J. Rivera" \\
              --site branch-meadows --site mill-road-lot

        """ + EXIT_CODES),

    "user revoke": ("end every session, API token and sign-in link of a person", """
        For a lost phone or a token that leaked: every session of the person
        (each phone and browser), their API token and every sign-in link not
        yet used stop working at once, from the very next request, even
        while `stormwatch web` runs. The person stays, with their role and
        sites: `user link`, or a link they ask the app for by e-mail, signs
        them in again (for someone who must not: `user remove`). Inspections they recorded
        stay as they are.""", EXIT_CODES),

    "user remove": ("remove a person from the field app", """
        For someone who leaves: the person and every session, API token and
        sign-in link of theirs are deleted, effective from the very next
        request. The inspections they recorded keep their name: they are in
        the journal and the log book, which this does not touch (and
        `logbook verify` still verifies). The name may be added again later
        with `user add`.""", EXIT_CODES),

    "web": ("the field app: the inspection form on the phone, the officer's overview", """
        Serves the pages and the API of the field app on web.listen (default
        127.0.0.1:8080), beside the daemon and as its own process (systemd:
        deploy/systemd/stormwatch-web.service). It reads the state as `status`
        does and records inspections as `inspect` does; it never runs the
        engine. People are added with `stormwatch user add` and sign in with
        `stormwatch user link` the first time; after that they ask the app
        for a link by e-mail on its sign-in page (/signin), which it mails
        through the first mailto:// or mailtos:// target of notify.targets.

        Run it behind a TLS reverse proxy (deploy/Caddyfile): sign-in links
        must not cross the network in the clear. Its cookies are marked Secure
        whenever web.public_url is https or it listens beyond loopback. SIGTERM or
        SIGINT finishes the requests in flight and exits 0.""", """
        example:
          stormwatch web --config /etc/stormwatch/stormwatch.yaml

        """ + EXIT_CODES),

    "demo": ("a simulated site with an embedded broker, time accelerated", """
        The self-contained demo: an embedded MQTT broker, the real daemon, and
        a simulated site run on the real node runtime as `stormwatch simulate`
        runs it, in accelerated time. Its 0.80 in storm qualifies under
        § 134-9A(2), muddies the outfall (§ 134-8C: "substantial visible
        contrast to natural conditions") and fills the sediment trap past 50 %
        (§ 134-9A(1): "whenever their design capacity has been reduced by
        50%"); a simulated qualified professional inspects before the
        deadline. It replays the 30 hours that end as it starts. Each event
        is printed in event-time order, with the alerts it sent, a few
        simulated hours after it happened (a storm has ended only after its
        dry gap, 6 hours).

        --speed is simulated seconds per real second, 1 to 3600 (default
        1800: a day in 48 s). Faster, the simulated readings would reach the
        daemon after their sensors count as stale, and at extreme speeds as
        too old (monitor/daemon/demo.py has the arithmetic).

        --keep (or --state-dir DIR) keeps the demo's database with a
        configuration beside it (stormwatch-demo.yaml: the field app's web:
        on a loopback port, its key and photos in the directory; a qualified
        professional, J. Rivera, and an officer, M. Chen, as people) and ends
        with the commands that explore it, ready to run as printed: web (with
        a sign-in link for J. Rivera, valid 60 minutes), user link (for
        M. Chen), status, logbook and report. What it kept lies in the past,
        so these commands and the links work on the wall clock. An unusable
        --state-dir is refused at once (exit 2).

        The field app runs too, on a loopback port: the demo prints a sign-in
        link, and each alert the link to the inspection form. With
        --inspect-yourself there is no simulated inspector: when the storm
        inspection would be made, the demo's clock stands still (up to 15
        minutes) until you record it in the form.""", EXIT_CODES),
}

TOP_EPILOG = """\
Each command's --help tells the whole story of it. The documentation:
README.md (start here), config/README.md (configuration, replay input,
alerts), deploy/README.md (deployment, clocks, security), sensors/README.md
(the MQTT contract, the sensor node), monitor/README.md (how it decides).

""" + EXIT_CODES + """.
Errors are one readable line, never a traceback."""


def _unindent(text: str) -> str:
    # The texts above are indented by 8 in the source; what is left is layout.
    return re.sub(r"(?m)^ {8}", "", text).strip("\n")


def command_help(name: str) -> dict[str, Any]:
    """The keyword arguments of ``add_parser`` for the command ``name``."""
    summary, description, epilog = HELP[name]
    return {"help": summary,
            "description": textwrap.fill(summary, 76) + "\n\n" + _unindent(description),
            "epilog": _unindent(epilog), "formatter_class": argparse.RawDescriptionHelpFormatter}
