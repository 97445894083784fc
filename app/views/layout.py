"""The layout inspector: `/-/layout?attr=<encoding>&shape=AxB` draws which thread and register
(or shared-memory offset) holds each element; `/-/layout.json` answers the same as data."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from app.layouts.errors import LayoutError
from app.layouts.mapping import describe
from app.layouts.parse import parse_shape
from app.layouts.picture import picture
from app.web import respond, wants_json

router = APIRouter()


@router.get("/-/layout")
@router.get("/-/layout.json")
def layout_page(request: Request, attr: str = "", shape: str = "", dtype: str = "f16", row0: int = 0,
                col0: int = 0, lead: str = ""):
    form = {"attr": attr, "shape": shape, "dtype": dtype}
    if not attr or not shape:
        if wants_json(request):
            raise HTTPException(400, "attr (the encoding, aliases expanded) and shape (like 64x128) are required")
        return respond(request, "layout.html", {"form": form, "layout": None, "error": None})
    try:
        layout = describe(attr, parse_shape(shape), dtype)
        drawn = None if wants_json(request) else picture(layout, row0, col0, lead)
    except LayoutError as e:
        if wants_json(request):
            raise HTTPException(400, f"not drawable: {e}") from None
        return respond(request, "layout.html", {"form": form, "layout": None, "error": f"not drawable: {e}"},
                       status=400)
    if wants_json(request):
        return JSONResponse(layout)
    summary = {k: v for k, v in layout.items() if k not in ("owners", "offsets", "banks", "cells", "block_of")}
    return respond(request, "layout.html", {"form": form, "layout": summary, "picture": drawn, "error": None,
                                            "lead": lead})
