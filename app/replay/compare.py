"""A replayed pass's result against the stored dump after it, as the diff page compares snapshots with
its Ignore options on: location (`loc(...)`, `#locN = ...`) and alias numbering differences are not
differences, and neither are value names. A dump names values after their NameLoc (`%row_idx`); the
text it was parsed from does not carry every NameLoc (a loop's induction variable prints no `loc`),
so the replay may print `%arg6` where the next dump says `%row_idx`. Values are compared as the diff
compares two print forms (app/diff/print_forms.py): names out of the key, rebound at definitions, a
use still mapping to one value, so a changed operand still shows. The answer says which of these it needed."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.diff import DELETE, EQUAL, INSERT, REPLACE, DiffOptions, diff_texts

IGNORING = DiffOptions(loc=False, ssa=True, alias=True, context=0)
MAX_DIFF_LINES = 400
NAMES = "value names (%row_idx against %arg6: a value must still map to one value)"
_IGNORED_NAMES = (
    ("loc", "locations (loc(...) and #loc aliases)"),
    ("names", NAMES),
    ("alias", "attribute alias numbering (#blocked1/#blocked2)"),
)


@dataclass
class Comparison:
    same: bool
    ignored: list[str] = field(default_factory=list)  # what had to be ignored for `same`
    diff: list[str] = field(default_factory=list)  # "- line" / "+ line", the changed lines only
    stats: dict = field(default_factory=dict)


def _ignored(a_text: str, b_text: str) -> list[str]:
    """Which of the ignore options the texts needed: checked by turning each back on."""
    needed = []
    for name, label in _IGNORED_NAMES:
        if name == "names":
            changed = diff_texts(a_text, b_text, IGNORING).changes
        else:
            strict = DiffOptions(**{**IGNORING.as_dict(), name: name == "loc"})
            changed = diff_texts(a_text, b_text, strict, names=True).changes
        if changed:
            needed.append(label)
    return needed


def compare(result: str, stored: str) -> Comparison:
    """`result` (the replay's module) against `stored` (the dump after the pass)."""
    if result.strip() == stored.strip():
        return Comparison(True)
    diff = diff_texts(stored, result, IGNORING, names=True)
    if not diff.changes:
        return Comparison(True, _ignored(stored, result) or ["whitespace"])
    lines: list[str] = []
    for segment in diff.segments:
        if segment.op == EQUAL or segment.ignored:
            continue
        if segment.op in (DELETE, REPLACE):
            lines += [f"- {line}" for line in diff.a_lines[segment.a_start : segment.a_end]]
        if segment.op in (INSERT, REPLACE):
            lines += [f"+ {line}" for line in diff.b_lines[segment.b_start : segment.b_end]]
        if len(lines) > MAX_DIFF_LINES:
            lines = [*lines[:MAX_DIFF_LINES], f"... ({diff.stats['changes']} changes in all)"]
            break
    return Comparison(False, [label for _, label in _IGNORED_NAMES], lines, diff.stats)


def texts_differ(before: str, after: str) -> bool:
    """Whether a pass changed the IR, by the same measure."""
    return before.strip() != after.strip() and bool(
        diff_texts(before, after, IGNORING, names=True).changes)
