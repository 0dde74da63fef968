#!/usr/bin/env python3
"""Benchmark the field app (``stormwatch web``): page times and upload memory.

1. **Page times**: ``--sites`` sites, each with a season of log book
   (``--weeks`` weekly inspections with findings and a corrective action, all
   through the journal and the engine as ``stormwatch inspect`` records them);
   the server time of the inspection form of one site and of the officer's
   page of every site, ``--requests`` of each through the real app in process
   (FastAPI's TestClient): p50 and p99, against the target p99 < 200 ms.
2. **Upload memory**: ``stormwatch web`` as its own process; ``--photos``
   photos of ``--photo-mb`` MB each uploaded at once from as many threads;
   the process's peak resident memory (``VmHWM``) against its memory before,
   and against the target of 200 MB (uploads stream to disk).

No result fails the script; the ratio lines are against the targets.

    .venv/bin/python bench/web.py
    .venv/bin/python bench/web.py --sites 10 --weeks 4 --requests 20 --photos 2
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def fill(config_path: Path, weeks: int) -> None:
    """A season of weekly inspections at every site, journaled, then the engine run once."""
    from monitor.config.file import load_config
    from monitor.host.engine import EngineHost
    from monitor.host.inspections import ActionArg, build_inspection
    from monitor.host.rows import journal_in
    from monitor.store.opening import open_store
    from monitor.store.users import User, Users

    config = load_config(config_path, env={})
    now = round(time.time() * 1000)
    rows = []
    for site in config.sites:
        for w in range(weeks, 0, -1):
            at = now - w * 7 * 86_400_000
            insp = build_inspection(config, site.id, ["J. Rivera"], at=None, kind="routine",
                                    notes="weekly", findings=["silt-fence: needs_repair: sag"],
                                    actions=[ActionArg("restake")], resolves=[], now_ms=at,
                                    via="web")
            rows.append(journal_in(insp, topic=None, received_ms=at))
    with open_store(config) as store:
        store.journal.commit(rows)
        host = EngineHost.restore(config, store)
        host.catch_up()
        host.record_status()
        host.snapshot()
    with Users.open(Path(config.state_dir)) as users:
        users.add(User("J. Rivera", "qp", None, ()))
        users.add(User("Officer", "officer", None, ()))


def signed_in(client: object, state: Path, name: str) -> None:
    from monitor.store.users import Users
    with Users.open(state) as users:
        token = users.issue_signin(name, round(time.time() * 1000))
    # The sign-in page first: its post must bring back the page's pre-sign-in check.
    shown = client.get(f"/signin/{token}").text  # type: ignore[attr-defined]
    check = shown.split('name="signin_check" value="')[1].split('"')[0]
    client.post(f"/signin/{token}", data={"signin_check": check},  # type: ignore[attr-defined]
                follow_redirects=False)


def page_times(config_path: Path, requests: int) -> dict[str, list[float]]:
    from fastapi.testclient import TestClient

    from monitor.config.file import load_config
    from monitor.web.app import create_app

    config = load_config(config_path, env={})
    app = create_app(config)
    state = Path(config.state_dir)
    out: dict[str, list[float]] = {}
    for name, who, path in (("form", "J. Rivera", "/sites/site-000/inspect"),
                            ("officer", "Officer", "/officer")):
        client = TestClient(app)
        signed_in(client, state, who)
        assert client.get(path).status_code == 200
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            got = client.get(path)
            times.append((time.perf_counter() - t0) * 1000)
            assert got.status_code == 200
        out[name] = times
    return out


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
    parser.add_argument("--photos", type=int, default=10)
    parser.add_argument("--photo-mb", type=float, default=10.0)
    args = parser.parse_args()
    from tests.support.childproc import free_port

    with tempfile.TemporaryDirectory(prefix="stormwatch-bench-web-") as tmp:
        port = free_port()
        path = write_config(Path(tmp), args.sites, port, max(15.0, args.photo_mb + 1))
        t0 = time.perf_counter()
        fill(path, args.weeks)
        print(f"log book: {args.sites} sites x {args.weeks} inspections in"
              f" {time.perf_counter() - t0:.1f} s", flush=True)
        times = page_times(path, args.requests)
        for name, ms in times.items():
            ms.sort()
            p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
            print(f"{name} page: p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms"
                  f" ({len(ms)} requests)", flush=True)
            print(f"ratio: {name} page p99 / 200 ms target = {p99 / 200:.2f}")
        before, peak = upload_memory(path, port, args.photos, args.photo_mb)
        print(f"upload: {args.photos} x {args.photo_mb:g} MB at once: peak RSS {peak:.0f} MB"
              f" (idle {before:.0f} MB)", flush=True)
        print(f"ratio: web peak RSS / 200 MB target = {peak / 200:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
