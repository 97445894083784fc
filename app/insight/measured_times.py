"""How long a compilation ran, by every measurement the run holds: a profile's kernel time per launch
(Proton timing, PC sampling's kernel times, Nsight Compute's duration), per scope, and the autotuner's
benchmark time. Compare's first sentence states B's time over A's from the best source both sides
share, naming the source of each number."""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app.store.models import Compilation, Profile, ProfileKernel

__all__ = ["by_how_much", "measured_times"]

# a profile's kernel time beats the autotuner's (the autotuner's runs include cold caches, and Triton's
# prints none before 3.x); among profiles, a steady-state scope beats an autotuning one
_ORDER = {"ncu": 0, "proton": 1, "autotune": 3}


def _scope_rank(scope: str | None) -> int:
    return 1 if scope and "autotun" in scope.lower() else 0


def measured_times(session: Session, compilation: Compilation, autotune: dict | None) -> list[dict[str, Any]]:
    """Each measurement of the compilation, best first: {source, file, scope, ns_per_launch, launches,
    alone} (alone: the profile's kernel is this compilation's, not shared by name with others)."""
    rows = session.execute(
        select(ProfileKernel, Profile).join(Profile, Profile.pk == ProfileKernel.profile_pk).where(
            ProfileKernel.run_id == compilation.run_id, ProfileKernel.time_ns.is_not(None),
            or_(ProfileKernel.compilation_pk == compilation.pk, ProfileKernel.compilation_pk.is_(None)))
    ).all()
    out = []
    for kernel, profile in rows:
        mine = kernel.compilation_pk == compilation.pk
        if not mine and compilation.pk not in (kernel.candidates or []):
            continue
        if not kernel.time_ns or kernel.time_ns <= 0:
            continue
        launches = kernel.count or 1
        scope = ",".join((kernel.data or {}).get("scopes") or []) or None
        out.append({"source": profile.tool, "mode": profile.mode, "file": profile.path, "scope": scope,
                    "kernel": kernel.name, "ns_per_launch": kernel.time_ns / launches, "launches": launches,
                    "alone": mine, "row": kernel.pk})
    if autotune and autotune.get("time_ms"):
        tables = [t.get("table") for t in autotune.get("times") or [] if t.get("time_ms") == autotune["time_ms"]]
        out.append({"source": "autotune", "mode": "benchmark", "file": tables[0] if tables else None, "scope": None,
                    "kernel": None, "ns_per_launch": autotune["time_ms"] * 1e6, "launches": None, "alone": True,
                    "row": None})
    out.sort(key=lambda m: (not m["alone"], _ORDER.get(m["source"], 2), _scope_rank(m["scope"]), m["mode"] != "timing"))
    return out


def _ns(value: float) -> str:
    return f"{value:,.0f} ns" if value < 1e6 else f"{value / 1e6:,.3f} ms"


def _source(m: dict[str, Any]) -> str:
    if m["source"] == "autotune":
        return f"autotune benchmark{', ' + m['file'] if m['file'] else ''}"
    where = m["file"].rsplit("/", 1)[-1] if m["file"] else m["source"]
    parts = [f"{m['source']} {m['mode']}", where]
    if m["scope"]:
        parts.append(f"scope {m['scope']}")
    if m["launches"]:
        parts.append(f"{m['launches']:,} launch{'es' if m['launches'] != 1 else ''}")
    if not m["alone"]:
        parts.append("kernel shared by name with other compilations")
    return ", ".join(parts)


def _key(m: dict[str, Any]) -> tuple:
    return (m["source"], m["mode"], m["file"], m["scope"])


def by_how_much(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """The ratio of B's time to A's from the first source both sides have (same tool, file and
    scope), and the sentence that states it; with no shared source, what each side has."""
    b_keys = {_key(m): m for m in b}
    # one profile kernel shared by name by both sides is the same number twice: no ratio from it
    pairs = [(m, b_keys[_key(m)]) for m in a if _key(m) in b_keys
             and (m["row"] is None or m["row"] != b_keys[_key(m)]["row"])]
    if not pairs:
        def side(tag: str, found: list[dict[str, Any]]) -> str:
            return f"{tag}: {_ns(found[0]['ns_per_launch'])} per launch ({_source(found[0])})" if found else f"{tag}: none"
        return {"ratio": None, "sentence": "No measured time for both sides from one source, so no ratio: "
                                           + side("A", a) + "; " + side("B", b),
                "a": a[0] if a else None, "b": b[0] if b else None}
    first, second = pairs[0]
    ratio = second["ns_per_launch"] / first["ns_per_launch"]
    how = f"{ratio:.2f}× slower than A" if ratio >= 1 else f"{1 / ratio:.2f}× faster than A"
    sentence = (f"B is {how}: {_ns(second['ns_per_launch'])} vs {_ns(first['ns_per_launch'])} per launch "
                f"(A: {_source(first)}; B: {_source(second)})")
    more = [f"{m['source']} {m['mode']}{' scope ' + m['scope'] if m['scope'] else ''}: "
            f"{n['ns_per_launch'] / m['ns_per_launch']:.2f}× ({_ns(n['ns_per_launch'])} vs {_ns(m['ns_per_launch'])})"
            for m, n in pairs[1:4]]
    if more:
        sentence += "; also " + "; ".join(more)
    return {"ratio": round(ratio, 4), "sentence": sentence, "a": first, "b": second,
            "pairs": [{"a": m, "b": n, "ratio": round(n["ns_per_launch"] / m["ns_per_launch"], 4)} for m, n in pairs]}
