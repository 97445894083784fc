"""Aligning two compilations pass by pass (pure: no database, no web).

Two compilations of one kernel (autotune configs, Triton versions, targets) run mostly the same
passes, with some missing on one side or repeated a different number of times. Pairing them by
index goes wrong at the first extra pass, so the two pass sequences are aligned like two texts
in a diff: the alignment keeps as many pairs as a longest common subsequence has.

Two steps can pair when they dump at the same moment (`when`: before/after) and name the same
pass: by its argument (`inline`, `tritongpu-pipeline`...) when both have one, since class names
change across versions (`Inliner` became `InlinerPass`) while arguments do not; by the pass name
otherwise. Among the alignments with the most pairs, the one with the most identical pairs (same
stored text) wins, so a pass repeated on both sides pairs with its twin rather than a neighbour.

A pass both sides ran can still be left out of the alignment when the two versions run it at
different places relative to the others (Triton 3.8 checks two-CTA matmuls after allocating tensor
memory, 3.9 right after AccelerateMatmul): pairing it would cross other pairs. `moves` pairs such
leftovers afterwards, occurrence by occurrence in order, so that a pass is called one-side-only only
where the other side ran it fewer times.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Effect", "Move", "Pair", "PassStep", "align", "effects", "first_divergence", "first_effect_divergence",
           "fold", "moves", "pairable"]


@dataclass(frozen=True)
class PassStep:
    """One snapshot of a compilation, as alignment sees it."""

    pass_arg: str | None
    pass_name: str
    when: str
    blob: str


@dataclass(frozen=True)
class Pair:
    """An aligned row: indexes into the two step lists; None where one side has no such pass."""

    a: int | None
    b: int | None
    identical: bool  # both sides present and holding the same stored text


def pairable(x: PassStep, y: PassStep) -> bool:
    if x.when != y.when:
        return False
    if x.pass_arg and y.pass_arg:
        return x.pass_arg == y.pass_arg
    return x.pass_name == y.pass_name


def _twins(x: PassStep, y: PassStep) -> bool:
    return x.blob == y.blob and pairable(x, y)


def align(a: Sequence[PassStep], b: Sequence[PassStep]) -> list[Pair]:
    """The rows of a maximal alignment of `a` and `b`, in order; one-side-only steps of a gap come
    A's first, then B's (as a diff lists deletions before insertions).

    A common prefix and suffix of identical twins pair off at once (any best alignment can be made
    to include them: swapping one in never loses a pair or an identical one); the middle is a dynamic programme over (pairs, identical pairs), O(len(a) * len(b)).
    """
    n, m = len(a), len(b)
    head = 0
    while head < n and head < m and _twins(a[head], b[head]):
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and _twins(a[n - 1 - tail], b[m - 1 - tail]):
        tail += 1
    middle = _align_middle(a, b, head, n - tail, head, m - tail)
    rows = [Pair(i, i, True) for i in range(head)]
    rows += middle
    rows += [Pair(n - tail + k, m - tail + k, True) for k in range(tail)]
    return rows


def _align_middle(
    a: Sequence[PassStep], b: Sequence[PassStep], a0: int, a1: int, b0: int, b1: int
) -> list[Pair]:
    rows_a, rows_b = a1 - a0, b1 - b0
    if not rows_a or not rows_b:
        return [Pair(i, None, False) for i in range(a0, a1)] + [Pair(None, j, False) for j in range(b0, b1)]
    # A pair is worth more than any number of identical bonuses, so the pair count stays maximal.
    unit = min(rows_a, rows_b) + 1
    # score[i][j]: the best alignment of a[a0+i:a1] with b[b0+j:b1], filled from the ends
    score = [[0] * (rows_b + 1) for _ in range(rows_a + 1)]
    for i in range(rows_a - 1, -1, -1):
        x = a[a0 + i]
        here, below = score[i], score[i + 1]
        for j in range(rows_b - 1, -1, -1):
            best = max(below[j], here[j + 1])
            y = b[b0 + j]
            if pairable(x, y):
                matched = below[j + 1] + unit + (1 if x.blob == y.blob else 0)
                best = max(best, matched)
            here[j] = best
    rows: list[Pair] = []
    pending_a: list[int] = []
    pending_b: list[int] = []
    i = j = 0
    while i < rows_a and j < rows_b:
        x, y = a[a0 + i], b[b0 + j]
        if pairable(x, y) and score[i][j] == score[i + 1][j + 1] + unit + (1 if x.blob == y.blob else 0):
            rows += [Pair(k, None, False) for k in pending_a] + [Pair(None, k, False) for k in pending_b]
            pending_a, pending_b = [], []
            rows.append(Pair(a0 + i, b0 + j, x.blob == y.blob))
            i += 1
            j += 1
        elif score[i + 1][j] >= score[i][j + 1]:
            pending_a.append(a0 + i)
            i += 1
        else:
            pending_b.append(b0 + j)
            j += 1
    pending_a += range(a0 + i, a1)
    pending_b += range(b0 + j, b1)
    rows += [Pair(k, None, False) for k in pending_a] + [Pair(None, k, False) for k in pending_b]
    return rows


@dataclass(frozen=True)
class Move:
    """A pass both sides ran at different places: its two one-sided rows of the alignment
    (`a_row`, `b_row`) and its indexes into the two step lists (`a`, `b`)."""

    a_row: int
    b_row: int
    a: int
    b: int
    identical: bool  # the same stored text on both sides


def moves(a: Sequence[PassStep], b: Sequence[PassStep], pairs: Sequence[Pair]) -> list[Move]:
    """The one-sided rows of `pairs` (from `align(a, b)`) that pair across the alignment: each A-only
    step, in order, with the first B-only step not yet taken that it could pair with, so the k-th
    leftover Canonicalizer of A goes with the k-th leftover one of B. Afterwards no A-only step is
    pairable with a B-only one; ordered by A's rows."""
    only_b = [(k, pair.b) for k, pair in enumerate(pairs) if pair.a is None and pair.b is not None]
    taken = [False] * len(only_b)
    found: list[Move] = []
    for k, pair in enumerate(pairs):
        if pair.a is None or pair.b is not None:
            continue
        x = a[pair.a]
        for t, (row, j) in enumerate(only_b):
            if not taken[t] and pairable(x, b[j]):
                taken[t] = True
                found.append(Move(k, row, pair.a, j, x.blob == b[j].blob))
                break
    return found


