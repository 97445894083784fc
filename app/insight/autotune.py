"""A run's autotuning results (`runs.autotune`, parsers/autotuning/autotune.py) as the pages show them: one
entry per benchmark table or autotuner session, each choice linked to the compilation its config
identifies (app/insight/kernel_config.py), the winner named, and per compilation its time and
whether it won (for the Variants table and the compare page)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.insight.kernel_config import compilation_config, config_matches
from app.store.models import Compilation, Run
from app.urls import Urls, compilation_id


def _identify(config: dict, kernel: str | None, configs: dict[int, tuple[Compilation, dict]]) -> Compilation | None:
    """The one compilation (of that kernel, if named) this config describes; None when none or several."""
    found = [compilation for compilation, info in configs.values()
             if (kernel is None or compilation.kernel == kernel)
             and config_matches(config, info["options"], info["constexprs"], info["tile"])]
    return found[0] if len(found) == 1 else None


def run_autotune(session: Session, run: Run, urls: Urls) -> list[dict[str, Any]]:
    entries = run.autotune or []
    if not entries:
        return []
    configs = {c.pk: (c, compilation_config(session, c)) for c in run.compilations}
    out = []
    for entry in entries:
        kernel = entry.get("kernel")
        choices = []
        for choice in entry.get("choices") or []:
            match = _identify(choice.get("config") or {}, kernel, configs) if choice.get("config") else None
            choices.append({
                "name": choice.get("name"), "time_ms": choice.get("time_ms"), "percent": choice.get("percent"),
                "config": choice.get("config") or {}, "status": choice.get("status") or "ok",
                "error": choice.get("error"), "line": choice.get("line"), "damaged": choice.get("damaged"),
                "compile_time": choice.get("compile_time"),
                "compilation": urls.compilation(match.run_id, match.ordinal) if match else None,
                "compilation_id": compilation_id(match.run_id, match.ordinal) if match else None,
            })
        timed = [c for c in choices if c["time_ms"] is not None and c["status"] != "failed"]
        # The tuner's own pick where the parser knows it (Triton breaks a tie on the median by the 20th
        # percentile), else the fastest.
        winner = entry.get("winner") or (min(timed, key=lambda c: c["time_ms"])["name"] if timed else None)
        best = entry.get("best_config")
        best_match = _identify(best, kernel, configs) if best else None
        out.append({
            "kind": entry.get("kind"), "kernel": kernel, "op": entry.get("op"), "shapes": entry.get("shapes"),
            "key": entry.get("key"), "seconds": entry.get("seconds"), "log": entry.get("log"),
            "dtypes": entry.get("dtypes"), "hardware": entry.get("hardware"), "timings_from": entry.get("timings_from"),
            "line": entry.get("line"), "printed_by": entry.get("printed_by", entry.get("kind")),
            "choices": choices, "winner": winner, "best_config": best,
            "best_compilation": urls.compilation(best_match.run_id, best_match.ordinal) if best_match else None,
            "best_compilation_id": compilation_id(best_match.run_id, best_match.ordinal) if best_match else None,
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
                if choice["name"] == entry["winner"]:
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
