"""The one shape of a JSON error: irlens's own key `error` and FastAPI's `detail`, same message, so
clients read either whether the refusal came from a view, a middleware or FastAPI itself."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse


def error_json(message: str, status: int, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "detail": message}, status_code=status, headers=headers)
