"""What a cubin says about each kernel's resources, read from the ELF in pure Python (no CUDA tool).

Where the numbers are (checked against ``cuobjdump -res-usage`` on cubins of ptxas 12.x and 13.x,
sm80/sm90/sm100: tests/test_resources.py):

- registers: ``EIATTR_REGCOUNT`` (0x2f) in the global ``.nv.info`` section, one record per function
  symbol (symbol index, count). Older cubins also keep the count in bits 24-31 of the
  ``.text.<kernel>`` section header's ``sh_info`` (sm80 cubins of Triton 3.8 still do; sm90/sm100
  ones leave those bits 0), used when no REGCOUNT record names the kernel.
- stack (cuobjdump's STACK, where spills go): ``EIATTR_MAX_STACK_SIZE`` (0x23) when present, else
  ``EIATTR_FRAME_SIZE`` (0x11) of the kernel's symbol.
- local (cuobjdump's LOCAL): the size of the ``.nv.local.<kernel>`` section (NOBITS), if any.
- static shared memory (cuobjdump's SHARED): the size of ``.nv.shared.<kernel>`` (NOBITS).

A damaged or foreign file gives an empty result and a reason, never an exception.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_REGCOUNT = 0x2F
EIFMT_SVAL = 0x04
EIFMT_HVAL = 0x03
EIFMT_BVAL = 0x02
EIFMT_NVAL = 0x01
MAX_BYTES = 512 << 20


@dataclass
class KernelResources:
    name: str
    registers: int | None = None
    stack: int = 0  # bytes per thread: the stack frame, where ptxas puts spills
    local: int = 0  # bytes per thread: .nv.local (local arrays outside the frame)
    shared_static: int = 0  # bytes per block
    min_stack: int | None = None

    def as_dict(self) -> dict:
        return {"registers": self.registers, "stack": self.stack, "local": self.local,
                "local_bytes": self.stack + self.local, "shared_static": self.shared_static}


def _attributes(data: bytes, start: int, end: int):
    """(attribute, value bytes) of one .nv.info section; stops at the first record it cannot size."""
    offset = start
    while offset + 2 <= end:
        fmt, attr = data[offset], data[offset + 1]
        if fmt == EIFMT_SVAL and offset + 4 <= end:
            (size,) = struct.unpack_from("<H", data, offset + 2)
            yield attr, data[offset + 4: offset + 4 + size]
            offset += 4 + size
        elif fmt == EIFMT_HVAL:
            yield attr, data[offset + 2: offset + 4]
            offset += 4
        elif fmt in (EIFMT_BVAL, EIFMT_NVAL):
            offset += 4 if fmt == EIFMT_BVAL else 2
        else:
            return


def read_cubin(data) -> tuple[dict[str, KernelResources], str | None]:
    """Resources per kernel (entry function) of one cubin (bytes, or an mmap of it), and a reason when
    none could be read."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        return {}, "not an ELF file"
    if data[4] != 2 or data[5] != 1:
        return {}, "not a 64-bit little-endian ELF (not a cubin)"
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names_at = sections[shstrndx][4]

        def name_of(offset: int) -> str:
            start = names_at + offset
            end = data.find(b"\0", start)
            if end < 0:
                raise ValueError("a section name without its end")
            return bytes(data[start:end]).decode("utf-8", "replace")

        named = [(name_of(section[0]), section) for section in sections]
    except (struct.error, IndexError, ValueError):
        return {}, "the cubin's section table is damaged"
    kernels: dict[str, KernelResources] = {}
    symbol_of: dict[str, int] = {}
    for name, section in named:
        if name.startswith(".text."):
            kernel = name[len(".text."):]
            kernels[kernel] = KernelResources(kernel, registers=(section[7] >> 24) or None)
            symbol_of[kernel] = section[7] & 0xFFFFFF  # sh_info: the function's symbol index
    for name, section in named:
        for prefix, field in ((".nv.shared.", "shared_static"), (".nv.local.", "local")):
            if name.startswith(prefix) and name[len(prefix):] in kernels:
                setattr(kernels[name[len(prefix):]], field, section[5])
    by_symbol = {symbol: kernels[kernel] for kernel, symbol in symbol_of.items()}
    frames: dict[int, int] = {}
    max_stack: dict[int, int] = {}
    for name, section in named:
        if name != ".nv.info":
            continue
        offset, size = section[4], section[5]
        for attr, value in _attributes(data, offset, min(offset + size, len(data))):
            if len(value) < 8 or attr not in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE, EIATTR_MAX_STACK_SIZE,
                                                 EIATTR_MIN_STACK_SIZE):
                continue
            symbol, number = struct.unpack_from("<II", value)
            kernel = by_symbol.get(symbol)
            if attr == EIATTR_REGCOUNT and kernel is not None:
                kernel.registers = number
            elif attr == EIATTR_FRAME_SIZE:
                frames[symbol] = number
            elif attr == EIATTR_MAX_STACK_SIZE:
                max_stack[symbol] = number
            elif attr == EIATTR_MIN_STACK_SIZE and kernel is not None:
                kernel.min_stack = number
    for symbol, kernel in by_symbol.items():
        kernel.stack = max_stack.get(symbol, frames.get(symbol, 0))
    return kernels, None


def parse_res_usage(text: str) -> dict[str, dict[str, int]]:
    """``cuobjdump -res-usage`` output: {function: {"REG": n, "STACK": n, "SHARED": n, "LOCAL": n, ...}}
    (the reference the tests compare against)."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Function ") and line.endswith(":"):
            current = line[len("Function "):-1]
        elif current is not None and line.startswith("REG:"):
            out[current] = {key: int(value) for key, value in (item.split(":", 1) for item in line.split())
                            if value.isascii() and value.isdigit()}
    return out
