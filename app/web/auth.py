"""Who is asking, and what they may do.

Three ways to say who you are, checked in this order:
- an API token, `Authorization: Bearer T` (made by `irlens token create NAME`; only its sha256 is stored);
- the signed session cookie the sign-in form (/-/signin) sets after checking a token;
- the header a trusted reverse proxy sets (the `trusted_user_header` setting, e.g. X-Forwarded-User).

The token's name is the identity: a run uploaded with a token records it as the run's owner.
With `require_token` off (a laptop), nobody needs to say anything and every run is on the home page.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from sqlalchemy import or_, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.settings import Settings
from app.store.models import ApiToken, Run
from app.web.errors import error_json

log = logging.getLogger("irlens")

TOKEN_PREFIX = "irl_"
SESSION_COOKIE = "irlens_session"
SESSION_MAX_AGE = 30 * 24 * 3600
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}$")
# Paths anyone may fetch even when reading needs a token (relative to the base URL).
OPEN_PATHS = ("/-/health", "/-/health.json", "/-/signin", "/-/signin.json", "/-/signout", "/-/whoami.json")
OPEN_PREFIXES = ("/static/",)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Identity:
    """Who made a request. `via` is "token", "session", "header", or None for nobody."""

    name: str | None = None
    via: str | None = None

    @property
    def has_token(self) -> bool:
        """Proved with a token (directly or through the sign-in cookie): may upload and change own runs."""
        return self.via in ("token", "session")

    def as_dict(self) -> dict:
        return {"name": self.name, "via": self.via}


ANONYMOUS = Identity()


class Unauthorized(HTTPException):
    def __init__(
        self, detail: str = "an API token is needed: send Authorization: Bearer TOKEN or sign in"
    ) -> None:
        super().__init__(401, detail, headers={"WWW-Authenticate": 'Bearer realm="irlens"'})


# -- tokens --------------------------------------------------------------------------------------------


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """32 random bytes, URL-safe; the prefix lets secret scanners recognise a leaked one."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_token(session: Session, name: str) -> str:
    """A new token for `name`, returned once: only its hash is kept. The caller commits."""
    if not TOKEN_NAME.match(name):
        raise ValueError(f"bad token name {name!r}: use letters, digits and . _ @ + - (up to 200)")
    if session.scalar(select(ApiToken.pk).where(ApiToken.name == name)) is not None:
        raise ValueError(f"a token named {name!r} exists: revoke it first")
    token = new_token()
    session.add(ApiToken(name=name, token_hash=hash_token(token)))
    session.flush()
    log.info("created API token %s", name)
    return token


def list_tokens(session: Session) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).order_by(ApiToken.name)))


def revoke_token(session: Session, name: str) -> bool:
    """Delete the token named `name` (its sign-in sessions end with it). The caller commits."""
    token = session.scalar(select(ApiToken).where(ApiToken.name == name))
    if token is None:
        return False
    session.delete(token)
    session.flush()
    log.info("revoked API token %s", name)
    return True


def find_token(session: Session, token: str) -> ApiToken | None:
    digest = hash_token(token)
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest))
    if row is None or not hmac.compare_digest(row.token_hash, digest):
        return None
    return row


# -- the signing key and the session cookie ----------------------------------------------------------------


def load_secret_key(settings: Settings) -> bytes:
    """The `secret_key` setting, or a key generated once and kept in data_dir/secret_key (mode 600)."""
    if settings.secret_key:
        return settings.secret_key.encode("utf-8")
    path = Path(settings.data_dir) / "secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:  # we won the race to create it (several workers may start at once)
        with os.fdopen(descriptor, "w") as key_file:
            key_file.write(secrets.token_hex(32) + "\n")
        log.info("generated a session signing key in %s", path)
    for _ in range(50):  # another worker may be between creating and writing it
        key = path.read_text().strip()
        if key:
            return key.encode("utf-8")
        time.sleep(0.02)
    raise RuntimeError(f"{path} is empty: delete it, or set IRLENS_SECRET_KEY")


def secret_key(request: Request) -> bytes:
    state = request.app.state
    key = getattr(state, "secret_key", None)
    if key is None:
        key = state.secret_key = load_secret_key(state.settings)
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, b"irlens-session:" + payload.encode("ascii"), hashlib.sha256).digest())


def sign_session(key: bytes, token: ApiToken, now: float | None = None) -> str:
    payload = _b64(json.dumps({"n": token.name, "k": token.pk, "t": int(now or time.time())}).encode("utf-8"))
    return f"{payload}.{_signature(key, payload)}"


def read_session(key: bytes, value: str, now: float | None = None) -> tuple[str, int] | None:
    """(token name, token pk) from a cookie we signed and that has not expired; None otherwise."""
    payload, _, signature = value.partition(".")
    if not payload or not signature or not hmac.compare_digest(signature, _signature(key, payload)):
        return None
    try:
        fields = json.loads(_unb64(payload))
        name, token_pk, issued = str(fields["n"]), int(fields["k"]), int(fields["t"])
    except (ValueError, KeyError, TypeError):
        return None
    if (now or time.time()) - issued > SESSION_MAX_AGE:
        return None
    return name, token_pk


