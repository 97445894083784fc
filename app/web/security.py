"""Browser-facing defences: security headers on every response, and CSRF checks on every change.

CSRF has two layers, because either alone leaves a gap:

1. ``SecurityMiddleware`` refuses a state-changing request (POST, PUT, PATCH, DELETE) that a
   browser says comes from another site: ``Sec-Fetch-Site`` other than same-origin/none, or, from
   browsers too old to send it, an ``Origin`` whose host is not ours. Pages of other sites cannot
   forge either header. A request with neither (curl, ``irlens upload``) is not from a browser and
   passes: on a laptop an upload needs no credentials at all.
2. A request that carries one of our cookies (the signed-in session, or the CSRF cookie every
   page with a form sets) must also carry the form's ``csrf_token`` field, or an ``X-CSRF-Token``
   header: an HMAC of the CSRF cookie under the server's secret. A cookie is ambient authority;
   the token proves the request came from a page we served. A Bearer token is not ambient (a page
   of another site cannot add one without a CORS grant we never give), so API clients sending one
   skip this; Basic credentials are (a browser resends them by itself), so they do not.

Run ids are 128 random bits and grant read access, so they must not leak through ``Referer``:
``Referrer-Policy: same-origin``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from fastapi import Depends, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.datastructures import FormData, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.auth import SESSION_COOKIE, bearer_token, secret_key
from app.web.errors import error_json

CSRF_COOKIE = "irlens_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")

# No inline script anywhere: every script is a file under /static (the snapshot page's JSON data
# block is not executed). Style attributes stay allowed (bar widths, indents, placeholder heights
# computed per row), but not <style> elements. Images: our own, plus the data: URL favicon.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; "
    "script-src 'self'; "
    "style-src 'self'; "
    "style-src-elem 'self'; "
    "style-src-attr 'unsafe-inline'; "
    "img-src 'self' data:; "
    "object-src 'none'; "
    "base-uri 'none'; "
    "form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


class SecurityMiddleware:
    """Adds the security headers, refuses cross-site changes, and hands out the CSRF cookie."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
            # no id, path or search holds a NUL, and PostgreSQL refuses one in any text it is given
            await error_json("a NUL byte in the URL", 404 if "\x00" in scope["path"] else 400,
                             SECURITY_HEADERS)(scope, receive, send)
            return
        if request.method in UNSAFE_METHODS and (refusal := cross_site_refusal(request)):
            await _forbidden(refusal)(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                new_cookie = scope.get("state", {}).get("new_csrf_cookie")
                if new_cookie:
                    base = request.app.state.urls.base or "/"
                    secure = "; Secure" if request.url.scheme == "https" else ""
                    headers.append(
                        "set-cookie",
                        f"{CSRF_COOKIE}={new_cookie}; Path={base}; HttpOnly; SameSite=Strict{secure}",
                    )
            await send(message)

        await self.app(scope, receive, send_with_headers)


def cross_site_refusal(request: Request) -> str | None:
    """Why a state-changing request is refused as cross-site, or None if it may go on."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        if site in ("same-origin", "none"):  # none: typed in the address bar, a bookmark
            return None
        return f"cross-site request refused (Sec-Fetch-Site: {site})"
    origin = request.headers.get("origin")
    if origin is None:
        return None  # not a browser, or one too old for either header: layer 2 still applies
    if origin != "null" and _same_host(origin, request.headers.get("host", "")):
        return None
    return "cross-origin request refused (Origin does not match Host)"


def _same_host(origin: str, host: str) -> bool:
    """Whether an Origin names the Host the request came to. Ports default to the origin's scheme's
    (behind a TLS proxy the app may see http while the browser says https)."""
    try:
        url, ours = urlsplit(origin), urlsplit("//" + host)
        default = {"http": 80, "https": 443}.get(url.scheme)
        return bool(url.hostname) and url.hostname == ours.hostname and (url.port or default) == (ours.port or default)
    except ValueError:  # a port that is not a number
        return False


def _forbidden(message: str) -> JSONResponse:
    return error_json(message, 403, SECURITY_HEADERS)


# -- the CSRF token ------------------------------------------------------------------------------------


def _token_for(request: Request, cookie: str) -> str:
    return hmac.new(secret_key(request), b"irlens-csrf:" + cookie.encode("utf-8"), hashlib.sha256).hexdigest()


def csrf_token(request: Request) -> str:
    """The token a page's forms carry. A visitor without the CSRF cookie gets one with this response."""
    cookie = request.cookies.get(CSRF_COOKIE) or request.scope.setdefault("state", {}).get("new_csrf_cookie")
    if not cookie:
        cookie = secrets.token_urlsafe(32)
        request.scope["state"]["new_csrf_cookie"] = cookie
    return _token_for(request, cookie)


def check_csrf(request: Request, form: FormData | None = None) -> None:
    """Raise 403 unless a cookie-carrying request also carries a valid token (layer 2 above)."""
    if request.method not in UNSAFE_METHODS or bearer_token(request) is not None:
        return
    cookies = request.cookies
    if CSRF_COOKIE not in cookies and SESSION_COOKIE not in cookies:
        return  # no ambient authority to abuse; layer 1 judged where the request came from
    sent = request.headers.get(CSRF_HEADER) or (str(form.get(CSRF_FIELD) or "") if form is not None else "")
    cookie = cookies.get(CSRF_COOKIE)
    expected = _token_for(request, cookie).encode() if cookie else b""
    if not sent or not expected or not hmac.compare_digest(sent.encode("utf-8", "replace"), expected):
        raise HTTPException(403, "missing or stale CSRF token: reload the page and try again")


async def csrf_protect(request: Request) -> None:
    """Route dependency (``dependencies=[CSRF]``) for forms and JSON calls. The upload route calls
    ``check_csrf`` itself, after parsing its multipart body with the upload limits."""
    form = None
    content_type = request.headers.get("content-type", "")
    if request.method in UNSAFE_METHODS and CSRF_HEADER not in request.headers and content_type.startswith(FORM_TYPES):
        form = await request.form()  # cached on the request: the route's Form() fields reuse it
    check_csrf(request, form)


CSRF = Depends(csrf_protect)


async def server_error(request: Request, error: Exception) -> PlainTextResponse:
    """A 500 with the security headers: Starlette sends it from outside every middleware."""
    return PlainTextResponse("Internal Server Error", status_code=500, headers=SECURITY_HEADERS)
