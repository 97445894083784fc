"""Counts the page reads being answered, so that the server's background rounds wait for them
(app/foreground.py). Only GET and HEAD: an upload may stream for minutes, and wakes the background
round itself once it is stored."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app import foreground


class InFlightMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        with foreground.answering():
            await self.app(scope, receive, send)
