"""Print forms: module dumps and the software pipeliner's internal dumps print the same IR differently.

A module dump (`// -----// IR Dump Before X`) heads the module with layout aliases
(`#blocked1 = #ttg.blocked<{...}>`) and `#locN = loc(...)` lines, uses the aliases in types, and names
values after their NameLoc (`%acc_13`). The pipeliner's internal dumps (`SoftwarePipeliner internal IR
Dump After: LowerLoops`, ...) print without debug info: layouts spelled out inline, no `loc`, values
numbered (`%31`, `%arg9`). Lined up as they are, nearly every line of one differs from the other.

When the two sides of a diff differ in form, the comparison is made like for like: each side's layout
aliases are expanded in its own lines, its alias definition lines are set aside (ignored, as location
lines are), and value names are left out of the alignment key (a name of A must still map to one name
of B: the renumbering check keeps a changed operand visible). `note` says so on the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.layouts.aliases import expand

# `#blocked1 = #ttg.blocked<...>`, `#smem = #ttg.shared_memory`: an alias of a dialect
# attribute (not `#loc3 = loc(...)`, nor the `#di_*` debug-info aliases locations use).
_LAYOUT_ALIAS_LINE = re.compile(
    r"^#(?!di_)([A-Za-z_][\w$-]*) = (#[A-Za-z_]\w*\.\w+(?:<.*?)?)\s*$", re.MULTILINE
)
# a dialect attribute written out where a type takes its encoding: `tensor<8xf32, #ttg.blocked<{...}>>`
_INLINE_ENCODING = re.compile(r", #[A-Za-z_]\w*\.\w+<")
_MODULE = re.compile(r"^\s*(?:\"?builtin\.)?module\b", re.MULTILINE)
_LOC_CALL = "loc("
_VALUE = re.compile(r"%[\w$.-]+|\^bb\d+")
ALIAS_LINE_KEY = "\x00alias"  # the one key every set-aside alias definition line shares


@dataclass(frozen=True)
class PrintForm:
    aliases: bool  # layout alias definitions head the module
    locs: bool  # locations are printed

    def describe(self) -> str:
        if self.aliases or self.locs:
            parts = [
                "layout aliases" if self.aliases else "layouts inline",
                "locations" if self.locs else "no loc",
            ]
        else:
            parts = ["layouts inline", "no loc", "numbered values"]
        return ", ".join(parts)


def print_form(text: str) -> PrintForm | None:
    """The form of an MLIR module's text; None for anything else (LLVM IR, PTX, an empty text)."""
    if not _MODULE.search(text):
        return None
    return PrintForm(aliases=_LAYOUT_ALIAS_LINE.search(text) is not None, locs=_LOC_CALL in text)


def mixed_forms(a_text: str, b_text: str) -> tuple[PrintForm, PrintForm] | None:
    """Both sides' forms when they differ in a way that matters, else None.

    Locations present on one side only (named against numbered values), or aliases on one side only
    where the other writes layouts inline (a TTIR dump has no aliases and no inline layouts either:
    that difference is a real change, not a print form).
    """
    if _LOC_CALL in a_text and _LOC_CALL in b_text:
        return None  # the common case, decided without a scan: two module dumps (debug info on both)
    a_form, b_form = print_form(a_text), print_form(b_text)
    if a_form is None or b_form is None or a_form == b_form:
        return None
    if a_form.locs != b_form.locs:
        return a_form, b_form
    inline_side = b_text if a_form.aliases else a_text
    return (a_form, b_form) if _INLINE_ENCODING.search(inline_side) else None


def note(forms: tuple[PrintForm, PrintForm]) -> str:
    a_form, b_form = forms
    return (
        f"The two sides print IR differently (A: {a_form.describe()}; B: {b_form.describe()}), as the "
        "pipeliner's internal dumps do: compared with layout aliases expanded on both sides, alias "
        "definition lines set aside and value names ignored (a value must still map to one value)."
    )


def print_form_notes(a_text: str, b_text: str) -> list[str]:
    """What a diff of the two texts says about their print forms (none when alike)."""
    forms = mixed_forms(a_text, b_text)
    return [] if forms is None else [note(forms)]


def like_for_like(compared: list[str], ignored: list[bool], text: str) -> list[str]:
    """Expand one side's layout aliases in its compared lines, in place; its alias definition lines
    become ignored lines sharing one key. Returns the alignment keys: the lines without value names."""
    definitions = {m.group(1): m.group(2) for m in _LAYOUT_ALIAS_LINE.finditer(text)}
    if definitions:
        names = re.compile(
            "#(?:" + "|".join(map(re.escape, sorted(definitions, key=len, reverse=True))) + r")\b"
        )
        for index, line in enumerate(compared):
            if line[:1] == "#" and _LAYOUT_ALIAS_LINE.match(line):
                compared[index] = ALIAS_LINE_KEY
                ignored[index] = True
            elif "#" in line and names.search(line):
                compared[index] = expand(line, definitions)
    return [_VALUE.sub(_value_kind, line) if "%" in line or "^" in line else line for line in compared]


def _value_kind(match: re.Match) -> str:
    return "^bb" if match.group()[0] == "^" else "%"
