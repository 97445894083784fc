"""Profile metrics on a compilation's lines: per Python line (the hot lines), per IR line of any pass
(through its loc to the Python line, or directly where the profile names TTGIR lines or SASS
instructions), and per kernel for the run page.

Totals are conserved: for a compilation, a kernel and a metric, the Python lines shown plus the
`unattributed` row (what the kernel frame holds itself, IR lines without a loc, instructions without
line info) plus the `other compilations` row (lines whose cache hash names another compilation of
the same kernel) equal the kernel's total in the profile.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app import render
from app.store.models import Artifact, Compilation, Profile, ProfileKernel
from app.urls import Urls
from parsers.locations.loc import resolve
from parsers.profiles.profile_records import cache_hash, display_twins, metric_info

__all__ = ["CompilationMetrics", "compilation_metrics", "run_profiles"]

PREFERRED = ("num_samples", "smsp__pcsamp_sample_count", "Warp Stall Sampling (All Samples)", "cycles", "time (ns)")
HOT_LINES = 15


@dataclass
class KernelLines:
    """One profile kernel as seen from one compilation."""

    row: ProfileKernel
    profile: Profile
    shared: bool  # joined by name to several compilations: its lines may be theirs too
    python: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict)
    ir: dict[int, dict[str, float]] = field(default_factory=dict)  # 1-based line of the cached .ttgir
    ir_file: str | None = None
    sass: dict[int, tuple[str, dict[str, float]]] = field(default_factory=dict)  # offset -> (text, metrics)
    unattributed: dict[str, float] = field(default_factory=dict)
    other: dict[str, float] = field(default_factory=dict)  # lines of other compilations of the kernel

    @property
    def scope(self) -> str | None:
        """The `proton.scope` it ran under ("autotune", "steady"...), where the profile names one."""
        return ",".join((self.row.data or {}).get("scopes") or []) or None

    def own_total(self, metric: str) -> float:
        """The compilation's own part of the kernel's total: less the lines that name another
        compilation of the kernel (by cache hash). A kernel shared by name alone keeps it whole."""
        return (self.row.totals or {}).get(metric, 0) - self.other.get(metric, 0)

    def describe(self, metric: str) -> dict[str, Any]:
        """What the shares are of: this compilation's own total of the metric, in which scope."""
        return {"kernel": self.row.name, "scope": self.scope, "profile": self.profile.path,
                "total": self.own_total(metric), "kernel_total": (self.row.totals or {}).get(metric, 0),
                "shared": self.shared, "candidates": len(self.row.candidates or [])}

    def metric_names(self) -> list[str]:
        names = {name for metrics in self.python.values() for name in metrics}
        names |= {name for metrics in self.ir.values() for name in metrics}
        return sorted(names)


def _add(total: dict[str, float], amounts: dict[str, float]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, 0) + value


@functools.lru_cache(maxsize=64)
def _ttgir_locs(text: str) -> tuple[tuple[str, int] | None, ...]:
    return tuple(
        (loc.primary.file, loc.primary.line) if loc.primary is not None else None for loc in resolve(text, "ttgir")
    )


def _ttgir_text(session: Session, compilation: Compilation) -> str | None:
    digest = session.scalar(
        select(Artifact.blob).where(Artifact.compilation_pk == compilation.pk, Artifact.kind == "ttgir")
    )
    return render.blob_reader.text(session, digest) if digest else None


