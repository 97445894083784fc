"""SASS, the GPU's own instructions as nvdisasm or cuobjdump print a cubin: opcodes and their groups.

An instruction line is ``/*0160*/  @!P0 LDG.E R0, desc[UR4][R6.64] ;``: an address comment, an
optional predicate (``@P0``, ``@!UP3``, ``@PT``), the opcode with its modifiers after dots, then
operands. Only the opcode's base (before the first dot) decides its group, so that modifiers
(``SYNCS.ARRIVE.TRANS64``, ``HGMMA.64x64x16.F32``) never hide an instruction.

The groups use the keys of the IR's hardware-op groups, so counts line up with the passes':

* ``mma``: tensor-core matrix multiplies: HMMA, IMMA, DMMA, BMMA (mma.sync), HGMMA, IGMMA, QGMMA, BGMMA
  (Hopper wgmma) and WARPGROUP (its arrive and wait), UTCMMA, UTCHMMA, UTCIMMA, UTCQMMA, UTCOMMA
  (Blackwell tcgen05.mma);
* ``tma``: UTMALDG, UTMASTG, UTMAREDG, UTMAPF, UTMACCTL, UTMACMDFLUSH (tensor copies), UBLKCP,
  UBLKRED, UBLKPF (bulk copies);
* ``barrier``: BAR, SYNCS (mbarriers), MEMBAR, FENCE, ERRBAR, UTCBAR (tcgen05.commit's arrive);
* ``async``: LDGSTS (cp.async), LDGDEPBAR (its commit group), ARRIVES (cp.async.mbarrier.arrive);
* ``tmem``: LDTM, STTM, UTCCP, UTCSHIFT, UTCATOMSWS (tensor memory: loads, stores, copies, alloc);
* ``shared``: LDS, STS, LDSM, STSM, ATOMS, REDS (shared memory; LDSM/STSM are ldmatrix/stmatrix).

cuobjdump interleaves the encodings as ``/* 0x... */`` comments (one trailing each instruction and
lines of their own); :func:`clean_cuobjdump_line` drops them so both tools' texts read alike.

Pure: no ``app`` import, no subprocess (running the disassembler is ``app/ingest/disassembler.py``'s job).
"""

from __future__ import annotations

import re

__all__ = ["GROUP_OF", "classify_line", "clean_cuobjdump_line", "count_groups", "instruction_opcode"]

GROUP_OF: dict[str, str] = {
    **dict.fromkeys(
        ("HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "WARPGROUP",
         "UTCMMA", "UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA"), "mma"),
    **dict.fromkeys(
        ("UTMALDG", "UTMASTG", "UTMAREDG", "UTMAPF", "UTMACCTL", "UTMACMDFLUSH", "UBLKCP", "UBLKRED", "UBLKPF"),
        "tma"),
    **dict.fromkeys(("BAR", "SYNCS", "MEMBAR", "FENCE", "ERRBAR", "UTCBAR"), "barrier"),
    **dict.fromkeys(("LDGSTS", "LDGDEPBAR", "ARRIVES"), "async"),
    **dict.fromkeys(("LDTM", "STTM", "UTCCP", "UTCSHIFT", "UTCATOMSWS"), "tmem"),
    **dict.fromkeys(("LDS", "STS", "LDSM", "STSM", "ATOMS", "REDS"), "shared"),
}
_KEYS = tuple(dict.fromkeys(GROUP_OF.values()))

# address, optional `{` (dual issue on old GPUs), optional predicate, then the opcode's base
_INSTRUCTION = re.compile(r"[ \t]*/\*[0-9a-fA-F]{4,}\*/[ \t]+(?:\{[ \t]*)?(?:@!?U?P(?:[0-7]|T)[ \t]+)?([A-Z][A-Z0-9_]*)")
_NEXT_INSTRUCTION = re.compile("^" + _INSTRUCTION.pattern, re.MULTILINE)
_ENCODING = re.compile(r"[ \t]*/\* 0x[0-9a-fA-F]{16} \*/[ \t]*$")


def instruction_opcode(line: str) -> str | None:
    """The opcode's base of an instruction line ("LDG" for ``/*0160*/ @!P0 LDG.E R0, ...``), else None."""
    match = _INSTRUCTION.match(line)
    return match.group(1) if match else None


def classify_line(line: str) -> tuple[str, ...]:
    """The group keys of one SASS line: its instruction's group, or none."""
    opcode = instruction_opcode(line)
    group = GROUP_OF.get(opcode) if opcode else None
    return (group,) if group else ()


def count_groups(text: str) -> dict[str, int]:
    """Instructions per group in a SASS text (every group key, zeros included)."""
    counts = dict.fromkeys(_KEYS, 0)
    for match in _NEXT_INSTRUCTION.finditer(text):
        group = GROUP_OF.get(match.group(1))
        if group:
            counts[group] += 1
    return counts


def clean_cuobjdump_line(line: str) -> str | None:
    """A cuobjdump line without its instruction encoding: None for a line holding only an encoding."""
    cleaned = _ENCODING.sub("", line)
    if cleaned != line and not cleaned.strip():
        return None
    return cleaned.rstrip() if cleaned != line else line
