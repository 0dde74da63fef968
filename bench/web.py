#!/usr/bin/env python3
"""Benchmark the field app (``stormwatch web``): page times and upload memory.

1. **Page times**: ``--sites`` sites, each with a season of log book
   (``--weeks`` weeks, each with a storm of 0.8 in, its storm inspection and a
   routine inspection with a finding and a corrective action, all through the
   journal and the engine as the daemon and ``stormwatch inspect`` record
   them); the server time of every page (``PAGES``: my sites, a site, the
   inspection form, its answer (a form post recording an inspection), the
   officer's overview, the report as HTML), ``--requests`` of each (``--answers``
   answer pages) through the real app in process (FastAPI's TestClient), no
   daemon running (the answer page then brings the engine up to date itself, as
   ``stormwatch inspect`` does): p50 and p99, against the target
   p99 < 200 ms, and against a baseline run's (``--save`` a run of an older
   commit's code with ``--code`` its worktree, then ``--baseline`` that file).
2. **Upload memory**: ``stormwatch web`` as its own process; ``--photos``
   photos of ``--photo-mb`` MB each uploaded at once from as many threads;
   the process's peak resident memory (``VmHWM``) against its memory before,
   and against the target of 200 MB (uploads stream to disk).

No result fails the script; the ratio lines are against the targets.

    .venv/bin/python bench/web.py
    .venv/bin/python bench/web.py --sites 10 --weeks 4 --requests 20 --photos 2
    git worktree add /tmp/base REV && .venv/bin/python bench/web.py --photos 0 \
        --code /tmp/base --save base.json && .venv/bin/python bench/web.py --baseline base.json
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SITE_YAML = """\
  - id: site-{i:03d}
    timezone: America/New_York
    condition: B
    practices: [{{id: silt-fence, name: Silt fence}}, {{id: inlet, name: Inlet protection}}]
    sensors: [{{id: rg1, kind: rain, in_per_tip: 0.01, stale_after_minutes: 600}}]
