"""What the run page shows of a big run: its compilations a page at a time, its warnings grouped by
kind with counts and the first few of each, long Variants tables cut to their picked and first
rows. The page stays small (hundreds of KB) however many compilations and warnings a capture holds;
the run's JSON keeps every row."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.store.models import Problem
from app.urls import Urls

__all__ = ["ALIGNED_ROWS", "COMPILATIONS_PER_PAGE", "cut_variants", "shape_for_html", "variant_kernels"]

COMPILATIONS_PER_PAGE = 50
WARNING_EXAMPLES = 3  # shown per group
WARNING_GROUPS = 30  # groups shown; the rest are counted
VARIANT_ROWS = 24  # rows of one kernel's Variants table, besides the picked ones
ALIGNED_ROWS = 10  # rows of a shown Variants table told where they depart from the first (an alignment each)
VARIANT_GROUPS = 6  # kernels whose Variants table the page shows in full; the others are listed
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|\b0x[0-9a-fA-F]+\b|\b\d[\d,.]*\b")


def warning_kind(message: str) -> str:
    """The message with its particulars (quoted names, numbers) taken out: one group per kind."""
    return _VARYING.sub("…", message or "").strip()


def group_warnings(session: Session, run_id: str) -> dict[str, Any]:
    """The run's warnings by kind (their particulars taken out), largest first, each with its count
    and first WARNING_EXAMPLES; counted in the database, so thousands cost the page no more than a few."""
    exact = session.execute(select(Problem.kind, Problem.message, func.count(), func.min(Problem.pk))
                            .where(Problem.run_id == run_id).group_by(Problem.kind, Problem.message)).all()
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, message, count, first in sorted(exact, key=lambda row: row[3]):
        key = (kind or "", warning_kind(message or ""))
        group = groups.setdefault(key, {"kind": key[0], "message": key[1], "count": 0, "firsts": []})
        group["count"] += count
        group["firsts"].append(first)
    ordered = sorted(groups.values(), key=lambda g: -g["count"])
    shown = ordered[:WARNING_GROUPS]
    wanted = [pk for group in shown for pk in group["firsts"][:WARNING_EXAMPLES]]
    rows = {row.pk: row for row in session.execute(
        select(Problem.pk, Problem.kind, Problem.message, Problem.path, Problem.line, Problem.header)
        .where(Problem.pk.in_(wanted)))} if wanted else {}
    for group in shown:
        firsts = group.pop("firsts")
        group["examples"] = [{"kind": rows[pk].kind, "message": rows[pk].message, "path": rows[pk].path,
                              "line": rows[pk].line, "header": rows[pk].header}
                             for pk in firsts[:WARNING_EXAMPLES] if pk in rows]
        if len(group["examples"]) < min(group["count"], WARNING_EXAMPLES) and len(firsts) == 1:
            more = session.execute(select(Problem.kind, Problem.message, Problem.path, Problem.line, Problem.header)
                                   .where(Problem.run_id == run_id, Problem.kind == group["examples"][0]["kind"],
                                          Problem.message == group["examples"][0]["message"])
                                   .order_by(Problem.pk).limit(WARNING_EXAMPLES)).all()
            group["examples"] = [row._asdict() for row in more]
    for group in ordered[WARNING_GROUPS:]:
        group.pop("firsts", None)
    total = sum(g["count"] for g in ordered)
    return {"groups": shown, "total": total, "hidden_groups": len(ordered) - len(shown),
            "hidden_warnings": sum(g["count"] for g in ordered[WARNING_GROUPS:])}


def _page(wanted: str | None, pages: int) -> int:
    try:
        page = int(wanted or 1)
    except ValueError:
        page = 1
    return min(max(page, 1), max(pages, 1))


def shape_for_html(session: Session, data: dict[str, Any], urls: Urls, wanted_page: str | None) -> None:
    """Cut what the HTML page shows (the JSON twin keeps the whole lists): `compilation_page`,
    `warning_groups` (Variants tables are cut by cut_variants)."""
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
    data["warning_groups"] = group_warnings(session, data["run"])


def cut_variants(variants: list[dict[str, Any]], autotune: list[dict[str, Any]]) -> None:
    """Long Variants tables keep their first VARIANT_ROWS rows and every picked one (before the rows
    are annotated, which reads each one's config)."""
    from app.insight.autotune import by_compilation

    picked = {cid for cid, result in by_compilation(autotune).items() if result["won"]}
    for group in variants:
        rows = group["variants"]
        if len(rows) <= VARIANT_ROWS:
            continue
        keep = [row for k, row in enumerate(rows) if k < VARIANT_ROWS or row["compilation"] in picked
                or (row.get("autotune") or {}).get("winner")]
        group["hidden"] = len(rows) - len(keep)
        group["variants"] = keep


def variant_kernels(compilations: list[dict[str, Any]], autotune: list[dict[str, Any]],
                    urls: Urls, run_id: str) -> tuple[set[str], list[dict[str, Any]]]:
    """(the kernels whose Variants tables the page shows: those an autotune table's choices link to
    first, then the most compiled; a one-line entry for each other kernel compiled more than once)."""
    members: dict[str, list[dict[str, Any]]] = {}
    for row in compilations:
        if row["kernel"]:
            members.setdefault(row["kernel"], []).append(row)
    several = {kernel: rows for kernel, rows in members.items() if len(rows) > 1}
    linked = {c["compilation"] for entry in autotune for c in entry["choices"] if c.get("compilation")}
    tuned = {kernel for kernel, rows in several.items() if any(row["url"] in linked for row in rows)}
    ordered = sorted(several, key=lambda kernel: (kernel not in tuned, -len(several[kernel]), kernel))
    shown = set(ordered[:VARIANT_GROUPS])
    rest = [{"kernel": kernel, "count": len(several[kernel]),
             "compilations": [{"id": row["id"], "url": row["url"]} for row in several[kernel][:12]]}
            for kernel in ordered[VARIANT_GROUPS:]]
    return shown, rest
