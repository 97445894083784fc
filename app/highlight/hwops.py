"""Hardware-feature op groups: which IR lines use TMA, TDM, MMA, barriers, async copies...

Membership is by op name as printed (FORMATS.md section 6), old dialect names included
(``triton_gpu.``, ``triton_nvidia_gpu.``, ``amdgpu.``, ``nvgpu.``), plus the NVVM/ROCDL ops
and intrinsics these lower to in the LLVM dialect (``rocdl.mfma.*``, ``nvvm.wgmma.*``,
``llvm.call_intrinsic "llvm.amdgcn.tensor.load.to.lds"``...). Only operation names count, at
the op position of a line (``%x = OP``, ``OP`` first on the line, generic ``"OP"(``), so an
attribute such as ``ttg.warp_specialize.tag = 0`` or a type such as ``!ttg.memdesc<...>``
does not. The one exception: :func:`classify_line` also puts a line that carries a tensor
descriptor (``!tt.tensordesc<...>``, ``!ttng.tensordesc_im2col<...>``) in the descriptor's group,
since those values exist only for it. :func:`count_groups` counts ops, not such lines.

Tensor descriptors are target-neutral in TTIR: ``tt.descriptor_*`` runs on TMA on NVIDIA sm90+,
on TDM on AMD gfx1250, and as plain loads elsewhere. Their group follows the module's own
``ttg.target`` (TTGIR on), else a target the caller knows (the compilation's), else the neutral
"descriptor" group (:func:`descriptor_group`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "GROUPS",
    "GROUPS_BY_KEY",
    "Group",
    "classify_line",
    "classify_lines",
    "classify_ptx_line",
    "count_groups",
    "count_ptx",
    "descriptor_group",
    "retarget",
    "text_target",
]


@dataclass(frozen=True)
class Group:
    key: str
    label: str
    description: str
    css_class: str


GROUPS: list[Group] = [
    Group(
        "descriptor",
        "Tensor descriptor",
        "Block copies through tensor descriptors (tt.make_tensor_descriptor, tt.descriptor_load, "
        "store, gather, scatter) in IR that names no target yet: NVIDIA sm90+ runs them on TMA, AMD "
        "gfx1250 on TDM, other targets as ordinary loads and stores.",
        "hw-descriptor",
    ),
    Group(
        "tma",
        "TMA",
        "Tensor Memory Accelerator (NVIDIA sm90+): tensor descriptors and bulk asynchronous copies "
        "between global and shared memory (tt.descriptor_* on a cuda target, ttng.async_tma_*, "
        "ttng.tensormap_*, PTX cp.async.bulk.tensor).",
        "hw-tma",
    ),
    Group(
        "tdm",
        "TDM",
        "Tensor Data Mover (AMD gfx1250): descriptor-driven asynchronous tensor copies between global "
        "memory and LDS (tt.descriptor_* on a gfx1250 target, amdg.async_tdm_*, "
        "amdg.update_tensor_descriptor, amdg.tdm_prefetch).",
        "hw-tdm",
    ),
    Group(
        "mma",
        "MMA",
        "Matrix multiply on tensor cores: tt.dot, Hopper wgmma (ttng.warp_group_dot, nvg.wgmma), "
        "Blackwell tcgen05 (ttng.tc_gen5_mma), AMD MFMA/WMMA.",
        "hw-mma",
    ),
    Group(
        "barrier",
        "Barrier",
        "Synchronisation: mbarriers (ttng.init_barrier, wait_barrier, arrive_barrier, barrier_expect), "
        "fences (ttng.fence_async_shared) and CTA barriers (ttg.barrier).",
        "hw-barrier",
    ),
    Group(
        "async",
        "Async copy",
        "Asynchronous global-to-shared copies without TMA: cp.async on NVIDIA "
        "(ttg.async_copy_global_to_local, async_commit_group, async_wait), buffer_load_to_local on AMD.",
        "hw-async",
    ),
    Group(
        "tmem",
        "Tensor memory",
        "Blackwell tensor memory (TMEM), the accumulator storage of tcgen05 MMAs (ttng.tmem_alloc, "
        "tmem_load, tmem_store, tmem_copy, tmem_subslice).",
        "hw-tmem",
    ),
    Group(
        "warpspec",
        "Warp specialization",
        "Warp specialization: ttg.warp_specialize splits the kernel into a default region and "
        "partitions running on their own warps (ttg.warp_yield, ttg.warp_return).",
        "hw-warpspec",
    ),
    Group(
        "shared",
        "Shared memory",
        "Shared-memory buffers and views: ttg.local_alloc, local_load, local_store, local_dealloc and "
        "ttg.memdesc_* (index, subslice, trans, reshape).",
        "hw-shared",
    ),
    Group(
        "layout",
        "Layout conversion",
        "ttg.convert_layout: moves a tensor between register layouts, often through shared memory; "
        "the op remove-layout-conversions tries to eliminate.",
        "hw-layout",
    ),
    Group(
        "copy",
        "CuTe copy",
        "CuTe DSL's cute.copy: a copy through a copy atom, whose kind (TMA, cp.async, ldmatrix, a "
        "universal register copy) its atom's type names.",
        "hw-copy",
    ),
]

GROUPS_BY_KEY: dict[str, Group] = {group.key: group for group in GROUPS}

_TT = r"tt"
_TTG = r"(?:ttg|triton_gpu)"
_TTNG = r"(?:ttng|triton_nvidia_gpu)"
_AMDG = r"(?:amdg|amdgpu)"
_NVG = r"(?:nvg|nvgpu)"
_INTRINSIC = r'llvm\.call_intrinsic[ \t]+"llvm\.'

# op-name patterns per group; each must match from the start of the op name
_OP_PATTERNS: dict[str, list[str]] = {
    # target-neutral: counted as the text's target's engine (see descriptor_group)
    "descriptor": [
        rf"{_TT}\.make_tensor_descriptor",
        rf"{_TT}\.descriptor_\w+",
        rf"{_TT}\.experimental_\w*descriptor\w*",
    ],
    "tma": [
        rf"{_TTNG}\.async_tma_\w+",
        rf"{_TTNG}\.tensormap_\w+",
        rf"{_TTNG}\.reinterpret_tensor_descriptor",
        r"nvvm\.cp\.async\.bulk\.[\w.]+",
        r"nvvm\.prefetch\.tensormap",
        _INTRINSIC + r"nvvm\.cp\.async\.bulk\.[\w.]+",
        r"cute_nvgpu\.(?:atom\.|arch\.)?\w*tma\w*",  # CuTe DSL: make_exec_tma, tma_partition, prefetch_tma_desc
    ],
    "tdm": [
        rf"{_AMDG}\.async_tdm_\w+",
        rf"{_AMDG}\.update_tensor_descriptor",
        rf"{_AMDG}\.tdm_prefetch",
        r"rocdl\.s\.wait\.tensorcnt",
        r"rocdl\.tensor\.[\w.]+",
        _INTRINSIC + r"amdgcn\.tensor\.[\w.]+",
    ],
    "mma": [
        rf"{_TT}\.dot(?:_scaled)?",
        rf"{_TTNG}\.warp_group_dot\w*",
        rf"{_TTNG}\.dot_async",
        rf"{_TTNG}\.dot_wait",
        rf"{_TTNG}\.tc_gen5_\w+",  # mma, mma_scaled, commit
        rf"{_NVG}\.wgmma\w*",
        r"nvvm\.wgmma\.[\w.]+",
        r"nvvm\.mma\.[\w.]+",
        r"nvvm\.tcgen05\.mma[\w.]*",
        r"rocdl\.(?:mfma|smfmac|wmma)\.[\w.]+",
        _INTRINSIC + r"amdgcn\.(?:mfma|smfmac|wmma|swmmac)\.[\w.]+",
        _INTRINSIC + r"nvvm\.(?:wgmma|mma)\.[\w.]+",
        r"cute\.gemm",  # CuTe DSL: an MMA atom's call
        r"(?:cuda_tile\.)?mma[fi]",  # cuTile's TileIR (unprefixed inside cuda_tile.module)
    ],
    "barrier": [
        rf"{_TTNG}\.\w*barrier\w*",
        rf"{_TTNG}\.fence\w*",
        rf"{_TTG}\.barrier",
        rf"{_TTG}\.local_barrier",
        r"gpu\.barrier",
        r"nvvm\.(?:barrier|mbarrier|fence|bar)[\w.]*",
        r"rocdl\.s\.barrier[\w.]*",
        _INTRINSIC + r"nvvm\.(?:mbarrier|barrier|fence)[\w.]*",
    ],
    "async": [
        rf"{_TTG}\.async_copy_global_to_local",
        rf"{_TTG}\.async_commit_group",
        rf"{_TTG}\.async_wait",
        rf"{_AMDG}\.buffer_load_to_local",
        rf"{_AMDG}\.async_wait",
        r"nvvm\.cp\.async\.(?!bulk)[\w.]+",
    ],
    "tmem": [
        rf"{_TTNG}\.tmem_\w+",
        r"nvvm\.tcgen05\.(?!mma)[\w.]+",
        r"cute_nvgpu\.arch\.sm100\.\w*tmem\w*",  # CuTe DSL: alloc_tmem, dealloc_tmem, retrieve_tmem_ptr
        r"cute_nvgpu\.atom\.make_tmem_copy",
    ],
    "warpspec": [
        rf"{_TTG}\.warp_specialize\w*",
        rf"{_TTG}\.warp_yield",
        rf"{_TTG}\.warp_return",
    ],
    "shared": [
        rf"{_TTG}\.local_(?!barrier\b)\w+",
        rf"{_TTG}\.memdesc_\w+",
        r"nvvm\.(?:ldmatrix|stmatrix)\b",
    ],
    "layout": [
        rf"{_TTG}\.convert_layout",
    ],
    "copy": [
        r"cute\.copy",
    ],
}

# The op position: first on the line after optional results (`%a, %b:2 = `), maybe quoted.
# The lookaheads reject most lines after a character or two (`arith.`, `scf.`, `llvm.`), which
# is what keeps count_groups at a few milliseconds for 10,000 lines.
_OP_START = (
    r'[ \t]*(?=[%"a-z])(?:%[^\n=]*=[ \t]*)?"?'
    r"(?=tt|triton_|amdg|nvg|nvvm|rocdl|gpu\.|llvm\.call_intrinsic|cute|cuda_tile\.|mma[fi])"
)
_OP_END = r"(?![\w$])(?!\.[\w$])"  # `tt.dot` but not `tt.dot_scaled` nor `tt.dot.x`


def _alternatives(patterns: list[str]) -> str:
    return "|".join(f"(?:{pattern})" for pattern in patterns)


# every group in one alternation, a named group per key
_OPS = (
    "(?:"
    + "|".join(f"(?P<{key}>{_alternatives(patterns)}){_OP_END}" for key, patterns in _OP_PATTERNS.items())
    + ")"
)
_LINE_OP = re.compile(_OP_START + _OPS)  # .match at the start of a line
_NEXT_LINE_OP = re.compile(r"\n" + _OP_START + _OPS)  # .finditer over a whole text
_DESCRIPTOR_TYPE = re.compile(rf"!{_TT}\.tensordesc\b")
_NVIDIA_DESCRIPTOR_TYPE = re.compile(rf"!{_TTNG}\.tensordesc\w*")  # im2col: TMA only
_TARGET = re.compile(rf'"?{_TTG}\.target"?[ \t]*=[ \t]*"([^"\n]*)"')
_CUDA = re.compile(r"cuda:(\d+)")
_TDM_TARGET = re.compile(r"hip:gfx125\d")


@lru_cache(maxsize=4096)
def op_group(token: str) -> str | None:
    """The group of one op name (for llvm.call_intrinsic, its `llvm.call_intrinsic "llvm.x"` form)."""
    match = _LINE_OP.match(token)
    return match.lastgroup if match is not None else None


def text_target(text: str) -> str | None:
    """The target a TTGIR or later module names (``ttg.target = "cuda:90"``), or None (TTIR)."""
    match = _TARGET.search(text)
    return match.group(1) if match else None


def descriptor_group(target: str | None) -> str:
    """Which group tensor-descriptor ops belong to on ``target``: TMA on NVIDIA sm90+, TDM on AMD
    gfx1250, else the neutral "descriptor" (an unknown target, or one that lowers them to loads)."""
    if not target:
        return "descriptor"
    cuda = _CUDA.match(target)
    if cuda is not None:
        return "tma" if int(cuda.group(1)) >= 90 else "descriptor"
    return "tdm" if _TDM_TARGET.match(target) else "descriptor"


def retarget(counts: dict[str, int], target: str | None) -> dict[str, int]:
    """``counts`` with the neutral descriptor ops moved to ``target``'s group: a TTIR snapshot names
    no target, but its compilation does."""
    key = descriptor_group(target)
    if key == "descriptor" or not counts.get("descriptor"):
        return dict(counts)
    moved = dict(counts)
    moved[key] = moved.get(key, 0) + moved["descriptor"]
    moved["descriptor"] = 0
    return moved
_ORDER = {group.key: index for index, group in enumerate(GROUPS)}


# -- PTX: inline assembly in LLVM-dialect (llvm.inline_asm) and LLVM IR (asm "..."), and .ptx files.
# Hopper and Blackwell lower much of their work to PTX strings, not to NVVM ops; without these
# the per-pass columns would drop to 0 at the LLVM lowering. By PTX mnemonic, first match wins.
_PTX_PATTERNS: dict[str, list[str]] = {
    "tma": [
        r"cp\.async\.bulk[\w.:]*",  # .tensor copies, and the bulk groups that track them
        r"cp\.reduce\.async\.bulk[\w.:]*",
        r"tensormap\.[\w.:]+",
        r"prefetch(?:\.global)?\.tensormap[\w.:]*",
        r"fence\.proxy\.tensormap[\w.:]*",
    ],
    "mma": [
        r"wgmma\.[\w.:]+",
        r"mma\.sync[\w.:]*",
        r"tcgen05\.(?:mma|commit)[\w.:]*",  # as ttng.tc_gen5_mma / tc_gen5_commit
    ],
    "barrier": [
        r"mbarrier\.[\w.:]+",
        r"barrier\.[\w.:]+",
        r"bar\.[\w.:]+",
        r"fence\.[\w.:]+",
        r"membar\.[\w.:]+",
    ],
    "async": [
        r"cp\.async\.(?:ca|cg|commit_group|wait_group|wait_all|mbarrier)[\w.:]*",
    ],
    "tmem": [
        r"tcgen05\.[\w.:]+",  # alloc, dealloc, ld, st, wait, cp, shift, relinquish_alloc_permit
    ],
    "shared": [
        r"ldmatrix[\w.:]*",
        r"stmatrix[\w.:]*",
    ],
}
# A mnemonic starts an instruction: at the start, after `;`, `{`, `}`, white space or an escaped
# newline/tab (\0A, \09 in MLIR and LLVM strings), maybe after a predicate (`@$5 `, `@!p `).
_PTX_INSN = re.compile(
    r"(?:^|(?<=[\s;{}])|(?<=\\0A)|(?<=\\09))(?:@!?[$%]?\w+(?:[ \t]|\\09)+)?(?:"
    + "|".join(f"(?P<{key}>{_alternatives(patterns)})" for key, patterns in _PTX_PATTERNS.items())
    + r")(?![\w.])",
    re.MULTILINE,
)
# the assembly string of an inline-asm op (LLVM dialect) or call (LLVM IR): the first string after
# the keyword. Two patterns, each starting with a literal, which re finds fast in a long text.
_ASM_STRINGS = (
    re.compile(r'llvm\.inline_asm\b[^"\n]*"((?:[^"\\\n]|\\.)*)"'),
    re.compile(r'asm[ \t]+(?:(?:sideeffect|alignstack|inteldialect|unwind)[ \t]+)*"((?:[^"\\\n]|\\.)*)"'),
)


def _asm_strings(text: str):
    for pattern in _ASM_STRINGS:
        for match in pattern.finditer(text):
            before = text[match.start() - 1] if match.start() else " "
            if pattern is _ASM_STRINGS[0] or not (before.isalnum() or before in "_."):
                yield match.group(1)


def _count_ptx(text: str, counts: dict[str, int]) -> None:
    for match in _PTX_INSN.finditer(text):
        counts[match.lastgroup] += 1


def _inline_asm_counts(text: str, counts: dict[str, int]) -> None:
    if "asm" not in text:
        return
    for asm in _asm_strings(text):
        _count_ptx(asm, counts)


def inline_asm_groups(text: str) -> set[str]:
    """The groups of the PTX instructions inside a module's inline assembly."""
    counts = dict.fromkeys(_ORDER, 0)
    _inline_asm_counts(text, counts)
    return {key for key, count in counts.items() if count}


