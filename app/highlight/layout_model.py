"""An encoding explained: what :func:`app.highlight.layouts.explain_encoding` returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LayoutField:
    """One parameter of an encoding: ``name = value`` as printed, and what it means."""

    name: str
    value: str
    explanation: str


@dataclass
class Layout:
    """One encoding, explained."""

    alias: str | None  # "blocked1" (no '#'), None for an inline encoding
    kind: str  # "blocked", "nvidia_mma", "slice", ... (the mnemonic, without dialect)
    definition: str  # the full text as printed, "#ttg.blocked<{...}>"
    line: int | None  # 1-based line of the alias definition
    fields: list[LayoutField] = field(default_factory=list)
    summary: str = ""
    dialect: str = ""  # "ttg", "triton_gpu", "ttng", "gluon", ...
