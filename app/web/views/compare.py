"""Two compilations pass by pass: `/compare/A..B` and its `.json` twin, where A and B are
compilation ids (`{run}-{ordinal}`, possibly of different runs and Triton versions).

The passes are aligned by :func:`app.insight.pass_alignment.align`; each row says whether the two sides hold the
same stored text, links to the cross-compilation diff, and shows both sides' op-group counts.
Whether a differing row is the same once SSA, loc or alias numbering is ignored needs a diff, so
it is asked per row (`/compare/A..B/rows/K`, HTML fragment or `.json`) as rows come into view,
never for every row up front. `/compare?a=A&b=B` (the variants table's form) redirects to the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from app import render
from app.diff import DEFAULT_CONTEXT, MAX_CONTEXT, DiffOptions
from app.highlight.hwops import GROUPS
from app.insight.compare_why import why
from app.insight.comparisons import (
    CompareNotFound,
    Side,
    final_stage_differences,
    final_stages,
    load_side,
    op_counts,
    option_differences,
    pair_dicts,
    side_info,
)
from app.insight.line_metrics import compare_hot_lines
from app.insight.pass_alignment import (
    Effect,
    Move,
    Pair,
    align,
    effects,
    first_divergence,
    first_effect_divergence,
    fold,
    moves,
)
from app.layouts.smem_costs import counts_by_digest
from app.urls import Urls, parse_compilation_id, parse_int, snapshot_id
from app.web.errors import error_json
from app.web.page_cache import cache_response, cached_response
from app.web.responder import SessionDep, UrlsDep, json_twin_url, page_context, render_block, templates
from app.web.views import diffs
from app.web.views.diff_rows import (
    PageOptions,
    RowRenderer,
    ignore_toggles,
    ignores_anything,
    page_pieces,
    parse_options,
)

router = APIRouter()

FOLD_CONTEXT = 2  # identical rows kept next to each differing one; longer runs fold away
CONTEXT_CHOICES = (0, 2, 5)
PREVIEW_ROWS = 60  # diff rows a row's preview renders; the rest load as in the diff page


@dataclass(frozen=True)
class CompareOptions:
    """What the diff links and per-row checks ignore (as on /diff/), and how many rows to keep unfolded."""

    diff: DiffOptions
    context: int = FOLD_CONTEXT

    def query(self, **changes: Any) -> str:
        values = {"loc": self.diff.loc, "ssa": self.diff.ssa, "alias": self.diff.alias, "context": self.context}
        values.update(changes)
        params = {name: "1" for name in ("loc", "ssa", "alias") if values[name]}
        if values["context"] != FOLD_CONTEXT:
            params["context"] = "all" if values["context"] < 0 else str(values["context"])
        return ("?" + urlencode(params)) if params else ""

    def diff_query(self) -> str:
        """The same ignore options for a /diff/ link (its own context left at its default)."""
        return PageOptions(DiffOptions(self.diff.loc, self.diff.ssa, self.diff.alias, DEFAULT_CONTEXT)).query()

    @property
    def ignores(self) -> bool:
        return ignores_anything(self.diff)

    def as_dict(self) -> dict[str, Any]:
        return {"loc": self.diff.loc, "ssa": self.diff.ssa, "alias": self.diff.alias, "context": self.context}


def parse_compare_options(request: Request) -> CompareOptions:
    parsed = parse_options(request).diff
    text = (request.query_params.get("context") or "").strip().lower()
    number = parse_int(text)
    context = -1 if text == "all" else FOLD_CONTEXT if number is None else min(number, MAX_CONTEXT)
    return CompareOptions(DiffOptions(parsed.loc, parsed.ssa, parsed.alias, DEFAULT_CONTEXT), context)


def _parse_spec(spec: str) -> tuple[str, str, bool]:
    wants_json = spec.endswith(".json")
    spec = spec.removesuffix(".json")
    left, sep, right = spec.partition("..")
    if not sep or not left or not right:
        raise CompareNotFound(f"not a comparison: {spec!r} (expected /compare/A..B with two compilation ids)")
    return left, right, wants_json


# --------------------------------------------------------------------------- the data


def page_data(session: Session, a: Side, b: Side, options: CompareOptions, urls: Urls) -> dict[str, Any]:
    """What the page and its JSON twin share."""
    pairs = align(a.steps, b.steps)
    diff_query = options.diff_query()
    rows = pair_dicts(a, b, pairs, urls, diff_query)
    a_ops, b_ops = op_counts(session, a.snapshots), op_counts(session, b.snapshots)
    for k, (pair, row) in enumerate(zip(pairs, rows, strict=True)):
        left = a.snapshots[pair.a] if pair.a is not None else None
        right = b.snapshots[pair.b] if pair.b is not None else None
        row["a_ops"] = dict(a_ops[left.blob]) if left is not None else None
        row["b_ops"] = dict(b_ops[right.blob]) if right is not None else None
        # shared-memory accesses with bank conflicts (blob_facts.warm, via op_counts, filled the cache)
        row["a_bank"] = _bank(session, left)
        row["b_bank"] = _bank(session, right)
        row["stage"] = (left or right).stage  # type: ignore[union-attr]
        row["row_url"] = urls.compare_row(a.id, b.id, k) if left is not None and right is not None else None
    moved = moves(a.steps, b.steps, pairs)
    partner = {m.a_row: m.b_row for m in moved} | {m.b_row: m.a_row for m in moved}
    for k, row in enumerate(rows):
        row["moved_to"] = partner.get(k)  # the row of the same pass on the other side, run elsewhere
    divergence = first_divergence(pairs)
    a_effects = effects(a.steps, [a_ops[s.blob] for s in a.snapshots])
    b_effects = effects(b.steps, [b_ops[s.blob] for s in b.snapshots])
    effect_divergence = first_effect_divergence(pairs, a_effects, b_effects, partner)
    a_stages, b_stages = final_stages(session, a), final_stages(session, b)
    url = urls.compare(a.id, b.id)
    effect_summary = _effect_divergence(pairs, rows, effect_divergence, (a, a_effects), (b, b_effects), urls, diff_query)
    return {
        "why": why(session, a.compilation, b.compilation, a_stages, b_stages, effect_summary, urls),
        "a": side_info(session, a, urls),
        "b": side_info(session, b, urls),
        "options": options.as_dict(),
        "pairs": rows,
        "first_divergence": divergence,
        "summary": {
            "rows": len(pairs),
            "identical": sum(1 for pair in pairs if pair.identical),
            "differing": sum(1 for pair in pairs if pair.a is not None and pair.b is not None and not pair.identical),
            "first_divergence": _divergence(pairs, rows, divergence, a, b),
            "first_effect_divergence": effect_summary,
            "only_a": [_only(k, row, "a") for k, row in enumerate(rows) if row["b"] is None and k not in partner],
            "only_b": [_only(k, row, "b") for k, row in enumerate(rows) if row["a"] is None and k not in partner],
            "moved": [_moved(m, rows, a, b, urls, diff_query) for m in moved],
            "options": option_differences(a, b),
            "final_stages": final_stage_differences(a_stages, b_stages),
        },
        "url": url + options.query(),
        "swap_url": urls.compare(b.id, a.id) + options.query(),
    }


def _bank(session: Session, snapshot) -> int | None:
    """How many of the snapshot's shared-memory accesses have bank conflicts (None: no snapshot)."""
    if snapshot is None:
        return None
    counts = counts_by_digest(snapshot.blob, lambda: render.blob_reader.text(session, snapshot.blob))
    return counts.get("with_conflicts", 0)


