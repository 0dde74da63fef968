"""Signing in: by a single-use link (``/signin/{token}``), and asking for one by mail
from the phone (``/signin``); and the page every "not signed in" answer shows.

A person whose session ended, on a site in a storm, has their phone and their
e-mail, not the server: so every page that says they are not signed in (the
start page, a site's pages, an alert's link, a used or expired sign-in link)
offers the same form (``templates/_signin_mail.html``): their address, and a
button that mails a fresh link (``signin_mail.py``). Where they were going is
kept in ``NEXT_COOKIE``, so the mailed link lands them there (an alert's form).

The form is guarded as the sign-in post is (``auth``: the pre-sign-in cookie
and the same value in a hidden field, ``Sec-Fetch-Site``): another site must
not make a phone ask for mail, nor learn anything by trying. Its answer is one
page whatever became of the address (``SENT``).
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import FormData

from ..store.users import SIGNIN_MINUTES
from .auth import (
    NEXT_COOKIE,
    SESSION_COOKIE,
    SIGNIN_COOKIE,
    SIGNIN_FIELD,
    Refused,
    caller_of,
    clear_cookie,
    set_cookie,
    signin_nonce,
    signin_refusal,
)
from .context import Web, form_field, web_of
from .signin_mail import desk_of, normal_address

router = APIRouter()
#: The pre-sign-in cookie goes to the sign-in posts only: ``/signin`` and
#: ``/signin/{token}`` (a cookie path matches itself and what is below it).
SIGNIN_PATH: Final = "/signin"
EMAIL_FIELD: Final = "email"
#: What a person reads on every page that finds them not signed in.
ENDED: Final = ("Your sign-in has ended on this phone. Enter your e-mail address and we"
                " will send you a link.")
#: The one answer to asking for a link, whatever became of it.
SENT: Final = (f"If this address belongs to a person of this app, a sign-in link is on its"
               f" way. Open it on this phone within {SIGNIN_MINUTES} minutes; it works once."
               " Nothing after a few minutes? Check the address and your spam folder, and"
               " ask again.")


def ask_signin(web: Web, request: Request, *, status: int = 401, title: str = "Sign in",
               message: str = ENDED, next_target: str | None = None) -> Response:
    """A page that says ``message`` and offers the e-mail form; where to go after
    signing in kept when ``next_target`` (a path of this app) is given."""
    nonce = signin_nonce(request)
    caller = caller_of(request, web.users, web.now_ms())
    response = web.templates.TemplateResponse(
        request, "message.html",
        {"title": title, "message": message, "user": caller.user if caller else None,
         "mail_form": True, "check": nonce, "check_field": SIGNIN_FIELD,
         "email_field": EMAIL_FIELD, "minutes": SIGNIN_MINUTES}, status_code=status)
    _checked(web, response, nonce)
    if next_target is not None and next_target.startswith("/") \
            and not next_target.startswith("//"):
        set_cookie(response, NEXT_COOKIE, next_target, secure=web.secure_cookies,
                   max_age=3600)
    response.headers["Cache-Control"] = "no-store"
    return response


def not_signed_in(web: Web, request: Request) -> Response:
    """The answer to a page asked for without a session: the form, and the page kept
    as where to go (a GET of a page; a post's form is not there to go back to)."""
    target = None
    if request.method == "GET" and request.url.path != "/":
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return ask_signin(web, request, next_target=target)


def _checked(web: Web, response: Response, nonce: str) -> None:
    """The pre-sign-in cookie of a page whose form posts ``nonce`` back (``auth``)."""
    set_cookie(response, SIGNIN_COOKIE, nonce, secure=web.secure_cookies, max_age=86400,
               path=SIGNIN_PATH, samesite="strict")


def _limit(request: Request, web: Web) -> None:
    if not web.limiter.allow(_client(request)):
        raise Refused(429, "sign-in: too many attempts from this address; wait a minute")


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


# --------------------------------------------------------------------------- by mail


@router.get("/signin")
def signin_mail_page(request: Request) -> Response:
    """The e-mail form on its own (a bookmark, the link of a page that offers it)."""
    return ask_signin(web_of(request), request, status=200,
                      message="Enter your e-mail address and we will send you a link to"
                              " sign in on this phone.")


@router.post("/signin")
async def signin_mail(request: Request) -> Response:
    web = web_of(request)
    form = await request.form(max_files=0, max_fields=5)
    if signin_refusal(request, form_field(form, SIGNIN_FIELD)) is not None:
        return ask_signin(web, request, status=403, title="Not sent",
                          message="This did not come from this app's own page, so nothing"
                                  " was sent. Enter your e-mail address again here.")
    address = normal_address(form_field(form, EMAIL_FIELD) or "")
    if address is None:
        return ask_signin(web, request, status=422, title="Not sent",
                          message="That is not an e-mail address (name@example.org);"
                                  " nothing was sent. Enter it again.")
    desk_of(web).ask(web, address, _client(request))
    response = web.templates.TemplateResponse(
        request, "message.html", {"title": "Check your mail", "message": SENT, "user": None,
                                  "again": True}, status_code=200)
    response.headers["Cache-Control"] = "no-store"
    return response


# --------------------------------------------------------------------------- by link


@router.get("/signin/{token}")
def signin_page(token: str, request: Request) -> Response:
    """The sign-in button, and the pre-sign-in cookie its post must bring back (``auth``)."""
    web = web_of(request)
    _limit(request, web)
    nonce = signin_nonce(request)
    response = web.templates.TemplateResponse(
        request, "signin.html", {"user": None, "token": token, "check": nonce,
                                 "check_field": SIGNIN_FIELD})
    _checked(web, response, nonce)
    response.headers["Cache-Control"] = "no-store"  # its address holds the token
    return response


@router.post("/signin/{token}")
async def signin(token: str, request: Request) -> Response:
    web = web_of(request)
    _limit(request, web)
    form = await request.form(max_files=0, max_fields=5)
    refusal = signin_refusal(request, form_field(form, SIGNIN_FIELD))
    if refusal is not None:  # checked before the link is used: a refusal uses nothing up
        raise Refused(403, refusal, title="Sign-in refused")
    if web.failed_signins.full("signin"):
        raise Refused(429, "sign-in: too many failed sign-ins on this server in the last"
                           " minute; wait a minute and press Sign in again (the link was"
                           " not used)")
    user = web.users.redeem_signin(token, web.now_ms())
    if user is None:
        web.failed_signins.count("signin")
        return ask_signin(web, request, status=400, title="Link used or expired",
                          message="This sign-in link is used, expired or unknown. Enter"
                                  " your e-mail address and we will send you a new one.")
    return _session(web, request, user.name, form)


def _session(web: Web, request: Request, name: str, form: FormData) -> Response:
    """Signed in: the session cookie, and on to where the person was going."""
    assert web.config.web is not None
    remember = form.get("remember") == "on"
    days = web.config.web.session_days if remember else 1.0
    session = web.users.new_session(name, web.now_ms(), days)
    target = request.cookies.get(NEXT_COOKIE) or "/"
    if not target.startswith("/") or target.startswith("//"):
        target = "/"
    response = RedirectResponse(target, status_code=303)
    set_cookie(response, SESSION_COOKIE, session, secure=web.secure_cookies,
               max_age=round(days * 86400) if remember else None)
    clear_cookie(response, NEXT_COOKIE, secure=web.secure_cookies)
    clear_cookie(response, SIGNIN_COOKIE, secure=web.secure_cookies, path=SIGNIN_PATH)
    return response

