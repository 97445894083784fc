"""The compare page's answer to "why is one variant faster?": configs, resources and autotune times
side by side, the op-group counts of the final TTGIR and SASS, and the first pass whose effect
differs, turned into a few sentences ("B spills 256 B/thread (A: 0)", "A: shared memory (…) →
1 block/SM; B: registers (…) → 2 blocks/SM", "B 1.7x slower in autotuning"). The JSON twin carries the same as data."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.insight.autotune import by_compilation, run_autotune
from app.insight.kernel_config import compilation_config, tile_text
from app.insight.measured_times import by_how_much, measured_times
from app.insight.resources import compilation_resources
from app.store.models import Compilation
from app.urls import Urls, compilation_id


def _best_time(session: Session, compilation: Compilation, urls: Urls, cache: dict) -> dict | None:
    if compilation.run_id not in cache:
        cache[compilation.run_id] = by_compilation(run_autotune(session, compilation.run, urls))
    mine = cache[compilation.run_id].get(compilation_id(compilation.run_id, compilation.ordinal))
    if not mine:
        return None
    times = [t["time_ms"] for t in mine["times"] if t["time_ms"] is not None and t.get("status") != "failed"]
    failed = [t for t in mine["times"] if t.get("status") == "failed"]
    return {"time_ms": min(times) if times else None, "times": mine["times"], "won": mine["won"],
            "failed": [t.get("error") or t["table"] for t in failed]}


def _ops(stages: dict, key: str) -> dict[str, int]:
    return dict((stages.get(key) or {}).get("ops") or {})


def why(session: Session, a: Compilation, b: Compilation, a_stages: dict, b_stages: dict,
        effect: dict | None, urls: Urls) -> dict[str, Any]:
    cache: dict = {}
    configs = {"a": compilation_config(session, a), "b": compilation_config(session, b)}
    resources = {"a": compilation_resources(a, session), "b": compilation_resources(b, session)}
    autotune = {"a": _best_time(session, a, urls, cache), "b": _best_time(session, b, urls, cache)}
    ops = {}
    for key in ("ttgir", "sass"):
        left, right = _ops(a_stages, key), _ops(b_stages, key)
        ops[key] = {group: [left.get(group, 0), right.get(group, 0)] for group in sorted(set(left) | set(right))
                    if left.get(group, 0) != right.get(group, 0)}
    sentences: list[str] = []
    ca, cb = configs["a"], configs["b"]
    named = sorted(set(ca["constexprs"]) | set(cb["constexprs"]))
    config_diff = [f"{k} {ca['constexprs'].get(k, '—')} vs {cb['constexprs'].get(k, '—')}" for k in named
                   if ca["constexprs"].get(k) != cb["constexprs"].get(k)]
    if not config_diff and ca["tile"] != cb["tile"] and ca["tile"] and cb["tile"]:
        config_diff.append(f"tile {tile_text(ca['tile'])} vs {tile_text(cb['tile'])} (derived from tt.dot)")
    config_diff += [f"{k} {ca['options'].get(k, '—')} vs {cb['options'].get(k, '—')}"
                    for k in sorted(set(ca["options"]) | set(cb["options"]))
                    if ca["options"].get(k) != cb["options"].get(k)]
    if config_diff:
        sentences.append("Config A vs B: " + ", ".join(config_diff))
    ra, rb = resources["a"] or {}, resources["b"] or {}
    for side, mine, other, tag in (("B", rb, ra, "A"), ("A", ra, rb, "B")):
        if mine.get("local_bytes"):
            sentences.append(f"{side} spills {mine['local_bytes']} B/thread ({tag}: {other.get('local_bytes', '?')})")
    la, lb = ra.get("limiter"), rb.get("limiter")
    if la and lb and (la != lb or ra.get("registers") != rb.get("registers")):
        # the one limiter of app/insight/resources.py, as the compilation pages show it
        sentences.append(f"A: {la['why']} → {la['result']}; B: {lb['why']} → {lb['result']}")
    ta, tb = (autotune["a"] or {}).get("time_ms"), (autotune["b"] or {}).get("time_ms")
    ratio = None
    if ta and tb:
        ratio = round(tb / ta, 2)  # the first sentence states it (measured_times.by_how_much)
    for tag, found in (("A", autotune["a"]), ("B", autotune["b"])):
        if found and found["won"]:
            sentences.append(f"{tag} was the autotuner's pick ({', '.join(found['won'])})")
    for key, label in (("ttgir", "final TTGIR"), ("sass", "SASS")):
        if ops[key]:
            sentences.append(f"{label} op groups A/B: " + ", ".join(f"{g} {x}/{y}" for g, (x, y) in ops[key].items()))
    if effect:
        sentences.append(f"First pass whose effect differs: {effect.get('pass')}")
    # "By how much" comes first: B's time over A's, each number with its source
    times = {"a": measured_times(session, a, autotune["a"]), "b": measured_times(session, b, autotune["b"])}
    gap = by_how_much(times["a"], times["b"])
    sentences.insert(0, gap["sentence"])
    return {"times": {**times, "ratio_b_over_a": gap["ratio"], "a_used": gap["a"], "b_used": gap["b"]},
            "configs": configs, "resources": resources, "autotune": {**autotune, "ratio_b_over_a": ratio},
            "ops": ops, "first_effect_pass": (effect or {}).get("pass"), "sentences": sentences}