def first_divergence(pairs: Sequence[Pair]) -> int | None:
    """The first row whose two sides differ (a one-side-only pass counts), or None."""
    return next((k for k, pair in enumerate(pairs) if not pair.identical), None)


@dataclass(frozen=True)
class Effect:
    """What one pass did to the IR on one side: whether its output is another text than its input,
    and how each op group's count moved (non-zero moves only, sorted)."""

    changed: bool
    ops: tuple[tuple[str, int], ...]


def effects(steps: Sequence[PassStep], ops: Sequence[Mapping[str, int]]) -> list[Effect | None]:
    """Each snapshot's pass's effect: an `after` dump against the snapshot before it, a `before`
    dump's next snapshot against it; None where that neighbour is missing (the first `after` dump,
    the last `before` one). `ops` are the snapshots' op-group counts."""
    found: list[Effect | None] = []
    for i, step in enumerate(steps):
        before, after = (i - 1, i) if step.when == "after" else (i, i + 1)
        if before < 0 or after >= len(steps):
            found.append(None)
            continue
        moves = {key: ops[after].get(key, 0) - ops[before].get(key, 0) for key in set(ops[before]) | set(ops[after])}
        found.append(Effect(steps[before].blob != steps[after].blob,
                            tuple(sorted((key, move) for key, move in moves.items() if move))))
    return found


def first_effect_divergence(
    pairs: Sequence[Pair], a: Sequence[Effect | None], b: Sequence[Effect | None], moved: Collection[int] = ()
) -> tuple[int, str] | None:
    """The first row whose pass did something different on the two sides, and how: "only_a" or
    "only_b" (one side's pass changed the IR, the other's left it as it was), "ops" (both changed
    it, but op-group counts moved differently), "only_in_a" / "only_in_b" (a pass that changed the
    IR on the one side that ran it), "moved" (a pass both ran, at different places, that changed
    the IR here; `moved` are such rows, from `moves`). Unlike first_divergence, texts that already
    differ (another block size, a constexpr) do not count while each pass does the same to both.
    None: none found.
    """
    for k, pair in enumerate(pairs):
        if pair.a is None or pair.b is None:
            effect = a[pair.a] if pair.a is not None else b[pair.b]  # type: ignore[index]
            if effect is not None and effect.changed:
                return k, "moved" if k in moved else "only_in_a" if pair.a is not None else "only_in_b"
            continue
        x, y = a[pair.a], b[pair.b]
        if x is None or y is None:
            continue
        if x.changed != y.changed:
            return k, "only_a" if x.changed else "only_b"
        if x.changed and x.ops != y.ops:
            return k, "ops"
    return None


def fold(differs: Sequence[bool], context: int) -> list[tuple[str, int, int]]:
    """Rows to show and rows to fold: ("rows" | "fold", start, end) pieces covering every row.

    Runs of rows that do not differ fold away, but for `context` rows next to each differing row
    (context < 0: nothing folds). A fold of a single row is not worth its own line, so it shows.
    """
    total = len(differs)
    if context < 0 or total == 0:
        return [("rows", 0, total)] if total else []
    shown = [False] * total
    for k, flag in enumerate(differs):
        if flag:
            for t in range(max(0, k - context), min(total, k + context + 1)):
                shown[t] = True
    pieces: list[tuple[str, int, int]] = []
    k = 0
    while k < total:
        end = k
        while end < total and shown[end] == shown[k]:
            end += 1
        kind = "rows" if shown[k] or end - k == 1 else "fold"
        if pieces and pieces[-1][0] == kind == "rows":
            pieces[-1] = ("rows", pieces[-1][1], end)
        else:
            pieces.append((kind, k, end))
        k = end
    return pieces