_ASM_STRINGS_ASCII = tuple(re.compile(pattern.pattern.encode("ascii")) for pattern in _ASM_STRINGS)
_INLINE_ASM = b"llvm.inline_asm"  # the first pattern's literal head


def inline_asm_groups_ascii(body: bytes) -> set[str]:
    """`inline_asm_groups` of an ASCII text given as bytes (the caller checks `body.isascii()`: on
    ASCII the bytes patterns match exactly where the str ones do), without decoding the whole text;
    each distinct assembly string is classified once (a module repeats the same few many times).
    The first pattern is tried only where `find` sees its literal head (3x faster than the regex
    engine's own search for it), in order and without overlaps, as `findall` would."""
    strings: set[bytes] = set()
    first, second = _ASM_STRINGS_ASCII
    found = body.find(_INLINE_ASM)
    while found >= 0:
        match = first.match(body, found)
        if match is not None:
            strings.add(match.group(1))
            found = body.find(_INLINE_ASM, match.end())
        else:
            found = body.find(_INLINE_ASM, found + 1)
    for match in second.finditer(body):
        start = match.start()
        before = body[start - 1 : start] if start else b" "
        if not (before.isalnum() or before in (b"_", b".")):
            strings.add(match.group(1))
    counts = dict.fromkeys(_ORDER, 0)
    for asm in strings:
        _count_ptx(asm.decode("ascii"), counts)
    return {key for key, count in counts.items() if count}