def _only(k: int, row: dict[str, Any], side: str) -> dict[str, Any]:
    return {"row": k, "index": row[side], "pass": row["pass"], "pass_arg": row["pass_arg"], "when": row["when"]}


def _moved(move: Move, rows: list[dict[str, Any]], a: Side, b: Side, urls: Urls, query: str) -> dict[str, Any]:
    """A pass both sides ran at different places: both rows, both snapshot indexes, their diff."""
    left, right = rows[move.a_row], rows[move.b_row]
    diff_url = urls.diff(snapshot_id(a.compilation.run_id, a.compilation.ordinal, left["a"]),
                         snapshot_id(b.compilation.run_id, b.compilation.ordinal, right["b"])) + query
    return {"a_row": move.a_row, "b_row": move.b_row, "a": left["a"], "b": right["b"], "pass": left["pass"],
            "b_pass": right["pass"], "pass_arg": left["pass_arg"], "when": left["when"],
            "identical": move.identical, "diff_url": diff_url}


def _divergence(pairs: list[Pair], rows: list[dict], k: int | None, a: Side, b: Side) -> dict[str, Any] | None:
    """The first differing row, and the passes that ran just before it on each side (with dumps
    taken before each pass, those are the passes whose output first differs)."""
    if k is None:
        return None
    pair, row = pairs[k], rows[k]

    def ran_before(side: Side, index: int | None) -> str | None:
        if index is None or index == 0:
            return None
        snapshot = side.snapshots[index]
        return snapshot.pass_name if snapshot.when == "after" else side.snapshots[index - 1].pass_name

    return {
        "row": k,
        "pass": row["pass"],
        "pass_arg": row["pass_arg"],
        "when": row["when"],
        "a": pair.a,
        "b": pair.b,
        "diff_url": row["diff_url"],
        "after_a": ran_before(a, pair.a),
        "after_b": ran_before(b, pair.b),
    }


