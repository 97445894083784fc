"""The map page: which IR lines of every pass come from one Python line (via ``loc()``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from markupsafe import Markup

from app import render
from app.insight.generated_sources import GeneratedSources, chained
from app.insight.hot_line_links import default_pass, same_file
from app.insight.line_metrics import python_line_metrics
from app.insight.source_map import pass_indexes
from app.store.models import Snapshot
from app.urls import snapshot_id
from app.web.responder import SessionDep, UrlsDep, respond, wants_json
from app.web.views.ir_page import compilation_context, load_compilation, run_sources
from parsers.locations.loc import match_source

router = APIRouter()

MAP_SNIPPET_LINES = 12  # IR lines quoted per pass on the map page (the JSON lists them all)


@router.get("/runs/{run_id}/c/{ordinal}/map")
@router.get("/runs/{run_id}/c/{ordinal}/map.json")
def source_map(
    request: Request,
    run_id: str,
    ordinal: str,
    session: SessionDep,
    urls: UrlsDep,
    file: str | None = None,
    line: int | None = None,
    at: int | None = None,
):
    """Which IR lines map to Python ``file:line`` in every pass of the compilation. Without a line:
    the Python source, each line with how many IR lines of one pass (``at``, an index) it has."""
    compilation = load_compilation(session, run_id, ordinal)
    run_id, ordinal_number = compilation.run_id, compilation.ordinal
    data: dict[str, Any] = {"file": file, "line": line}
    data.update(compilation_context(compilation, urls))
    data["url"] = urls.source_map(run_id, ordinal_number, file, line)
    snapshots = list(compilation.snapshots)
    files: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    sources = run_sources(session, compilation.run_id)
    # the user's files reached through generated ones (Helion's `# src[file:line]`) count as located too
    generated = GeneratedSources(session, sources)
    indexes = [chained(index, generated) for index in pass_indexes(session, snapshots)]
    for snapshot, index in zip(snapshots, indexes, strict=True):
        for loc_file, count in index.files.items():
            files[loc_file] = files.get(loc_file, 0) + count
        if file is None or line is None:
            continue
        ir_lines: list[int] = []
        for loc_file in index.files:
            if same_file(loc_file, file):
                ir_lines.extend(index.lines(loc_file, line))
        ir_lines.sort()
        row = {
            "index": snapshot.index,
            "pass": snapshot.pass_name,
            "pass_arg": snapshot.pass_arg,
            "stage": snapshot.stage,
            "kind": snapshot.kind,
            "changed": snapshot.changed,
            "id": snapshot_id(run_id, ordinal_number, snapshot.index),
            "url": urls.snapshot(run_id, ordinal_number, snapshot.index),
            "lines": ir_lines,
        }
        rows.append(row)
    # `via`: the generated file (as the IR names it) whose `# src[...]` comments lead to this one
    data["files"] = [
        {"file": name, "lines": count, "via": generated.reached.get(name)}
        for name, count in sorted(files.items(), key=lambda kv: -kv[1])
    ]
    data["snapshots"] = rows
    matched = match_source(file, list(sources)) if file else None
    data["source"] = matched
    data["source_line"] = None
    if matched is not None and line is not None:
        source_text = render.blob_reader.text(session, sources[matched]) or ""
        source_lines = source_text.split("\n")
        if 1 <= line <= len(source_lines):
            data["source_line"] = source_lines[line - 1]
    # the chosen profile metric per Python line (?metric=), every line the profile names
    data["metrics"] = python_line_metrics(session, compilation, request.query_params.get("metric"))
    if line is None:
        data["overview"] = _overview(session, snapshots, indexes, data["files"], sources, file, at, urls,
                                     compilation, with_code=not wants_json(request))
        _overview_metrics(data["overview"], data["metrics"])
        _overview_via(data["overview"], generated, sources, urls, compilation.run_id)
    if file is not None and line is not None:
        data["prev_line_url"] = urls.source_map(run_id, ordinal_number, file, line - 1) if line > 1 else None
        data["next_line_url"] = urls.source_map(run_id, ordinal_number, file, line + 1)
    if not wants_json(request):
        data["page"] = _map_page(snapshots, [index.text for index in indexes], rows, data)
    return respond(request, "_snap_map.html", data)


def _overview(session, snapshots: list[Snapshot], indexes: list, files: list[dict], sources: dict[str, str],
              file: str | None, at: int | None, urls, compilation, with_code: bool) -> dict[str, Any] | None:
    """The source of `file` (else the most located file with an uploaded source) with each line's
    count of IR lines in snapshot `at` (else the last TTGIR snapshot with located lines, else the
    one with the most)."""
    # the user's own files first: a Helion kernel rather than the Triton code generated from it
    names = [item["file"] for item in files if item.get("via")] + [item["file"] for item in files if not item.get("via")]
    if file is None:
        file = next((name for name in names if match_source(name, list(sources))), names[0] if names else None)
    if file is None:
        return None
    located = [sum(count for name, count in index.files.items() if same_file(name, file)) for index in indexes]
    chosen = next((k for k, snapshot in enumerate(snapshots) if snapshot.index == at), None)
    if chosen is None:
        chosen = default_pass(snapshots, located)
    path = match_source(file, list(sources))
    source_lines = []
    if path is not None:
        rendered = render.render_python(sources[path], lambda: render.blob_reader.text(session, sources[path]))
        index = indexes[chosen] if chosen is not None else None
        recorded = [name for name in index.files if same_file(name, file)] if index else []
        for number, code in enumerate(rendered.lines, start=1):
            count = sum(len(index.lines(name, number)) for name in recorded) if index else 0
            item = {"line": number, "ir_lines": count,
                    "url": urls.source_map(compilation.run_id, compilation.ordinal, file, number)}
            if with_code:
                item["code"] = Markup(code)  # escaped by the renderer
            source_lines.append(item)
    return {
        "file": file,
        "path": path,
        "at": snapshots[chosen].index if chosen is not None else None,
        "passes": [{"index": snapshot.index, "pass": snapshot.pass_name, "stage": snapshot.stage,
                    "located": located[k]} for k, snapshot in enumerate(snapshots)],
        "lines": source_lines,
        "most": max((item["ir_lines"] for item in source_lines), default=0),
        # the page opens a few lines above the first line with IR (the kernel), the rest folded
        "first": max(1, next((item["line"] for item in source_lines if item["ir_lines"]), 1) - 3),
    }


def _overview_via(overview: dict[str, Any] | None, generated: GeneratedSources, sources: dict[str, str],
                  urls, run_id: str) -> None:
    """A file reached through generated code (a Helion kernel): which generated file, and its page,
    which lists each kernel's statements with the lines they came from."""
    if overview is None:
        return
    via = generated.reached.get(overview["file"])
    path = match_source(via, list(sources)) if via else None
    overview["via"] = via
    overview["via_url"] = urls.source(run_id, path) if path else None


