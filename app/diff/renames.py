"""The renumbering check: lines aligned only because numbering was ignored must rename consistently
(one name of B per value of A in a function, per alias of A in a module); short renamed-only islands
inside a rewritten region join the change around them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.diff.keys import _ALIAS_NAME, _FUNC_LINE, _LOC_LINE_KEY, _SSA_NAME, _STRING
from app.diff.result import EQUAL, REPLACE, DiffOptions, Segment


class _Renames:
    """A one-to-one mapping of names of A to names of B, built in line order."""

    __slots__ = ("backward", "forward")

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}

    def agree(self, pairs: Iterable[tuple[str, str]]) -> bool:
        """Whether the pairs fit the mapping; if they do, they join it."""
        forward, backward = self.forward, self.backward
        pairs = list(pairs)
        for a_name, b_name in pairs:
            if forward.get(a_name, b_name) != b_name or backward.get(b_name, a_name) != a_name:
                return False
        for a_name, b_name in pairs:
            forward[a_name] = b_name
            backward[b_name] = a_name
        return True

    def agree_scoped(self, a_line: str, b_line: str, a_names: list[str], b_names: list[str]) -> bool:
        """`agree` where a name at a definition (a result, a block or loop argument) starts a new
        binding on both sides: printers reuse names in sibling regions (`%31` in each loop body of a
        numbered dump), so only uses must follow the mapping."""
        a_defs, b_defs = _definitions(a_line), _definitions(b_line)
        if a_defs != b_defs:
            return False
        forward, backward = self.forward, self.backward
        uses = [(a, b) for k, (a, b) in enumerate(zip(a_names, b_names)) if k not in a_defs]
        for a_name, b_name in uses:
            if forward.get(a_name, b_name) != b_name or backward.get(b_name, a_name) != a_name:
                return False
        for k in a_defs:
            a_name, b_name = a_names[k], b_names[k]
            backward.pop(forward.pop(a_name, None), None)  # type: ignore[arg-type]
            forward.pop(backward.pop(b_name, None), None)  # type: ignore[arg-type]
            forward[a_name], backward[b_name] = b_name, a_name
        for a_name, b_name in uses:
            forward[a_name], backward[b_name] = b_name, a_name
        return True


# Results before the first " = " (`%a, %b:2 = `); loop variables and iter_args (`%iv = `, `%acc = `)
# and block or function arguments (`%arg3: f32`) anywhere.
_RESULTS = re.compile(r"\s*(?:%[\w$.-]+(?::\d+)?, )*%[\w$.-]+(?::\d+)? = ")


def _definitions(line: str) -> set[int]:
    """Indexes (among the line's _SSA_NAME matches) of the names the line defines."""
    lead = _RESULTS.match(line)
    lead_end = lead.end() if lead else 0
    return {
        k
        for k, m in enumerate(_SSA_NAME.finditer(line))
        if m.end() <= lead_end or line.startswith((" = ", ": "), m.end())
    }


def _check_renames(
    opcodes: list[tuple[str, int, int, int, int]],
    a_text: list[str],
    b_text: list[str],
    options: DiffOptions,
    renames: dict[str, str] | None = None,
    scoped: bool = False,
) -> list[tuple[str, int, int, int, int]]:
    """Split equal runs where a line aligned only by ignoring numbering breaks the renaming.

    The renames accepted (A name -> B name) are added to `renames`. With `scoped` (value names of
    two print forms, see print_forms.py) definitions rebind names (`_Renames.agree_scoped`).
    """
    renames = {} if renames is None else renames
    values, aliases = _Renames(), _Renames()
    out: list[tuple[str, int, int, int, int]] = []
    for op, a0, a1, b0, b1 in opcodes:
        if op != EQUAL:
            out.append((op, a0, a1, b0, b1))
            continue
        run_start = a0
        bad_start = -1
        for i in range(a0, a1):
            j = b0 + (i - a0)
            line_a, line_b = a_text[i], b_text[j]
            if line_a is _LOC_LINE_KEY:
                good = True
            else:
                if options.ssa and _FUNC_LINE.match(line_a):
                    renames.update(values.forward)
                    values = _Renames()
                good = True
                if line_a != line_b and '"' in line_a:
                    # numbering is dropped inside strings too; strings must not differ at all
                    good = _STRING.findall(line_a) == _STRING.findall(line_b)
                if good and options.ssa:
                    a_values = _SSA_NAME.findall(line_a)
                    b_values = a_values if line_a == line_b else _SSA_NAME.findall(line_b)
                    if len(a_values) != len(b_values):
                        good = False
                    elif scoped:
                        good = values.agree_scoped(line_a, line_b, a_values, b_values)
                    else:
                        good = values.agree(zip(a_values, b_values))
                if good and options.alias and "#" in line_a:
                    a_aliases = _ALIAS_NAME.findall(line_a)
                    b_aliases = a_aliases if line_a == line_b else _ALIAS_NAME.findall(line_b)
                    good = len(a_aliases) == len(b_aliases) and aliases.agree(zip(a_aliases, b_aliases))
            if good and bad_start >= 0:
                out.append((REPLACE, bad_start, i, b0 + bad_start - a0, j))
                run_start, bad_start = i, -1
            elif not good and bad_start < 0:
                if i > run_start:
                    out.append((EQUAL, run_start, i, b0 + run_start - a0, j))
                bad_start = i
        if bad_start >= 0:
            out.append((REPLACE, bad_start, a1, b0 + bad_start - a0, b1))
        elif a1 > run_start:
            out.append((EQUAL, run_start, a1, b0 + run_start - a0, b1))
    renames.update(values.forward)
    renames.update(aliases.forward)
    return out


_ISLAND = 2  # renamed-only lines stranded between larger changes, up to this many, join them


def _absorb_renamed_islands(segments: list[Segment], a_text: list[str], b_text: list[str]) -> list[Segment]:
    """Turn a short run of lines equal only up to renaming, between two larger changes, into a change.

    Inside a rewritten region a line like `%117 = llvm.bitcast %116` matches some renamed line of
    B whose operands were never mapped; left alone, such islands cut one change into many.
    """

    def is_change(segment: Segment) -> bool:
        return segment.op != EQUAL and not segment.ignored

    after_rows = [0] * (len(segments) + 1)  # rows of the change block starting at each segment
    for index in range(len(segments) - 1, -1, -1):
        after_rows[index] = segments[index].rows + after_rows[index + 1] if is_change(segments[index]) else 0
    out: list[Segment] = []
    before_rows = 0  # rows of the change block ending just before the current segment
    for index, segment in enumerate(segments):
        if (
            segment.op == EQUAL
            and segment.rows <= _ISLAND
            and before_rows > segment.rows
            and after_rows[index + 1] > segment.rows
            and all(a_text[segment.a_start + k] != b_text[segment.b_start + k] for k in range(segment.rows))
        ):
            segment = Segment(REPLACE, segment.a_start, segment.a_end, segment.b_start, segment.b_end)
        before_rows = before_rows + segment.rows if is_change(segment) else 0
        last = out[-1] if out else None
        if (
            last is not None
            and last.op == segment.op == REPLACE
            and last.a_end == segment.a_start
            and last.b_end == segment.b_start
        ):
            out[-1] = Segment(REPLACE, last.a_start, segment.a_end, last.b_start, segment.b_end)
        else:
            out.append(segment)
    return out
