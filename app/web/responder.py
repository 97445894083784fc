"""Shared web plumbing: templates, the page/JSON twin responder, dependencies."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.urls import Urls, parse_int
from app.web.errors import error_json
from app.web.security import csrf_token

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"
templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
templates.env.globals["csrf_token"] = csrf_token  # every state-changing form: {{ csrf_token(request) }}


def render_block(template_name: str, block: str, context: dict) -> str:
    """One named block of a page template, for an htmx swap of that part alone."""
    template = templates.env.get_template(template_name)
    return "".join(template.blocks[block](template.new_context(context)))


def warm_up() -> None:
    """Compile every template now: compiling them took ~240 ms, which the first request for each
    kind of page after a start paid (the first snapshot page of a fresh server: 267 ms against 149)."""
    for name in templates.env.list_templates(extensions=["html"]):
        templates.env.get_template(name)


def get_session(request: Request):
    with request.app.state.db.session() as session:
        yield session


def get_urls(request: Request) -> Urls:
    return request.app.state.urls


SessionDep = Annotated[Session, Depends(get_session)]
UrlsDep = Annotated[Urls, Depends(get_urls)]


def wants_json(request: Request) -> bool:
    return request.url.path.endswith(".json")


def strip_json(value: str) -> str:
    return value.removesuffix(".json")


def int_param(value: str) -> int:
    number = parse_int(strip_json(value))
    if number is None:  # not a number, or too large to be any row's
        raise HTTPException(404, "not found")
    return number


def prefers_html(request: Request) -> bool:
    """A browser's page view or plain form post (no JavaScript): answer with HTML (a page, a redirect).

    XHR, htmx and curl calls get JSON, and so do .json paths and any Accept that does not rank
    text/html above application/json (curl's `*/*` ranks them equal).
    """
    headers = request.headers
    if wants_json(request):
        return False
    if headers.get("hx-request") or headers.get("x-requested-with", "").lower() == "xmlhttprequest":
        return False
    if headers.get("user-agent", "").lower().startswith("curl/"):
        return False
    ranks = _accept_ranks(headers.get("accept", ""))
    return _quality(ranks, "text/html") > _quality(ranks, "application/json")


def _accept_ranks(accept: str) -> list[tuple[str, float]]:
    ranks = []
    for part in accept.split(","):
        media, *params = (piece.strip() for piece in part.split(";"))
        if not media:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        ranks.append((media.lower(), quality))
    return ranks


def _quality(ranks: list[tuple[str, float]], media: str) -> float:
    """The q of the most specific range matching `media` (exact, then type/*, then */*)."""
    kind = media.split("/")[0]
    for candidate in (media, f"{kind}/*", "*/*"):
        for range_, quality in ranks:
            if range_ == candidate:
                return quality
    return 0.0


async def http_error(request: Request, error: StarletteHTTPException):
    """Errors as a page for browsers (a stale form, a dead link), as {"error", "detail"} JSON for the rest."""
    if not prefers_html(request) or request.method == "HEAD":
        if not isinstance(error.detail, str):
            return await http_exception_handler(request, error)
        return error_json(error.detail, error.status_code, getattr(error, "headers", None))
    urls: Urls = request.app.state.urls
    return templates.TemplateResponse(
        request,
        "error.html",
        {"data": {"status": error.status_code, "detail": error.detail}, "urls": urls,
         "json_url": urls.json(urls.path(urls.route(request.url.path))), "settings": request.app.state.settings},
        status_code=error.status_code,
        headers=getattr(error, "headers", None),
    )


def json_twin_url(request: Request) -> str:
    """The URL of this page's .json twin, with the page's query."""
    urls: Urls = request.app.state.urls
    route = urls.route(request.url.path)  # behind a proxy the path may arrive with or without the base URL
    json_url = urls.json(urls.path(route)) if route != "/" else urls.path("/index.json")
    return json_url + (f"?{request.url.query}" if request.url.query else "")


def page_context(request: Request, data: dict, page: dict | None = None, json_url: str | None = None) -> dict:
    """What a page's template is given: its data, the page model, the URLs, the .json twin's URL, settings."""
    return {
        "request": request,
        "data": data,
        "page": page,
        "urls": request.app.state.urls,
        "json_url": json_url or json_twin_url(request),
        "settings": request.app.state.settings,
    }


def respond(request: Request, template: str, data: dict[str, Any], status: int = 200, headers: dict | None = None):
    """One view, two faces: HTML at the path, JSON at the path + .json."""
    urls: Urls = request.app.state.urls
    if wants_json(request):
        return JSONResponse(data, status_code=status, headers=headers)
    json_url = json_twin_url(request)
    response = templates.TemplateResponse(
        request,
        template,
        {"data": data, "urls": urls, "json_url": json_url, "settings": request.app.state.settings},
        status_code=status,
        headers=headers,
    )
    response.headers["Link"] = f'<{json_url}>; rel="alternate"; type="application/json"'
    response.headers["Vary"] = "HX-Request"
    return response


def immutable_headers(digest: str) -> dict[str, str]:
    """Headers for content-addressed responses: the bytes behind the URL never change."""
    return {"ETag": f'"{digest}"', "Cache-Control": "private, max-age=31536000, immutable"}