"""


def write_config(root: Path, sites: int, port: int, photo_mb: float) -> Path:
    key = root / "web.key"
    key.write_bytes(b"b" * 32)
    text = (f"broker: {{host: 127.0.0.1, port: 1}}\nstate_dir: {root / 'state'}\n"
            f"web: {{public_url: 'http://127.0.0.1:{port}', secret_file: '{key}',"
            f" listen: '127.0.0.1:{port}', max_photo_mb: {photo_mb}}}\n"
            "qualified_professionals: [{name: J. Rivera}]\nsites:\n"
            + "".join(SITE_YAML.format(i=i) for i in range(sites)))
    path = root / "stormwatch.yaml"
    path.write_text(text)
    return path


def season_rows(config: Any, weeks: int, now: int, unresolved: bool = False) -> list[Any]:
    """Each week at every site: a storm of 0.8 in (a tips counter every 30 min over 4 h,
    then dry), the storm inspection the next day, and the routine one with a finding and a
    corrective action, as ``stormwatch inspect`` records them; each inspection resolves
    the one before's corrective action (``unresolved``: none is ever resolved, the worst
    case: a season of open actions at every site)."""
    from monitor.contract.inputs import Reading
    from monitor.host.inspections import ActionArg, build_inspection
    from monitor.host.rows import journal_in

    rows = []
    for site in config.sites:
        tips = 0
        still_open: list[str] = []
        for w in range(weeks, 0, -1):
            at = now - w * 7 * 86_400_000
            storm = at + 2 * 86_400_000
            for step in range(10):  # 4.5 h of rain, then readings through the dry gap
                tips += 10 if step < 8 else 0
                ts = storm + step * 1_800_000 + (4 * 3_600_000 if step == 9 else 0)
                rows.append(journal_in(Reading(site=site.id, sensor="rg1", kind="rain",
                                               ts_ms=ts, tips_total=tips),
                                       topic=None, received_ms=ts))
            for kind, when in (("routine", at), ("storm", storm + 86_400_000)):
                insp = build_inspection(config, site.id, ["J. Rivera"], at=None, kind=kind,
                                        notes="weekly",
                                        findings=["silt-fence: needs_repair: sag"],
                                        actions=[ActionArg("restake")],
                                        resolves=[] if unresolved else still_open,
                                        now_ms=when, via="web")
                still_open = [a.id for a in insp.corrective_actions]
                rows.append(journal_in(insp, topic=None, received_ms=when))
    rows.sort(key=lambda r: r.ts_ms)
    return rows


def fill(config_path: Path, weeks: int, unresolved: bool = False) -> int:
    """A season at every site (``season_rows``), journaled, then the engine run once;
    the people who sign in. Returns the number of events stored."""
    from monitor.config.file import load_config
    from monitor.host.engine import EngineHost
    from monitor.store.opening import open_store
    from monitor.store.users import User, Users

    config = load_config(config_path, env={})
    rows = season_rows(config, weeks, round(time.time() * 1000), unresolved)
    with open_store(config) as store:
        store.journal.commit(rows)
        host = EngineHost.restore(config, store)
        host.catch_up()
        host.record_status()
        host.snapshot()
        events = int(store.db.conn.execute("SELECT count(*) FROM events").fetchone()[0])
    with Users.open(Path(config.state_dir)) as users:
        users.add(User("J. Rivera", "qp", None, ()))
        users.add(User("Officer", "officer", None, ()))
    return events


def signed_in(client: object, state: Path, name: str) -> None:
    from monitor.store.users import Users
    with Users.open(state) as users:
        token = users.issue_signin(name, round(time.time() * 1000))
    # The sign-in page first: its post must bring back the page's pre-sign-in check.
    shown = client.get(f"/signin/{token}").text  # type: ignore[attr-defined]
    check = shown.split('name="signin_check" value="')[1].split('"')[0]
    client.post(f"/signin/{token}", data={"signin_check": check},  # type: ignore[attr-defined]
                follow_redirects=False)


#: The pages measured: (name, who asks, path; None for the answer page, a form post).
PAGES = (("home", "J. Rivera", "/"), ("site", "J. Rivera", "/sites/site-000"),
         ("form", "J. Rivera", "/sites/site-000/inspect"), ("answer", "J. Rivera", None),
         ("officer", "Officer", "/officer"), ("report", "J. Rivera", "/sites/site-000/report"))


def answer_form(client: Any) -> dict[str, str]:
    """The inspection form's fields as a person sends them: a fresh idempotency key and
    CSRF token from the form page (not timed), certified, one finding."""
    shown = client.get("/sites/site-000/inspect").text

    def hidden(name: str) -> str:
        return str(shown.split(f'name="{name}" value="')[1].split('"')[0])

    return {"csrf": hidden("csrf"), "idempotency_key": hidden("idempotency_key"),
            "inspector": "J. Rivera", "kind": "routine", "certified": "on",
            "p.silt-fence.condition": "ok", "notes": "bench"}


def page_times(config_path: Path, requests: int, answers: int,
               pages: list[str] | None = None) -> dict[str, list[float]]:
    """The server time of each of ``PAGES``, ``requests`` times (the answer page
    ``answers`` times: each records an inspection), through the real app."""
    from fastapi.testclient import TestClient

    from monitor.config.file import load_config
    from monitor.web.app import create_app

    config = load_config(config_path, env={})
    app = create_app(config)
    state = Path(config.state_dir)
    out: dict[str, list[float]] = {}
    clients: dict[str, TestClient] = {}  # one sign-in each: sign-ins are rate-limited
    for name, who, path in PAGES:
        if pages and name not in pages:
            continue
        if who not in clients:
            clients[who] = TestClient(app)
            signed_in(clients[who], state, who)
        client = clients[who]
        times = []
        for i in range((requests if path is not None else answers) + 1):  # 1st: warm-up
            form = answer_form(client) if path is None else None
            t0 = time.perf_counter()
            got = (client.post("/sites/site-000/inspect", data=form) if form is not None
                   else client.get(str(path)))
            elapsed = (time.perf_counter() - t0) * 1000
            assert got.status_code == (201 if form is not None else 200), (name, got.text[:300])
            if i:
                times.append(elapsed)
        out[name] = times
    return out


def p99(ms: list[float]) -> float:
    ordered = sorted(ms)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def report_times(times: dict[str, list[float]], baseline: dict[str, list[float]]) -> None:
    """p50, p99 and the ratios: p99 to the 200 ms target, and each to the baseline's."""
    for name, ms in times.items():
        p50, top = statistics.median(ms), p99(ms)
        print(f"{name} page: p50 {p50:.1f} ms, p99 {top:.1f} ms ({len(ms)} requests)",
              flush=True)
        print(f"ratio: {name} page p99 / 200 ms target = {top / 200:.2f}")
        old = baseline.get(name)
        if old:
            print(f"ratio: {name} page to baseline: p50 {p50 / statistics.median(old):.2f},"
                  f" p99 {top / p99(old):.2f} (baseline p50 {statistics.median(old):.1f} ms,"
                  f" p99 {p99(old):.1f} ms)")