def _kernel_lines(session: Session, compilation: Compilation, row: ProfileKernel, profile: Profile) -> KernelLines:
    view = KernelLines(row, profile, shared=row.compilation_pk is None and row.joined_by != "hash")
    data = row.data or {}
    _add(view.unattributed, data.get("unattributed", {}))
    own_hash = (compilation.cache_key or "").rstrip("/").rsplit("/", 1)[-1]
    ttgir_locs: tuple | None = None
    for kind, file, line, metrics in data.get("lines", []):
        digest = cache_hash(file)
        if digest and digest != own_hash:
            _add(view.other, metrics)
            continue
        if kind == "python":
            _add(view.python.setdefault((file, line), {}), metrics)
            continue
        _add(view.ir.setdefault(line, {}), metrics)
        view.ir_file = file
        if ttgir_locs is None:
            text = _ttgir_text(session, compilation)
            ttgir_locs = _ttgir_locs(text) if text else ()
        loc = ttgir_locs[line - 1] if 0 < line <= len(ttgir_locs) else None
        if loc is None:
            _add(view.unattributed, metrics)  # a TTGIR line without a Python loc
        else:
            _add(view.python.setdefault(loc, {}), metrics)
    for offset, _address, text, _file, _line, metrics in data.get("sass", []):
        view.sass[offset] = (text, metrics)
    return view