def count_ptx(text: str) -> dict[str, int]:
    """How many instructions of each group a PTX file holds: every key of GROUPS, zeros included."""
    counts = dict.fromkeys(_ORDER, 0)
    _count_ptx(text, counts)
    return counts


def classify_ptx_line(line: str) -> list[str]:
    """The group keys of one PTX line (usually one instruction), in GROUPS order."""
    return sorted({match.lastgroup for match in _PTX_INSN.finditer(line)}, key=_ORDER.__getitem__)


def classify_line(line: str, target: str | None = None) -> list[str]:
    """The group keys of one IR line, in GROUPS order: its op's group, plus the descriptor group
    for a line that carries a tensor descriptor value. Usually zero or one key. Descriptor ops
    go to ``target``'s group (:func:`descriptor_group`)."""
    return list(classify_lines(line, 1, target)[0])


def classify_lines(text: str, line_count: int, target: str | None = None) -> list[tuple[str, ...]]:
    """:func:`classify_line` of each of the first ``line_count`` lines of ``text.split("\\n")``, found
    by a few scans of the whole text instead of three searches per line (a 21,000-line module: 33 ms
    down to 18). Every pattern stays within one line, so each match belongs to the line it starts
    on: the result equals classifying each line alone (tests/test_hwops_targets.py)."""
    keys_of: dict[int, set[str]] = {}
    first = _LINE_OP.match(text)
    if first is not None and first.lastgroup:
        keys_of.setdefault(0, set()).add(first.lastgroup)
    for number, match in _numbered(text, _NEXT_LINE_OP.finditer(text), skip=1):  # after its "\n"
        if match.lastgroup:
            keys_of.setdefault(number, set()).add(match.lastgroup)
    if "tensordesc" in text:  # one fast search rules out both descriptor patterns
        for pattern, key in ((_DESCRIPTOR_TYPE, "descriptor"), (_NVIDIA_DESCRIPTOR_TYPE, "tma")):
            for number, _match in _numbered(text, pattern.finditer(text)):
                keys_of.setdefault(number, set()).add(key)
    for number, line_text in _lines_with_asm(text):
        for asm in _asm_strings(line_text):
            keys_of.setdefault(number, set()).update(match.lastgroup for match in _PTX_INSN.finditer(asm))
    empty: tuple[str, ...] = ()
    result = [empty] * line_count
    descriptor = descriptor_group(target)
    for number, keys in keys_of.items():
        if number >= line_count or not keys:
            continue
        if "descriptor" in keys:
            keys.discard("descriptor")
            keys.add(descriptor)
        result[number] = tuple(sorted(keys, key=_ORDER.__getitem__))
    return result


