"""The layout inspector: `/-/layout?attr=<encoding>&shape=AxB` draws which thread and register
(or shared-memory offset) holds each element; `/-/layout.json` answers the same as data.

The page is a pure function of its query, so a drawn page is kept in the page cache (it shows no
run). It sends the mapping as compact data (app/layouts/picture.py) that static/layout.js draws on
a canvas; the JSON twin lists every element's owners."""

from __future__ import annotations

import json
import re

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from markupsafe import Markup

from app.layouts.conversion import conversion
from app.layouts.errors import LayoutError
from app.layouts.mapping import describe, layout_kind
from app.layouts.parse import parse_encoding, parse_shape
from app.layouts.picture import picture
from app.layouts.smem_costs import pair_report
from app.layouts.uses import dtype_of
from app.web.page_cache import cache_response, cached_response
from app.web.responder import SessionDep, respond, wants_json

router = APIRouter()
_STATED_BITS = re.compile(r"elementBitWidth\s*=\s*(\d+)")
_DTYPE_OF_BITS = {8: "i8", 16: "f16", 32: "f32", 64: "i64"}


@router.get("/-/layout")
@router.get("/-/layout.json")
def layout_page(request: Request, session: SessionDep, attr: str = "", shape: str = "", dtype: str = "",
                elem: str = "", lead: str = "", to: str = "", target: str = ""):
    """`elem` is the tensor's element type as the IR writes it (`f16`, `!tt.ptr<f16>`); `dtype`, the
    type whose width sizes shared-memory banks and scratch, follows from it unless given."""
    if not wants_json(request):
        cached = cached_response(request, session)
        if cached is not None:
            return cached
    element_type = elem or dtype  # as the IR writes it: costs take it whole (pointers are 64-bit)
    dtype = dtype or dtype_of(elem)
    form = {"attr": attr, "shape": shape, "dtype": dtype, "elem": element_type, "to": to, "target": target}
    if not attr or not shape:
        if wants_json(request):
            raise HTTPException(400, "attr (the encoding, aliases expanded) and shape (like 64x128) are required")
        return respond(request, "layout.html", {"form": form, "layout": None, "error": None})
    try:
        stated = _STATED_BITS.search(attr)  # an nvmma_shared encoding names its element width itself
        if not dtype and stated and not to:
            dtype = _DTYPE_OF_BITS.get(int(stated.group(1)), "")
        if not dtype:
            # A conversion's scratch depends on the element's width: say so rather than guess one. A
            # picture is drawn for 16-bit elements then (only shared-memory banks depend on it), and
            # the form says which type it drew.
            if to:
                raise LayoutError(f"the tensor's element type is needed (elem=f16, elem=!tt.ptr<f16>, ...)"
                                  f"{'; ' + repr(elem) + ' is not one irlens knows' if elem else ''}")
            dtype = "f16"
            form["dtype"] = form["elem"] = dtype
        dims = parse_shape(shape)
        buffers = None
        try:
            layout = describe(attr, dims, dtype)
        except LayoutError as e:
            # A multi-buffered memdesc (3x128x64 of a rank-2 shared layout): the page draws one
            # buffer and says so; the JSON answers what Triton answers, a refusal.
            if wants_json(request) or "has rank" not in str(e) or layout_kind(parse_encoding(attr)) != "shared":
                raise
            layout, buffers = _one_buffer(attr, dims, dtype, e)
        to_kind = layout_kind(parse_encoding(to)) if to else None
        if to and {layout["kind"], to_kind} == {"distributed", "shared"}:
            # a store to (or load from) shared memory: its bank conflicts, not a conversion
            dist, shared = (attr, to) if layout["kind"] == "distributed" else (to, attr)
            access = pair_report(dist, shared, layout["shape"], element_type or dtype, target)
            layout["bank_conflicts"] = access["bank_conflicts"]
            layout["shared_access"] = {**access, "to": to, "dtype": dtype, "target": target or None}
        elif to:
            layout["conversion"] = {**conversion(attr, to, layout["shape"], element_type or dtype, target),
                                    "to": to, "dtype": dtype, "target": target or None}
        drawn = None if wants_json(request) else picture(layout, lead)
        if buffers:
            drawn["notes"].insert(0, buffers)
    except LayoutError as e:
        if wants_json(request):
            raise HTTPException(400, f"not drawable: {e}") from None
        return respond(request, "layout.html", {"form": form, "layout": None, "error": f"not drawable: {e}"},
                       status=400)
    if wants_json(request):
        return JSONResponse(layout)
    summary = {k: v for k, v in layout.items() if k not in ("owners", "offsets", "banks", "cells", "block_of")}
    # JSON inside <script>: only "<" could end the element early
    script = json.dumps(drawn.pop("data"), separators=(",", ":")).replace("<", "\\u003c")
    response = respond(request, "layout.html", {"form": form, "layout": summary, "picture": drawn, "error": None,
                                                "lead": lead, "script_data": Markup(script)})
    return cache_response(request, session, (), response)


def _one_buffer(attr: str, dims: list[int], dtype: str, error: LayoutError) -> tuple[dict, str]:
    for k in range(1, len(dims)):
        try:
            layout = describe(attr, dims[k:], dtype)
        except LayoutError:
            continue
        lead = "x".join(map(str, dims[:k]))
        return layout, f"one buffer of {'x'.join(map(str, dims[k:]))}: the memdesc holds {lead} of them"
    raise error
