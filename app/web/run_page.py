"""What the run page shows of a big run: its compilations a page at a time, its warnings grouped by
kind with counts and the first few of each, long Variants tables cut to their picked and first
rows. The page stays small (hundreds of KB) however many compilations and warnings a capture holds;
the run's JSON keeps every row."""

from __future__ import annotations

import re
from typing import Any

from app.urls import Urls

__all__ = ["COMPILATIONS_PER_PAGE", "shape_for_html"]

COMPILATIONS_PER_PAGE = 100
WARNING_EXAMPLES = 3  # shown per group
WARNING_GROUPS = 30  # groups shown; the rest are counted
VARIANT_ROWS = 40  # rows of one kernel's Variants table, besides the picked ones
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|\b0x[0-9a-fA-F]+\b|\b\d[\d,.]*\b")


def warning_kind(message: str) -> str:
    """The message with its particulars (quoted names, numbers) taken out: one group per kind."""
    return _VARYING.sub("…", message or "").strip()


def group_warnings(warnings: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for warning in warnings:
        key = (warning.get("kind") or "", warning_kind(warning.get("message") or ""))
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"kind": key[0], "message": key[1], "count": 0, "examples": []}
        group["count"] += 1
        if len(group["examples"]) < WARNING_EXAMPLES:
            group["examples"].append(warning)
    ordered = sorted(groups.values(), key=lambda g: -g["count"])
    shown = ordered[:WARNING_GROUPS]
    return {"groups": shown, "total": len(warnings), "hidden_groups": len(ordered) - len(shown),
            "hidden_warnings": sum(g["count"] for g in ordered[WARNING_GROUPS:])}


def _page(wanted: str | None, pages: int) -> int:
    try:
        page = int(wanted or 1)
    except ValueError:
        page = 1
    return min(max(page, 1), max(pages, 1))


def shape_for_html(data: dict[str, Any], urls: Urls, wanted_page: str | None) -> None:
    """Cut what the HTML page shows (the JSON twin keeps the whole lists): `compilation_page`,
    `warning_groups`, and Variants tables cut to VARIANT_ROWS plus their picked rows."""
    compilations = data["compilations"]
    pages = (len(compilations) + COMPILATIONS_PER_PAGE - 1) // COMPILATIONS_PER_PAGE
    page = _page(wanted_page, pages)
    start = (page - 1) * COMPILATIONS_PER_PAGE
    data["compilation_page"] = {
        "page": page, "pages": pages, "first": start + 1, "last": min(start + COMPILATIONS_PER_PAGE, len(compilations)),
        "rows": compilations[start:start + COMPILATIONS_PER_PAGE], "total": len(compilations),
        "previous": urls.run_page(data["run"], page - 1) if page > 1 else None,
        "next": urls.run_page(data["run"], page + 1) if page < pages else None,
        "numbers": [{"page": n, "url": urls.run_page(data["run"], n), "this": n == page} for n in range(1, pages + 1)]
        if pages > 1 else [],
    }
    data["warning_groups"] = group_warnings(data["warnings"])
    for group in data.get("variants") or []:
        rows = group["variants"]
        if len(rows) <= VARIANT_ROWS:
            continue
        keep = [row for k, row in enumerate(rows) if k < VARIANT_ROWS or row.get("autotune_won")
                or (row.get("autotune") or {}).get("winner")]
        group["hidden"] = len(rows) - len(keep)
        group["variants"] = keep
