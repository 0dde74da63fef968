"""Dewatering turbidity samples taken by hand (EPA CGP 2022 Part 3.3.1): the site page's
form for them, at a site whose permits watch a dewatering discharge point.

``POST /sites/{id}/samples``  a qualified professional of the site: the discharge
    point (one of the permits' ``dewatering`` sensors), the meter's NTU and when it
    was taken (the site's local time; default now). Journaled as a reading of that
    sensor (``host/samples.py``), which the benchmark averages like a probe's.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from ..contract.rejects import Rejection
from ..contract.times import parse_iso
from ..host.samples import commit_sample, sample_reading
from ..rules.permits.benchmark import watches
from .auth import CSRF_FIELD, Refused, check_csrf, check_site
from .context import form_field, web_of
from .pages import signed_in
from .record import LOCAL_INPUT, local_input_to_iso

router = APIRouter()


@router.post("/sites/{site_id}/samples")
async def post_sample(site_id: str, request: Request) -> Response:
    web = web_of(request)
    caller = signed_in(request, web)
    check_site(caller, web.config, site_id, record=True)
    form = await request.form()
    check_csrf(web.secret, caller, form_field(form, CSRF_FIELD))
    site = web.config.site(site_id)
    assert site is not None  # check_site refused an unknown one
    sensor = form_field(form, "sensor") or ""
    if sensor not in sorted(watches(site)):
        raise Refused(422, f"sensor: {sensor!r} is no dewatering discharge point of the "
                           f"site ({', '.join(sorted(watches(site))) or 'it has none'})")
    try:
        ntu = float(form_field(form, "ntu") or "")
    except ValueError:
        raise Refused(422, "ntu: the meter's reading, a number of NTU") from None
    now = web.now_ms()
    taken = form_field(form, "taken_at") or ""
    if taken and not LOCAL_INPUT.fullmatch(taken):
        raise Refused(422, "taken_at: a local date and time (YYYY-MM-DDTHH:MM)")
    at_ms = parse_iso(local_input_to_iso(web.config, site_id, taken)) if taken else now
    reading = sample_reading(web.config, site_id, sensor, ntu, at_ms, now)
    if isinstance(reading, Rejection):
        raise Refused(422, reading.detail)
    await run_in_threadpool(commit_sample, web.config, reading)
    return RedirectResponse(f"/sites/{site_id}#samples", status_code=303)