def _effect_divergence(
    pairs: list[Pair], rows: list[dict], found: tuple[int, str] | None,
    a: tuple[Side, list[Effect | None]], b: tuple[Side, list[Effect | None]], urls: Urls, query: str,
) -> dict[str, Any] | None:
    """The first row whose pass did something different on each side (app.insight.pass_alignment's
    first_effect_divergence), with each side's change: its own before/after diff and op-group moves."""
    if found is None:
        return None
    k, reason = found
    pair, row = pairs[k], rows[k]

    def change(side: Side, side_effects: list[Effect | None], index: int | None) -> dict[str, Any] | None:
        if index is None or side_effects[index] is None:
            return None
        effect = side_effects[index]
        before, after = (index - 1, index) if side.snapshots[index].when == "after" else (index, index + 1)
        run, ordinal = side.compilation.run_id, side.compilation.ordinal
        return {
            "changed": effect.changed,
            "ops": dict(effect.ops),
            "from": before,
            "to": after,
            "diff_url": urls.diff(snapshot_id(run, ordinal, before), snapshot_id(run, ordinal, after)) + query
            if effect.changed else None,
        }

    return {
        "row": k,
        "reason": reason,
        "pass": row["pass"],
        "pass_arg": row["pass_arg"],
        "when": row["when"],
        "a": pair.a,
        "b": pair.b,
        "diff_url": row["diff_url"],
        "moved_to": row["moved_to"],  # reason "moved": the row where the other side ran it
        "a_change": change(a[0], a[1], pair.a),
        "b_change": change(b[0], b[1], pair.b),
    }


def _page_model(data: dict[str, Any], options: CompareOptions, urls: Urls, a: Side, b: Side) -> dict[str, Any]:
    """What only the HTML needs: op columns, folded pieces, option links."""
    pairs = data["pairs"]
    present = [
        group for group in GROUPS
        if any((row["a_ops"] or {}).get(group.key) or (row["b_ops"] or {}).get(group.key) for row in pairs)
    ]
    pieces = [
        {"kind": kind, "start": start, "end": end, "rows": list(range(start, end))}
        for kind, start, end in fold([not row["identical"] for row in pairs], options.context)
    ]
    base = urls.compare(a.id, b.id)
    toggles = ignore_toggles(options.diff, lambda **changes: base + options.query(**changes),
                             "checking whether differing passes really differ")
    contexts = [{"label": str(n), "url": base + options.query(context=n), "on": options.context == n} for n in CONTEXT_CHOICES]
    contexts.append({"label": "all", "url": base + options.query(context=-1), "on": options.context < 0})
    a_run, a_ord = a.compilation.run_id, a.compilation.ordinal
    b_run, b_ord = b.compilation.run_id, b.compilation.ordinal
    for row in pairs:
        row["a_url"] = urls.snapshot(a_run, a_ord, row["a"]) if row["a"] is not None else None
        row["b_url"] = urls.snapshot(b_run, b_ord, row["b"]) if row["b"] is not None else None
    return {
        "groups": present,
        "pieces": pieces,
        "toggles": toggles,
        "contexts": contexts,
        "query": options.query(),
        "ignores": options.ignores,
        "same_run": a.compilation.run_id == b.compilation.run_id,
        "differing": [k for k, row in enumerate(pairs) if not row["identical"]],
    }


# --------------------------------------------------------------------------- responses


def _not_found(request: Request, urls: Urls, message: str, wants_json: bool, status: int = 404) -> Response:
    if wants_json:
        return error_json(message, status)
    return templates.TemplateResponse(
        request, "compare.html", page_context(request, {"error": message}, None), status_code=status
    )


@router.get("/compare")
def compare_pick(request: Request, urls: UrlsDep) -> Response:
    """The variants table's form: `?a=RUN-ORDINAL&b=RUN-ORDINAL` → the comparison's page."""
    left, right = (request.query_params.get(name, "").strip() for name in ("a", "b"))
    if parse_compilation_id(left) is None or parse_compilation_id(right) is None:
        return _not_found(request, urls, "choose two compilations to compare (a= and b=, each RUN-COMPILATION)", False, 400)
    return RedirectResponse(urls.compare(left, right), status_code=303)