def _numbered(text: str, matches: Iterator[re.Match], skip: int = 0) -> Iterator[tuple[int, re.Match]]:
    """(0-based line number, match) for matches in text order, the line of ``match.start() + skip``."""
    line, last = 0, 0
    for match in matches:
        position = match.start() + skip
        line += text.count("\n", last, position)
        last = position
        yield line, match


def _lines_with_asm(text: str) -> Iterator[tuple[int, str]]:
    """(0-based number, text) of each line holding "asm", in order."""
    line, last = 0, 0
    found = text.find("asm")
    while found >= 0:
        start = text.rfind("\n", 0, found) + 1
        line += text.count("\n", last, start)
        last = start
        end = text.find("\n", found)
        yield line, text[start:] if end < 0 else text[start:end]
        if end < 0:
            return
        found = text.find("asm", end)


def count_groups(text: str, target: str | None = None) -> dict[str, int]:
    """How many ops of each group a module holds: every key of GROUPS, zeros included, PTX
    instructions in inline assembly too. Descriptor ops count for the module's own target
    (``ttg.target``), else for ``target``."""
    counts = dict.fromkeys(_ORDER, 0)
    first = _LINE_OP.match(text)
    if first is not None:
        counts[first.lastgroup] += 1
    for match in _NEXT_LINE_OP.finditer(text):
        counts[match.lastgroup] += 1
    _inline_asm_counts(text, counts)
    if counts["descriptor"]:
        counts = retarget(counts, text_target(text) or target)
    return counts
