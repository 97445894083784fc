"""Sign-in (a token, checked once, becomes a signed session cookie), sign-out, and "who am I"."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from app.settings import Settings
from app.store.models import ApiToken
from app.urls import Urls
from app.web.auth import (
    ANONYMOUS,
    SESSION_COOKIE,
    SESSION_MAX_AGE,
    Identity,
    find_token,
    identify,
    secret_key,
    sign_session,
)
from app.web.responder import respond
from app.web.security import CSRF

router = APIRouter()


def _safe_next(urls: Urls, value: str | None) -> str:
    """Only a path on this site: never another host (no open redirect)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return urls.home()
    return value


def _page_data(request: Request, identity: Identity, next_url: str, error: str | None = None) -> dict:
    settings: Settings = request.app.state.settings
    urls: Urls = request.app.state.urls
    return {
        "identity": identity.as_dict(),
        "require_token": settings.require_token,
        "require_token_to_read": settings.require_token_to_read,
        "next": next_url,
        "error": error,
        "signin_url": urls.signin(),
        "signout_url": urls.signout(),
    }


async def _identity_or_anonymous(request: Request) -> Identity:
    try:
        return await run_in_threadpool(identify, request)
    except HTTPException:
        return ANONYMOUS


@router.get("/-/signin")
@router.get("/-/signin.json")
async def signin_page(request: Request, next_url: Annotated[str | None, Query(alias="next")] = None):
    urls: Urls = request.app.state.urls
    identity = await _identity_or_anonymous(request)
    return respond(request, "signin.html", _page_data(request, identity, _safe_next(urls, next_url)))


@router.post("/-/signin", dependencies=[CSRF])
async def signin(request: Request):
    urls: Urls = request.app.state.urls
    form = await request.form()
    token_text = str(form.get("token") or "").strip()
    next_url = _safe_next(urls, str(form.get("next") or ""))

    def check() -> ApiToken | None:
        with request.app.state.db.session() as session:
            return find_token(session, token_text) if token_text else None

    token = await run_in_threadpool(check)
    if token is None:
        data = _page_data(
            request, ANONYMOUS, next_url, "That token is not valid (revoked, or never made here)."
        )
        return respond(request, "signin.html", data, status=401)
    response = RedirectResponse(next_url, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        sign_session(secret_key(request), token),
        max_age=SESSION_MAX_AGE,
        path=urls.base or "/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/-/signout", dependencies=[CSRF])
def signout(request: Request):
    urls: Urls = request.app.state.urls
    response = RedirectResponse(urls.signin(), status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=urls.base or "/", httponly=True, samesite="lax")
    return response


@router.get("/-/whoami.json")
def whoami(request: Request):
    """Who the server takes you for (a Bearer token that is not valid gets 401): `irlens upload` asks first."""
    settings: Settings = request.app.state.settings
    identity = identify(request)
    return JSONResponse(
        {
            **identity.as_dict(),
            "require_token": settings.require_token,
            "require_token_to_read": settings.require_token_to_read,
        }
    )