# -- identifying a request ----------------------------------------------------------------------------


def bearer_token(request: Request) -> str | None:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credentials.strip() or None


def identify(request: Request) -> Identity:
    """Who is asking (blocking: it may read the database). Cached for the request.

    A Bearer token that is not valid is an error (401), never a silent fall-back to anonymous.
    """
    cached = getattr(request.state, "identity", None)
    if cached is not None:
        return cached
    identity = _identify(request)
    request.state.identity = identity
    return identity


def _identify(request: Request) -> Identity:
    settings: Settings = request.app.state.settings
    bearer = bearer_token(request)
    if bearer is not None:
        with request.app.state.db.session() as session:
            token = find_token(session, bearer)
        if token is None:
            raise Unauthorized("this API token is not valid (revoked, or never made here)")
        return Identity(token.name, "token")
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        signed = read_session(secret_key(request), cookie)
        if signed is not None:
            name, token_pk = signed
            with request.app.state.db.session() as session:
                token = session.get(ApiToken, token_pk)
            if token is not None and token.name == name:  # a revoked token ends its sessions
                return Identity(name, "session")  # cross-site changes: app/web/security.py refuses them
    if settings.trusted_user_header:
        user = request.headers.get(settings.trusted_user_header, "").strip()
        if user:
            return Identity(user[:200], "header")
    return ANONYMOUS


def current_identity(request: Request) -> Identity:
    return identify(request)


IdentityDep = Annotated[Identity, Depends(current_identity)]


def uploader(identity: Identity, settings: Settings) -> str | None:
    """The owner to record for an upload, or Unauthorized when a token is required and missing."""
    if settings.require_token and not identity.has_token:
        raise Unauthorized()
    return identity.name


async def upload_owner(request: Request) -> str | None:
    """For async views (the upload): check the token before reading the body; the owner's name."""
    identity = await run_in_threadpool(identify, request)
    return uploader(identity, request.app.state.settings)


def may_change(identity: Identity, run: Run, settings: Settings) -> bool:
    """Retitle, retag, list or delete a run: its owner (by token); anyone when tokens are off."""
    if not settings.require_token:
        return True
    return identity.has_token and identity.name is not None and identity.name == run.owner


def check_may_change(identity: Identity, run: Run, settings: Settings) -> None:
    if may_change(identity, run, settings):
        return
    if not identity.has_token:
        raise Unauthorized("changing a run needs its owner's token: sign in or send Authorization: Bearer")
    raise HTTPException(403, f"only {run.owner or 'nobody (the run has no owner)'} may change this run")


def visible_runs(identity: Identity, settings: Settings) -> ColumnElement[bool] | None:
    """Which runs a reader sees in lists (home, search); None means all of them.

    Without tokens (a laptop) everything is listed. Otherwise: runs marked listed, plus the reader's
    own. An unlisted run stays readable by anyone who has its link: its 128-bit id is the capability.
    """
    if not settings.require_token:
        return None
    if identity.name:
        return or_(Run.listed.is_(True), Run.owner == identity.name)
    return Run.listed.is_(True)


# -- the read gate ----------------------------------------------------------------------------------


def is_open_path(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


class AuthMiddleware:
    """Identifies each request once; with `require_token_to_read`, turns away anyone unidentified.

    Browsers asking for a page are sent to the sign-in form; API clients get 401.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        settings: Settings = request.app.state.settings
        urls = request.app.state.urls
        path = urls.route(scope.get("path", ""))
        gated = settings.require_token_to_read and not is_open_path(path)
        wants_identity = settings.require_token or settings.trusted_user_header
        if not gated and wants_identity and not path.startswith(OPEN_PREFIXES) and _has_credentials(request):
            # Not required here, but pages show who is signed in: identify now (a bad token is the view's 401).
            with contextlib.suppress(HTTPException):
                await run_in_threadpool(identify, request)
        if gated:
            try:
                identity = await run_in_threadpool(identify, request)
            except HTTPException as error:
                await self._refuse(error, scope, receive, send)
                return
            if identity.name is None:
                if request.method == "GET" and _wants_page(request, path):
                    target = urls.path(path) + (f"?{request.url.query}" if request.url.query else "")
                    response = RedirectResponse(urls.signin(target), status_code=303)
                    await response(scope, receive, send)
                    return
                await self._refuse(Unauthorized(), scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(error: HTTPException, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_json(error.detail, error.status_code, error.headers)
        await response(scope, receive, send)


def _has_credentials(request: Request) -> bool:
    settings: Settings = request.app.state.settings
    headers = request.headers
    return bool(
        "authorization" in headers
        or SESSION_COOKIE in request.cookies
        or (settings.trusted_user_header and settings.trusted_user_header.lower() in headers)
    )


def _wants_page(request: Request, path: str) -> bool:
    if path.endswith(".json") or request.headers.get("authorization"):
        return False
    return "text/html" in request.headers.get("accept", "")
