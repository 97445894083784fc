"""Which dump each pass of a compilation starts from and ends at, and which binding adds it. Pure.

The backend's stages, run dry on a recording pass manager (app/replay/worker.py), list the passes that
Triton version adds, each with the binding that adds it and the pipeline text that binding builds
(`any(tritongpu-F32DotTC{emu-tf32=true})`, `any(llvm.func(canonicalize-llvm-ir))`). A Triton 3.4+
banner prints the same text (`tritongpu-F32DotTC{emu-tf32=true} ('builtin.module' operation)`); older
banners print the pass's argument only (`Inliner (inline)`), matched by that argument.

The two lists are aligned as sequences (longest common subsequence): a dump the backend added no pass
for ran inside the pass before it (the inliner's canonicalize on each function, a lowering's nested
`reconcile-unrealized-casts`), or per function of a function-anchored pass. A pass's result is the
next dump of a pass the backend added: the dumps in between belong to it, and so do the passes the
backend added between the two that printed no dump (replayed with it).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

_SPACES = re.compile(r"\s+")
_ANCHORED = re.compile(r"^([\w.]+)\((.*)\)$", re.DOTALL)
MODULE = "builtin.module"


@dataclass(frozen=True)
class Dump:
    """What replay needs of one stored snapshot."""

    index: int
    kind: str  # "mlir" | "internal" | "llvm"
    when: str  # "before" | "after"
    pass_name: str
    pass_arg: str | None
    pass_options: str | None
    scope: str | None  # "builtin.module", "tt.func @kernel", ...
    failed: bool = False


@dataclass
class Step:
    """One dump's pass: the binding that adds it (plan index), or why none does."""

    dump: Dump
    call: int | None = None  # index into the plan's passes
    after: int | None = None  # the dump it is compared with
    reason: str | None = None  # why it is not replayed on its own
    nested_in: int | None = None  # the dump of the pass it ran inside
    undumped: list[int] = field(default_factory=list)  # planned passes after it that printed no dump
    inside: list[int] = field(default_factory=list)  # dumps printed inside this pass


_OPTION = re.compile(r"([\w-]+)=([^\s{}]+)")


def banner_options(dumps: list[Dump]) -> dict:
    """What the banners' pass options say about the compile (Triton >= 3.4): `num-warps=8` as
    {"num_warps": 8}, the first value of each name. A log without its cache still carries them; the
    worker keeps those that name a field of the backend's options."""
    found: dict = {}
    for dump in dumps:
        for key, value in _OPTION.findall(dump.pass_options or ""):
            if "=" in value:  # a nested pipeline's own options (`default-pipeline=...`)
                continue
            name = key.replace("-", "_")
            found.setdefault(name, True if value == "true" else False if value == "false"
                             else int(value) if value.lstrip("-").isdigit() else value)
    return found


def pass_text(arg: str | None, options: str | None) -> str:
    """A pass's textual form, whitespace normalised: `canonicalize{a=1 b=2}`."""
    text = (arg or "") + (options or "")
    text = _SPACES.sub(" ", text).replace(" }", "}").replace("{ ", "{")
    return text


def anchor_op(scope: str | None) -> str:
    """The op a banner's pass is anchored on: `tt.func` for `tt.func @kernel`."""
    return (scope or MODULE).split(" ", 1)[0]


def split_pipeline(pipeline: str) -> tuple[str, str] | None:
    """`any(llvm.func(canonicalize-llvm-ir))` -> ("llvm.func", "canonicalize-llvm-ir"); `any(cse)` ->
    ("builtin.module", "cse"). None for a binding that adds several passes (a comma at top level)."""
    match = _ANCHORED.match(pipeline.strip())
    if not match:
        return None
    inner = match.group(2)
    nested = _ANCHORED.match(inner)
    if nested and nested.group(1) not in ("any",) and "{" not in nested.group(1):
        anchor, inner = nested.group(1), nested.group(2)
    else:
        anchor = MODULE
    if _top_level_comma(inner):
        return None
    return anchor, pass_text(inner, None)


def _top_level_comma(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "({"
        depth -= char in ")}"
        if char == "," and depth == 0:
            return True
    return False


def pass_arg_of(pipeline_text: str) -> str:
    return pipeline_text.split("{", 1)[0]


def call_key(call: dict, by_arg: bool) -> tuple[str, str] | None:
    """What a planned pass prints in a banner: (anchor op, pass text), or the argument only."""
    if call.get("pipeline"):
        split = split_pipeline(call["pipeline"])
        if split is None:
            return None
        return (split[0], pass_arg_of(split[1]) if by_arg else split[1])
    if call.get("pass_arg"):  # an older Triton: the argument its banner printed (worker.py)
        return (call.get("anchor") or MODULE, call["pass_arg"])
    return None


def dump_key(dump: Dump, by_arg: bool) -> tuple[str, str]:
    arg = dump.pass_arg or dump.pass_name
    return (anchor_op(dump.scope), arg if by_arg else pass_text(arg, dump.pass_options))


def _lcs(left: list, right: list) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence (None never matches)."""
    rows, cols = len(left), len(right)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if left[i] is not None and left[i] == right[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < rows and j < cols:
        if left[i] is not None and left[i] == right[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def plan_steps(dumps: list[Dump], calls: list[dict]) -> list[Step]:
    """One step per MLIR "before" dump (and the failed "after" one), in order."""
    mlir = [d for d in dumps if d.kind == "mlir"]
    befores = [d for d in mlir if d.when == "before"]
    by_arg = not any(call.get("pipeline") for call in calls)
    pairs = _lcs([dump_key(d, by_arg) for d in befores], [call_key(c, by_arg) for c in calls])
    steps = [Step(d) for d in befores]
    for i, j in pairs:
        steps[i].call = j
    matched = [i for i, _ in pairs]
    # Passes the backend added between two dumped ones printed no dump (a filtered MLIR_ENABLE_DUMP
    # skips function-anchored passes): they ran before the next dump, so they run with the pass before.
    for (i, j), (_, next_j) in itertools.pairwise(pairs):
        steps[i].undumped = list(range(j + 1, next_j))
    failed = next((d for d in mlir if d.when == "after" and d.failed), None)
    for position, step in enumerate(steps):
        if step.call is not None:
            following = next((steps[k].dump.index for k in matched if k > position), None)
            step.after = following if following is not None else (failed.index if failed else None)
            if step.after is None:
                step.reason = "the compilation's last dump: no dump after this pass to compare with"
            continue
        owner = next((k for k in reversed(matched) if k < position), None)
        if owner is None:
            step.reason = f"no binding: the backend's stages add no pass printed as {dump_key(step.dump, by_arg)[1]!r}"
            continue
        owner_step = steps[owner]
        step.nested_in = owner_step.dump.index
        owner_step.inside.append(step.dump.index)
        same_pass = dump_key(owner_step.dump, by_arg)[1] == dump_key(step.dump, by_arg)[1]
        step.reason = (
            f"{'another function of' if same_pass else 'ran inside'} {owner_step.dump.pass_name} "
            f"(/s/{owner_step.dump.index}){'' if same_pass else ', which adds it itself'}: no binding adds it alone; "
            f"replaying /s/{owner_step.dump.index} covers it"
        )
    return steps