def _overview_metrics(overview: dict[str, Any] | None, metrics: dict[str, Any] | None) -> None:
    """Each source row's value of the chosen metric (its file's lines the profile names), the
    largest (for the bars) and what lies in the shown file and outside it."""
    if overview is None or metrics is None:
        return
    values: dict[int, float] = {}
    for item in metrics["lines"]:
        if same_file(item["file"], overview["file"]):
            values[item["line"]] = values.get(item["line"], 0) + item["value"]
    for row in overview["lines"]:
        row["value"] = values.get(row["line"])
    overview["metric_most"] = max(values.values(), default=0)
    overview["metric_here"] = sum(values.values())
    overview["metric_elsewhere"] = sum(item["value"] for item in metrics["lines"]) - overview["metric_here"]


def _map_page(
    snapshots: list[Snapshot], texts: list[render.TextLoader], rows: list[dict], data: dict
) -> dict:
    """Quoted IR lines per pass (highlighted), skipping passes whose IR did not change."""
    by_index = {snapshot.index: snapshot for snapshot in snapshots}
    text_of = {snapshot.index: text for snapshot, text in zip(snapshots, texts, strict=True)}
    quotes: dict[int, list[tuple[int, Markup]]] = {}
    seen_blobs: dict[str, int] = {}
    highlighted: dict[tuple[str, str], Markup] = {}  # successive passes quote many equal lines
    for row in rows:
        snapshot = by_index[row["index"]]
        first = seen_blobs.setdefault(snapshot.blob, row["index"])
        row_quote: list[tuple[int, Markup]] = []
        if first == row["index"] and row["lines"]:
            quoted = row["lines"][:MAP_SNIPPET_LINES]
            text_lines = (text_of[row["index"]]() or "").split("\n", max(quoted))  # not past the last quoted
            kind = render.snapshot_kind(snapshot.kind)
            for number in quoted:
                if number <= len(text_lines):
                    # the renderer escapes every token, so its output is safe markup
                    key = (text_lines[number - 1], kind)
                    if key not in highlighted:
                        highlighted[key] = Markup(render.highlight_line(*key))
                    row_quote.append((number, highlighted[key]))
        quotes[row["index"]] = row_quote
    source_html = None
    if data.get("source_line") is not None:
        source_html = Markup(render.highlight_line(data["source_line"], "python"))
    return {
        "quotes": quotes,
        "same_as": {row["index"]: seen_blobs[by_index[row["index"]].blob] for row in rows},
        "source_html": source_html,
        "colour": render.line_colour(data["file"], data["line"])
        if data.get("file") and data.get("line")
        else None,
        "basename": render.basename(data["file"]) if data.get("file") else None,
        "with_lines": sum(1 for row in rows if row["lines"]),
    }
