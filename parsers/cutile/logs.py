"""Split cuTile's `CUDA_TILE_LOGS=CUTILEIR,TILEIR` output (stderr) into its modules.

As cuda-tile 1.7 prints them (cuda/tile/_compile.py):

    ==== CuTile IR for vec_add====          (CUTILEIR: the frontend's IR, one function)
    (a_0: Tile[pointer[float32],()], ...):
    $token: Token = make_token()
    ...
    return
    Lowering                                (TILEIR: the bytecode disassembled by tileirdisasm)
    ==== TILEIR ====

    entry @vec_add_Kt2_A1f32_...(%arg0: tile<ptr<f32>>, ...) optimization_hints=<default = {}> {
      ...
    }

A CuTile IR block ends at its function's `return` (column 0); a TileIR block at the closing brace
at column 0 of its top-level op (with the `#loc` / `#di_*` aliases printed after it); either ends
early at the next header, at cuTile's `Dumping TILEIR ...` lines, or at the end of the text (then it
is marked `cut`). A TileIR block joins the CuTile IR block before it: one kernel's compilation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CUTILEIR, TILEIR = "CuTile IR", "TileIR"
_CUTILE_HEADER = re.compile(r"^==== CuTile IR for (?P<name>.*?)\s*====\s*$")
_TILEIR_HEADER = re.compile(r"^==== TILEIR ====\s*$")
_ENDS = ("Dumping TILEIR ", "Lowering", "==== ")
_TOP_SYMBOL = re.compile(r"^(?:cuda_tile\.module|entry|module)\s+@([\w$.\-]+)")
HEADS = (b"==== CuTile IR for ", b"==== TILEIR ====")


@dataclass
class Block:
    kind: str  # CUTILEIR | TILEIR
    header: str  # the header line as printed
    line: int  # 1-based line of the header
    lines: list[str] = field(default_factory=list)
    cut: bool = False  # the text ended (or another block began) before the block's end

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


@dataclass
class Kernel:
    """One kernel's blocks: its CuTile IR, then its TileIR (either may be missing)."""

    name: str | None
    blocks: list[Block] = field(default_factory=list)


def is_cutile_log(head: bytes) -> bool:
    return any(head.startswith(mark) or b"\n" + mark in head for mark in HEADS)


def split(text: str) -> list[Kernel]:
    kernels: list[Kernel] = []
    block: Block | None = None
    done = True  # the open block reached its end
    for number, line in enumerate(text.split("\n"), start=1):
        cutile = _CUTILE_HEADER.match(line)
        if cutile or _TILEIR_HEADER.match(line):
            if block is not None and not done:
                block.cut = True
            block = Block(CUTILEIR if cutile else TILEIR, line.strip(), number)
            done = False
            if cutile or not kernels or any(b.kind == TILEIR for b in kernels[-1].blocks):
                kernels.append(Kernel(cutile["name"] if cutile else None))
            kernels[-1].blocks.append(block)
            continue
        if block is None or done:
            continue
        if line.startswith(_ENDS):
            block.cut = True
            done = True
            continue
        if block.kind == TILEIR and block.lines and _closed(block) and not line.startswith("#"):
            done = True  # the aliases after the op are in; this line is the program's
            continue
        block.lines.append(line)
        if block.kind == CUTILEIR and line == "return":
            done = True
    if block is not None and not done and not (block.kind == TILEIR and _closed(block)):
        block.cut = True
    for kernel in kernels:
        if kernel.name is None:
            kernel.name = _tileir_name(kernel.blocks[0].text)
    return kernels


def _closed(block: Block) -> bool:
    """Whether a TileIR block holds its whole top-level op: a `}` at column 0 after it opened."""
    return any(line.startswith("}") for line in block.lines)


def _tileir_name(text: str) -> str | None:
    for line in text.split("\n"):
        match = _TOP_SYMBOL.match(line)
        if match:
            return match.group(1)
    return None
