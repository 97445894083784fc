"""Which compilation benchmarked an autotune choice: a Triton `Autotuning kernel X with config ...` line,
an Inductor AUTOTUNE row (`triton_mm_18 0.0123 ms 87.1% BLOCK_K=64, ..., num_stages=5, num_warps=4`) or a
Helion row, matched on the kernel's name plus the config the line prints, against each compilation's
recorded or derived config, warps and stages (app/insight/kernel_config.py).

The same config is often compiled more than once in a run (one Inductor table per matmul shape, one
Triton specialisation per key), so a config alone can name several compilations. The log then tells
them apart: Triton prints a config's line just before compiling it, and Inductor compiles a table's
choices just before printing the table, so the compilation whose dumps start inside that stretch of
the same log is the one. A choice names its outcome: `linked`, `none` (no compilation of that kernel
has the config: never compiled, or not in the upload) or `several` (each candidate listed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.insight.kernel_config import compilation_config, config_matches, prefetch
from app.store.models import Compilation

__all__ = ["ChoiceLinker", "Link", "choice_kernel"]

_SUFFIX = re.compile(r"_\d+$")


def choice_kernel(name: str | None) -> str | None:
    """The kernel an Inductor choice compiled: `triton_mm_18` -> `triton_mm` (the template's kernel
    keeps the template's name; the number only counts choices). None for non-Triton choices (`mm`)."""
    if not name or not name.startswith("triton_"):
        return None
    return _SUFFIX.sub("", name)


@dataclass
class Link:
    compilation: Compilation | None
    status: str  # "linked" | "none" | "several" | "unmatched" (no config printed)
    candidates: list[Compilation]
    note: str | None = None


def _same_log(a: str | None, b: str | None) -> bool:
    return bool(a and b) and (a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1])  # type: ignore[union-attr]


class ChoiceLinker:
    """Links choices to a run's compilations; each compilation's config is read once, and only for
    kernels some choice names (a derived tile reads the compilation's TTIR)."""

    def __init__(self, session: Session, compilations: list[Compilation]) -> None:
        self.session = session
        self.by_kernel: dict[str | None, list[Compilation]] = {}
        for compilation in compilations:
            self.by_kernel.setdefault(compilation.kernel, []).append(compilation)
        self.all = compilations
        self.wanted: set[str] = set()  # the kernels the choices name (set by the caller)
        self._configs: dict[int, dict[str, Any]] = {}

    def config(self, compilation: Compilation) -> dict[str, Any]:
        if compilation.pk not in self._configs:
            if not self._configs:  # the first: read every candidate kernel's digests at once
                named = [c for c in self.all if c.kernel in self.wanted] if self.wanted else self.all
                prefetch(self.session, named)
            self._configs[compilation.pk] = compilation_config(self.session, compilation)
        return self._configs[compilation.pk]

    def _matching(self, pool: list[Compilation], config: dict) -> list[Compilation]:
        found = []
        for compilation in pool:
            info = self.config(compilation)
            if config_matches(config, info["options"], info["constexprs"], info["tile"]):
                found.append(compilation)
        return found

    def link(self, kernel: str | None, config: dict, window: tuple[str | None, int, int] | None = None,
             problem: dict[str, int] | None = None) -> Link:
        """`kernel`: the compilation's kernel name where the line tells it (else any compilation may be
        it); `window`: (log, first line, last line) where its compilation's dumps would start;
        `problem`: the matmul's M, N, K from an Inductor table's shapes, against what the
        compilation's generated module states (where it was uploaded)."""
        if not config:
            return Link(None, "unmatched", [], "the line prints no config to match")
        pool = self.by_kernel.get(kernel, []) if kernel else self.all
        found = self._matching(pool, config)
        if len(found) > 1 and problem:
            fits = [c for c in found if all(self.config(c)["problem"].get(axis, size) == size
                                            for axis, size in problem.items())]
            if fits:
                found = fits
        if len(found) > 1 and window is not None:
            log, start, end = window
            inside = [c for c in found if c.first_line is not None and _same_log(c.log_name, log)
                      and start < c.first_line < end]
            if inside:
                found = inside
        if len(found) == 1:
            return Link(found[0], "linked", found)
        if not found:
            what = f"of {kernel} " if kernel else ""
            if kernel and not pool:
                return Link(None, "none", [], f"no compilation of {kernel} in this upload")
            return Link(None, "none", [], f"no compilation {what}in this upload has this config")
        return Link(None, "several", found, f"{len(found)} compilations have this config")


_MATMULS = {"mm", "addmm", "bmm", "baddbmm", "_int_mm", "_scaled_mm", "scaled_mm"}


def matmul_problem(op: str | None, shapes: str | None) -> dict[str, int] | None:
    """M, N, K of an Inductor matmul table from its shapes (`addmm(1024x1536, 1024x768, 768x1536)`:
    the last two are A (..xMxK) and B (..xKxN)); None for other ops or unreadable shapes."""
    if op not in _MATMULS or not shapes:
        return None
    try:
        dims = [[int(d) for d in part.strip().split("x")] for part in shapes.split(",")]
    except ValueError:
        return None
    if len(dims) < 2 or len(dims[-2]) < 2 or len(dims[-1]) < 2:
        return None
    a, b = dims[-2], dims[-1]
    return {"M": a[-2], "K": a[-1], "N": b[-1]}


def windows(entries: list[dict[str, Any]]) -> list[list[tuple[str | None, int, int] | None]]:
    """Per entry, per choice: the stretch of its log where the choice's compilation would start.
    Triton: from the choice's own `Autotuning kernel` line to the next one (or the session's end);
    Inductor: from the previous table of the same log to this table's header."""
    out: list[list[tuple[str | None, int, int] | None]] = []
    previous_end: dict[str | None, int] = {}
    for entry in entries:
        log = entry.get("log")
        choices = entry.get("choices") or []
        spans: list[tuple[str | None, int, int] | None] = []
        if entry.get("kind") == "inductor" and entry.get("line") is not None:
            start = previous_end.get(log, 0)
            spans = [(log, start, int(entry["line"]))] * len(choices)
            last = max([int(c.get("line") or 0) for c in choices] + [int(entry["line"])])
            previous_end[log] = last
        elif entry.get("kind") == "triton":
            lines = [c.get("line") for c in choices]
            end_all = int(entry.get("line") or 1 << 40)
            for k, line in enumerate(lines):
                if line is None:
                    spans.append(None)
                    continue
                later = [other for other in lines[k + 1:] if other is not None]
                spans.append((log, int(line), int(later[0]) if later else end_all))
        else:
            spans = [None] * len(choices)
        out.append(spans)
    return out