def photo(mb: float) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (10, 80, 20)).save(buf, "JPEG")
    return buf.getvalue() + b"\0" * round(mb * 1_000_000 - buf.tell())  # data after EOI


def hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def upload_memory(config_path: Path, port: int, photos: int, mb: float) -> tuple[float, float]:
    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from monitor.store.users import Users
    from tests.support.webkit import WebProcess

    web = WebProcess(config_path, port)
    try:
        before = hwm_mb(web.proc.pid)
        with Users.open(config_path.parent / "state") as users:
            token = users.issue_api_token("J. Rivera", round(time.time() * 1000))
        data = photo(mb)
        codes: list[int] = []

        def send() -> None:
            got = httpx.post(web.url + "/api/v1/photos", timeout=120,
                             headers={"Authorization": f"Bearer {token}"},
                             files={"photo": ("p.jpg", data, "image/jpeg")})
            codes.append(got.status_code)

        threads = [threading.Thread(target=send) for _ in range(photos)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert codes == [201] * photos, codes
        return before, hwm_mb(web.proc.pid)
    finally:
        web.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=100)
    parser.add_argument("--weeks", type=int, default=26)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--unresolved", action="store_true",
                        help="never resolve a corrective action (the worst case)")
    parser.add_argument("--answers", type=int, default=20,
                        help="answer pages (each records an inspection: slower)")
    parser.add_argument("--pages", nargs="*", choices=[p[0] for p in PAGES],
                        help="only these pages (default: all)")
    parser.add_argument("--photos", type=int, default=10)
    parser.add_argument("--photo-mb", type=float, default=10.0)
    parser.add_argument("--code", type=Path, help="import `monitor` from this checkout"
                        " (an older commit's worktree: the baseline run)")
    parser.add_argument("--save", type=Path, help="write the page times here (JSON)")
    parser.add_argument("--baseline", type=Path, help="page times of a baseline run (--save)")
    args = parser.parse_args()
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    from tests.support.childproc import free_port

    with tempfile.TemporaryDirectory(prefix="stormwatch-bench-web-") as tmp:
        port = free_port()
        path = write_config(Path(tmp), args.sites, port, max(15.0, args.photo_mb + 1))
        t0 = time.perf_counter()
        events = fill(path, args.weeks, args.unresolved)
        print(f"log book: {args.sites} sites x {args.weeks} weeks ({events} events) in"
              f" {time.perf_counter() - t0:.1f} s", flush=True)
        times = page_times(path, args.requests, args.answers, args.pages)
        if args.save is not None:
            args.save.write_text(json.dumps(times))
        report_times(times, json.loads(args.baseline.read_text()) if args.baseline else {})
        if args.photos:
            before, peak = upload_memory(path, port, args.photos, args.photo_mb)
            print(f"upload: {args.photos} x {args.photo_mb:g} MB at once: peak RSS"
                  f" {peak:.0f} MB (idle {before:.0f} MB)", flush=True)
            print(f"ratio: web peak RSS / 200 MB target = {peak / 200:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
