"""Python lines for an MLIR text printed without locations, from an earlier text of the same
compilation that has them.

Per-pass folders often print every pass without `loc(...)` (a split of print-after-all, or passes
re-printed in the generic op form), while one file holds the module before the first pass with its
locations (`*_0_with_loc.mlir`). The ops of the two texts are lined up by name in order, with the
alignment the diffs use (app/diff/align.py: anchors on ops unique to both sides, then the rarest
shared op), whether an op is printed in the custom form (`cute.get_iter(%a)`) or the generic one
(`"cute.get_iter"(%0)`): each lined-up op takes its partner's location. An op a pass made anew, or
renamed (a lowering to another dialect), lines up with nothing and stays without one.
"""

from __future__ import annotations

import re

from app.diff.align import match_blocks
from parsers.locations.loc import LineLocs, resolve

# An op's name where a line starts one: `%a, %b = op`, `%0:2 = "op"(`, `op ...` (dialect-qualified).
_OP = re.compile(r'^\s*(?:%[^=\n"]*=\s*)?"?([A-Za-z_][\w$]*\.[\w$.]+)"?(?:[\s(<{:\[]|$)')
_NO_LOCS = LineLocs([], None, None)


def _op_lines(lines: list[str]) -> tuple[list[int], list[str]]:
    """The 0-based lines that hold an op, and the op names."""
    numbers, names = [], []
    for number, line in enumerate(lines):
        if line.startswith(("#", "!")):
            continue  # alias definitions
        match = _OP.match(line)
        if match is not None:
            numbers.append(number)
            names.append(match.group(1))
    return numbers, names


def transfer(donor: str, text: str) -> list[LineLocs]:
    """One LineLocs per line of ``text.split("\\n")``: the location of the donor's op lined up with
    each op line of ``text``, empty where none is."""
    return transfer_from(donor.split("\n"), resolve(donor, "mlir"), text)


def transfer_from(donor_lines: list[str], donor_locs: list[LineLocs], text: str) -> list[LineLocs]:
    """`transfer`, from a donor's lines and their (resolved or passed on) locations."""
    lines = text.split("\n")
    found = [_NO_LOCS] * len(lines)
    donor_numbers, donor_names = _op_lines(donor_lines)
    numbers, names = _op_lines(lines)
    if not donor_numbers or not numbers:
        return found
    keys: dict[str, int] = {}
    a = [keys.setdefault(name, len(keys)) for name in donor_names]
    b = [keys.setdefault(name, len(keys)) for name in names]
    paired_a, paired_b = set(), set()
    for i, j, size in match_blocks(a, b, effort=8):
        paired_a.update(range(i, i + size))
        paired_b.update(range(j, j + size))
    # ops the alignment left out (two print forms order a few ops differently): paired by name where
    # the name is left once on each side
    left_a: dict[int, list[int]] = {}
    left_b: dict[int, list[int]] = {}
    for i, key in enumerate(a):
        if i not in paired_a:
            left_a.setdefault(key, []).append(i)
    for j, key in enumerate(b):
        if j not in paired_b:
            left_b.setdefault(key, []).append(j)
    pairs = [(left_a[key][0], js[0]) for key, js in left_b.items() if len(js) == 1 and len(left_a.get(key, ())) == 1]
    for i, j in [*zip(sorted(paired_a), sorted(paired_b), strict=True), *pairs]:
        line = donor_numbers[i]
        if line < len(donor_locs):
            found[numbers[j]] = donor_locs[line]
    return found