@dataclass
class CompilationMetrics:
    compilation: Compilation
    kernels: list[KernelLines]

    @property
    def empty(self) -> bool:
        return not self.kernels

    def metrics(self) -> list[dict[str, str]]:
        """Metrics some kernel holds per line, preferred ones first; an ncu report's raw name is left
        out where the same counter is there under its source-page name (profile_records.display_twins)."""
        names = {name for kernel in self.kernels for name in kernel.metric_names()}
        names = {name for name in names if not any(twin in names for twin in display_twins(name))}
        ordered = [name for name in PREFERRED if name in names] + sorted(names - set(PREFERRED))
        return [metric_info(name) for name in ordered]

    def choose(self, wanted: str | None) -> str | None:
        names = [item["name"] for item in self.metrics()]
        if wanted in names:
            return wanted
        twin = next((name for name in display_twins(wanted or "") if name in names), None)
        if twin:
            return twin
        return names[0] if names else None

    def unknown(self, wanted: str | None) -> str | None:
        """`wanted` when the page was asked for a metric this profile does not hold (the page says so
        and shows the first one instead); None otherwise."""
        if not wanted:
            return None
        return None if self.choose(wanted) in (wanted, *display_twins(wanted)) else wanted

    def kernel_for(self, metric: str) -> KernelLines | None:
        """The kernel whose lines hold the metric: the one joined to this compilation alone first,
        then the one with the most of it."""
        holding = [k for k in self.kernels if any(metric in m for m in k.python.values()) or
                   any(metric in m for m in k.ir.values())]
        if not holding:
            return None
        return max(holding, key=lambda k: (not k.shared, k.own_total(metric)))

    def other_scopes(self, metric: str) -> list[dict[str, Any]]:
        """The same compilation's kernel under other scopes (kept apart, never summed): their totals."""
        chosen = self.kernel_for(metric)
        if chosen is None:
            return []
        return [{"scope": k.scope, "profile": k.profile.path, "total": k.own_total(metric), "shared": k.shared}
                for k in self.kernels if k is not chosen and k.profile.pk == chosen.profile.pk
                and (any(metric in m for m in k.python.values()) or any(metric in m for m in k.ir.values()))]

    def python_totals(self, metric: str) -> dict[tuple[str, int], float]:
        kernel = self.kernel_for(metric)
        if kernel is None:
            return {}
        return {key: metrics[metric] for key, metrics in kernel.python.items() if metrics.get(metric)}

    def hot_lines(self, metric: str, urls: Urls, limit: int = HOT_LINES) -> dict[str, Any]:
        """The top Python lines of the metric with their share, plus the rows that make the sum whole.
        Each line's `map_url` follows it through every pass (line_metrics adds the one-pass link)."""
        kernel = self.kernel_for(metric)
        info = metric_info(metric)
        if kernel is None:
            return {"metric": info, "lines": [], "total": 0}
        total = kernel.own_total(metric)  # shares are of this compilation's own samples
        ranked = sorted(self.python_totals(metric).items(), key=lambda item: -item[1])
        run_id, ordinal = self.compilation.run_id, self.compilation.ordinal
        lines = [
            {
                "file": file, "line": line, "name": render.basename(file), "value": value,
                "share": value / total if total else None,
                "map_url": urls.source_map(run_id, ordinal, file, line),
            }
            for (file, line), value in ranked[:limit]
        ]
        rest = sum(value for _, value in ranked[limit:])
        return {
            "metric": info, "total": total, "kernel": kernel.row.name, "profile": kernel.profile.path,
            "kernel_total": kernel.row.totals.get(metric, 0), "scope": kernel.scope,
            "other_scopes": self.other_scopes(metric),
            "shared": kernel.shared, "lines": lines,
            "other_lines": {"count": max(0, len(ranked) - limit), "value": rest},
            "unattributed": kernel.unattributed.get(metric, 0),
            "other_compilations": kernel.other.get(metric, 0),
        }

    def line_values(self, metric: str, locs: list, kind: str, blob: str | None,
                    lines: list[str] | None) -> tuple[dict[int, float], dict[int, int]]:
        """(1-based IR line -> the metric, IR line -> the line holding its source line's value).
        An IR line the profile names itself (the cached .ttgir the TTGIR lines point at, a SASS
        instruction by its offset) holds its own value. Otherwise a value belongs to a source line
        (a Python line, or a .ttgir line after USE_IR_LOC rewrote the locations), never to one op:
        it is put once, on the first IR line of that source line, and the source line's other IR
        lines point there. So the values shown never sum past the kernel's total."""
        kernel = self.kernel_for(metric)
        if kernel is None:
            return {}, {}
        if kernel.ir and blob is not None and blob == self.ttgir_blob():
            return {line: m[metric] for line, m in kernel.ir.items() if m.get(metric)}, {}
        if kind == "sass" and kernel.sass and lines is not None:
            matched, _ = self.sass_instructions(metric, lines)
            values = {number: metrics[metric] for number, _, metrics in matched if metrics.get(metric)}
            if values:
                return values, {}
        python = self.python_totals(metric)
        ir_file = kernel.ir_file
        values: dict[int, float] = {}
        same: dict[int, int] = {}
        first: dict[tuple[str, int], int] = {}
        # A pass whose locs name the .ttgir's lines counts by those alone: the Python lines' totals
        # already hold the same samples (each .ttgir line's, through its own loc)
        by_ir = ir_file is not None and any(loc is not None and loc.file == ir_file for loc in locs)
        for number, loc in enumerate(locs, start=1):
            if loc is None or (by_ir and loc.file != ir_file):
                continue
            key = (loc.file, loc.line)
            value = kernel.ir.get(loc.line, {}).get(metric) if by_ir else python.get(key)
            if not value:
                continue
            if key in first:
                same[number] = first[key]
            else:
                first[key] = number
                values[number] = value
        return values, same

    def sass_instructions(self, metric: str, lines: list[str]) -> tuple[list[tuple[int, int, dict]], dict[str, float]]:
        """The profile's instructions found in a SASS text by offset (the profiler's address less the
        kernel's first, against the `/*0040*/` nvdisasm and cuobjdump print): (1-based line, offset,
        its metrics) each, and the profile's instructions not in this text (`count`, `value` of the
        metric), so the shown ones plus those make the kernel's total."""
        kernel = self.kernel_for(metric)
        if kernel is None or not kernel.sass:
            return [], {"count": 0, "value": 0}
        # offsets restart in each function of a cubin: only the kernel's own section counts, when
        # the text names it (nvdisasm `.text.<name>:`, cuobjdump `Function : <name>`)
        headers = {f".text.{kernel.row.base}:", f"Function : {kernel.row.base}"}
        named = any(line.strip() in headers for line in lines)
        inside = not named
        matched, seen = [], set()
        for number, text in enumerate(lines, start=1):
            stripped = text.strip()
            if stripped.startswith((".text.", "Function : ")) and (stripped.endswith(":") or "Function" in stripped):
                inside = not named or stripped in headers
            offset = _sass_offset(text) if inside else None
            if offset is not None and offset in kernel.sass and offset not in seen:
                seen.add(offset)
                matched.append((number, offset, kernel.sass[offset][1]))
        missing = [metrics for offset, (_, metrics) in kernel.sass.items() if offset not in seen]
        return matched, {"count": len(missing), "value": sum(metrics.get(metric, 0) for metrics in missing)}

    def ttgir_blob(self) -> str | None:
        artifact = next((a for a in self.compilation.artifacts if a.kind == "ttgir"), None)
        return artifact.blob if artifact else None