@router.get("/compare/{spec}")
def compare_page(request: Request, spec: str, session: SessionDep, urls: UrlsDep) -> Response:
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    wants_json = spec.endswith(".json")
    try:
        left, right, wants_json = _parse_spec(spec)
        a, b = load_side(session, left), load_side(session, right)
    except CompareNotFound as missing:
        return _not_found(request, urls, missing.message, wants_json)
    options = parse_compare_options(request)
    data = page_data(session, a, b, options, urls)
    data["hot_lines"] = compare_hot_lines(session, a.compilation, b.compilation, urls, request.query_params.get("metric"))
    runs = (a.compilation.run_id, b.compilation.run_id)
    json_url = json_twin_url(request)
    headers = {"Vary": "HX-Request", "Link": f'<{json_url}>; rel="alternate"; type="application/json"'}
    if wants_json:
        return cache_response(request, session, runs, JSONResponse(data, headers=headers))
    context = page_context(request, data, _page_model(data, options, urls, a, b))
    if request.headers.get("hx-request") == "true":
        response: Response = HTMLResponse(render_block("compare.html", "main", context), headers=headers)
    else:
        response = templates.TemplateResponse(request, "compare.html", context, headers=headers)
    return cache_response(request, session, runs, response)


@router.get("/compare/{spec}/rows/{row}")
def compare_row(request: Request, spec: str, row: str, session: SessionDep, urls: UrlsDep) -> Response:
    """One aligned row: its diff's size and whether it is the same under the ignore options.

    HTML fragment (the status cell, or with `?preview=1` the diff's first rows) or `.json`."""
    cached = cached_response(request, session)
    if cached is not None:
        return cached
    wants_json = row.endswith(".json")
    row_text = row.removesuffix(".json")
    try:
        left, right, _ = _parse_spec(spec)
        a, b = load_side(session, left), load_side(session, right)
    except CompareNotFound as missing:
        return _not_found(request, urls, missing.message, wants_json)
    pairs = align(a.steps, b.steps)
    k = parse_int(row_text)
    if k is None or k >= len(pairs):
        return _not_found(request, urls, f"no row {row_text!r} in this comparison ({len(pairs)} rows)", wants_json)
    pair = pairs[k]
    if pair.a is None or pair.b is None:
        return _not_found(request, urls, f"row {k} is a pass only one side has: there is nothing to diff", wants_json)
    options = parse_compare_options(request)
    a_side = _diff_side(a, pair.a)
    b_side = _diff_side(b, pair.b)
    result = diffs.compute_diff(session, a_side, b_side, options.diff)
    stats = result.stats
    data = {
        "row": k,
        "a": pair.a,
        "b": pair.b,
        "pass": a.snapshots[pair.a].pass_name,
        "identical": pair.identical,
        "equivalent": result.identical,  # the same once the ignore options are applied
        "options": options.as_dict(),
        "added": stats["added"],
        "removed": stats["removed"],
        "changed_lines": stats["changed_lines"],
        "changes": stats["changes"],
        "diff_url": urls.diff(a_side.id, b_side.id) + options.diff_query(),
    }
    runs = (a.compilation.run_id, b.compilation.run_id)
    if wants_json:
        return cache_response(request, session, runs, JSONResponse(data))
    context = page_context(request, data, None)
    if request.query_params.get("preview"):
        page_options = PageOptions(options.diff, "split")
        renderer = RowRenderer(
            result, render.snapshot_kind(a_side.snapshot.kind), render.snapshot_kind(b_side.snapshot.kind),
            page_options, urls.snapshot(a.compilation.run_id, a.compilation.ordinal, pair.a),
            urls.snapshot(b.compilation.run_id, b.compilation.ordinal, pair.b),
        )
        pieces = page_pieces(result, renderer, 3, inline_rows=PREVIEW_ROWS)
        context["pieces"] = pieces
        context["page"] = {
            "view": "split",
            "rows_url": urls.diff(a_side.id, b_side.id) + "/rows" + page_options.query(),
            "expand_step": diffs.EXPAND_STEP,
            "layout_aliases": diffs.layout_aliases(result),
        }
        return cache_response(request, session, runs, HTMLResponse(render_block("compare.html", "row_preview", context)))
    return cache_response(request, session, runs, HTMLResponse(render_block("compare.html", "row_status", context)))


def _diff_side(side: Side, index: int) -> diffs.Side:
    compilation = side.compilation
    return diffs.Side(
        snapshot_id(compilation.run_id, compilation.ordinal, index), side.snapshots[index], compilation, side.run
    )
