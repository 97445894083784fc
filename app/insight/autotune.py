"""A run's autotuning results (`runs.autotune`, parsers/autotuning/autotune.py) as the pages show them: one
entry per benchmark table or autotuner session, each choice linked to the compilation its config
identifies (app/insight/kernel_config.py), the winner named, and per compilation its time and
whether it won (for the Variants table and the compare page)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.insight.autotune_links import ChoiceLinker, choice_kernel, matmul_problem, windows
from app.insight.kernel_config import compilation_config, prefetch
from app.store.models import Compilation, Run
from app.urls import Urls, compilation_id


def _same_config(a: dict, b: dict) -> bool:
    """Two printed configs are one (a session's best config against a benchmarked one)."""
    keys = set(a) & set(b)
    return bool(keys) and all(str(a[k]) == str(b[k]) for k in keys)


def _times_note(entry: dict, choices: list[dict]) -> str | None:
    """Why the time column is empty, where it is."""
    if any(c["time_ms"] is not None for c in choices):
        return None
    if entry.get("kind") == "triton":
        return ("Triton's autotuner prints the configs it benchmarks and the best one, not their times "
                "(TRITON_PRINT_AUTOTUNING=1 in Triton 3.x); the cache's .autotune.json (cache_results=True) "
                "or the program's own configs_timings hold them")
    return "the log printed no time for these choices"


def run_autotune(session: Session, run: Run, urls: Urls) -> list[dict[str, Any]]:
    entries = run.autotune or []
    if not entries:
        return []
    linker = ChoiceLinker(session, list(run.compilations))
    linker.wanted = {name for entry in entries for name in
                     [entry.get("kernel")] + [choice_kernel(c.get("name")) for c in entry.get("choices") or []] if name}
    spans = windows(entries)
    out = []
    for entry, entry_spans in zip(entries, spans, strict=True):
        kernel = entry.get("kernel")
        best = entry.get("best_config")
        problem = matmul_problem(entry.get("op"), entry.get("shapes"))
        choices = []
        for choice, span in zip(entry.get("choices") or [], entry_spans, strict=True):
            config = choice.get("config") or {}
            failed = (choice.get("status") or "ok") == "failed"
            link = linker.link(kernel or choice_kernel(choice.get("name")), config, span, problem)
            match = link.compilation
            note = link.note
            if failed and match is None:
                note = "failed before any compilation was kept: " + (choice.get("error") or "no error printed")
            choices.append({
                "name": choice.get("name"), "time_ms": choice.get("time_ms"), "percent": choice.get("percent"),
                "config": config, "status": choice.get("status") or "ok",
                "error": choice.get("error"), "line": choice.get("line"), "damaged": choice.get("damaged"),
                "compile_time": choice.get("compile_time"),
                "compilation": urls.compilation(match.run_id, match.ordinal) if match else None,
                "compilation_id": compilation_id(match.run_id, match.ordinal) if match else None,
                "link": link.status, "link_note": note,
                "candidates": [{"id": compilation_id(c.run_id, c.ordinal), "ordinal": c.ordinal,
                                "url": urls.compilation(c.run_id, c.ordinal)} for c in link.candidates]
                if link.status == "several" else [],
            })
        timed = [c for c in choices if c["time_ms"] is not None and c["status"] != "failed"]
        # The tuner's own pick where the parser knows it (Triton breaks a tie on the median by the 20th
        # percentile), else the choice whose config is the printed best one, else the fastest.
        winner = entry.get("winner")
        if winner is None and best:
            picked = [c for c in choices if c["status"] != "failed" and _same_config(best, c["config"])]
            winner = picked[0]["name"] if len(picked) == 1 else None
        if winner is None and timed:
            winner = min(timed, key=lambda c: c["time_ms"])["name"]
        best_match = linker.link(kernel, best).compilation if best else None
        if best_match is None:  # the winning choice's own link (its config is the best one)
            won = next((c for c in choices if c["name"] == winner and c["compilation_id"]), None)
            best_match = next((c for c in run.compilations
                               if won and compilation_id(c.run_id, c.ordinal) == won["compilation_id"]), None)
        linked = sum(1 for c in choices if c["compilation"])
        out.append({
            "kind": entry.get("kind"), "kernel": kernel, "op": entry.get("op"), "shapes": entry.get("shapes"),
            "key": entry.get("key"), "seconds": entry.get("seconds"), "log": entry.get("log"),
            "dtypes": entry.get("dtypes"), "hardware": entry.get("hardware"), "timings_from": entry.get("timings_from"),
            "line": entry.get("line"), "printed_by": entry.get("printed_by", entry.get("kind")),
            "choices": choices, "winner": winner, "best_config": best,
            "best_compilation": urls.compilation(best_match.run_id, best_match.ordinal) if best_match else None,
            "best_compilation_id": compilation_id(best_match.run_id, best_match.ordinal) if best_match else None,
            "times_note": _times_note(entry, choices),
            "linked": {"choices": len(choices), "linked": linked,
                       "several": sum(1 for c in choices if c["link"] == "several"),
                       "none": sum(1 for c in choices if c["link"] == "none")},
        })
    return out


def by_compilation(autotune: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """compilation id -> {"won": [...where it was the best], "times": [{time_ms, percent, table}]}."""
    out: dict[str, dict[str, Any]] = {}
    for number, entry in enumerate(autotune, start=1):
        label = entry.get("op") or entry.get("kernel") or (
            f"best config printed at {(entry.get('log') or 'log').rsplit('/', 1)[-1]}:{entry.get('line')}"
            if entry.get("printed_by") == "program" else f"session {number}")
        if entry.get("shapes"):
            label += f"({entry['shapes']})"
        if entry.get("best_compilation_id"):
            out.setdefault(entry["best_compilation_id"], {"won": [], "times": []})["won"].append(label)
        for choice in entry["choices"]:
            if choice["compilation_id"]:
                mine = out.setdefault(choice["compilation_id"], {"won": [], "times": []})
                mine["times"].append({"time_ms": choice["time_ms"], "percent": choice["percent"], "table": label,
                                      "name": choice["name"], "status": choice["status"],
                                      "error": choice["error"]})
                if choice["name"] == entry["winner"] and label not in mine["won"]:
                    mine["won"].append(label)
    return out


def annotate_variants(session: Session, run: Run, variants: list[dict[str, Any]],
                      autotune: list[dict[str, Any]]) -> None:
    """Add to each Variants row what sets it apart and how it did: the tile derived from the IR where
    no constexpr was recorded (so two configs never look alike), its resources, its autotune times
    and whether the autotuner (or the program's printed best config) picked it."""
    from app.insight.resources import compilation_resources

    by_ordinal = {c.ordinal: c for c in run.compilations}
    results = by_compilation(autotune)
    prefetch(session, [by_ordinal[row["id"]] for group in variants for row in group["variants"]])
    for group in variants:
        for row in group["variants"]:
            compilation = by_ordinal[row["id"]]
            config = compilation_config(session, compilation)
            if not config["constexprs"] and config["tile"]:
                tile = config["tile"]
                row["config"] = {"tile (derived)": f"{tile['M']}x{tile['N']}x{tile['K']}", **row["config"]}
            row["tile"] = config["tile"]
            row["resources"] = compilation_resources(compilation, session)
            mine = results.get(row["compilation"], {"won": [], "times": []})
            row["autotune_times"] = mine["times"]
            row["autotune_won"] = mine["won"]
        keys: list[str] = []
        for row in group["variants"]:
            keys += [key for key in row["config"] if key not in keys]
        group["config_keys"] = keys


def autotune_result(session: Session, compilation: Compilation, urls: Urls) -> dict[str, Any] | None:
    """The compilation page's `autotune`: {"won": [tables where it was the pick], "times": [...]}, or
    None when no autotune table of the run names it."""
    if not compilation.run.autotune:
        return None
    found = by_compilation(run_autotune(session, compilation.run, urls))
    return found.get(compilation_id(compilation.run_id, compilation.ordinal))