def _sass_offset(line: str) -> int | None:
    stripped = line.lstrip()
    if not stripped.startswith("/*"):
        return None
    end = stripped.find("*/")
    try:
        return int(stripped[2:end], 16)
    except ValueError:
        return None


def compilation_metrics(session: Session, compilation: Compilation) -> CompilationMetrics:
    rows = session.execute(
        select(ProfileKernel, Profile).join(Profile, Profile.pk == ProfileKernel.profile_pk).where(
            ProfileKernel.run_id == compilation.run_id,
            or_(ProfileKernel.compilation_pk == compilation.pk, ProfileKernel.compilation_pk.is_(None)),
        ).order_by(ProfileKernel.pk)
    ).all()
    kernels = [
        _kernel_lines(session, compilation, row, profile)
        for row, profile in rows
        if row.compilation_pk == compilation.pk or compilation.pk in (row.candidates or [])
    ]
    return CompilationMetrics(compilation, kernels)


def kernel_rates(time_ns: float | None, count: int | None, totals: dict[str, float]) -> dict[str, float | None]:
    """Mean time per launch, and the achieved rates where the profile holds the work done (Proton's
    launch_metadata `flops8/16/32/64` and `bytes`, summed over the same launches as the time)."""
    flops = sum(value for name, value in totals.items() if name.startswith("flops") and isinstance(value, (int, float)))
    moved = totals.get("bytes")
    timed = time_ns if time_ns and time_ns > 0 else None
    return {
        "mean_ns": timed / count if timed and count else None,
        "tflops": flops / timed / 1e3 if timed and flops else None,  # flop/ns = GFLOP/s
        "gbps": moved / timed if timed and moved else None,  # byte/ns = GB/s
    }


def _regions(regions: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Instrumentation regions (`pl.enter_scope`): their cycles, largest first."""
    rows = [{"name": name, "cycles": metrics.get("cycles"), "normalized_cycles": metrics.get("normalized_cycles")}
            for name, metrics in regions.items() if isinstance(metrics, dict)]
    return sorted(rows, key=lambda row: -(row["cycles"] or 0))


def run_profiles(session: Session, run_id: str, urls: Urls) -> list[dict[str, Any]]:
    """The run JSON's `profiles`: one entry per profile file, its kernels by time."""
    ordinals = dict(session.execute(select(Compilation.pk, Compilation.ordinal).where(Compilation.run_id == run_id)).all())
    out = []
    for profile in session.scalars(select(Profile).where(Profile.run_id == run_id).order_by(Profile.pk)):
        kernels = session.scalars(select(ProfileKernel).where(ProfileKernel.profile_pk == profile.pk)).all()
        entries = [
            {
                "name": kernel.name,
                "scope": ",".join((kernel.data or {}).get("scopes") or []) or None,
                "time_ns": kernel.time_ns,
                "count": kernel.count,
                **kernel_rates(kernel.time_ns, kernel.count, kernel.totals or {}),
                "regions": _regions((kernel.data or {}).get("regions") or {}),
                "compilation": urls.compilation(run_id, ordinals[kernel.compilation_pk])
                if kernel.compilation_pk in ordinals else None,
                "candidates": [urls.compilation(run_id, ordinals[pk]) for pk in kernel.candidates or [] if pk in ordinals],
                "joined_by": kernel.joined_by,
                "totals": kernel.totals,
            }
            for kernel in kernels
        ]
        entries.sort(key=lambda entry: -(entry["time_ns"] or 0))
        out.append({"path": profile.path, "tool": profile.tool, "mode": profile.mode, "metrics": profile.metrics,
                    "devices": profile.devices, "notes": profile.notes, "kernels": entries})
    return out
