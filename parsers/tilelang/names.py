"""A TileLang `tl.dump_ir_path` file: `{counter:03d}_{pass}.py`, TVMScript of the module after the
pass (TVM's DumpIR.run_after_pass; `<>:"/\\|?*` in a pass's name became `_`). Anonymous passes are
named `pass_fn` by TVM; their files keep that name."""

from __future__ import annotations

import posixpath
import re

from parsers.perpass.names import PassFile

TILELANG = "tilelang"
KIND = "tvmscript"  # the snapshots' banner kind: highlighted as Python, no MLIR locations
_NAME = re.compile(r"^(?P<counter>\d{3,})_(?P<pass>.+)\.py$")
_HEAD = b"from tvm.script import"


def dump_file(path: str, head: bytes) -> PassFile | None:
    """The file's place in its dump folder, or None for any other Python file (a kernel's source)."""
    folder, name = posixpath.split(path)
    match = _NAME.match(name)
    if match is None or _HEAD not in head[:512]:
        return None
    return PassFile(TILELANG, folder, (int(match["counter"]),), "", match["pass"], "after")


_PRIM_FUNC = re.compile(rb"@T\.prim_func(?:\([^)\n]*\))?\s*\n\s*def ([A-Za-z_]\w*)\(")


def kernel_of(body: bytes) -> str | None:
    """The module's first `@T.prim_func`'s name (the kernel TileLang compiled)."""
    match = _PRIM_FUNC.search(body)
    return match.group(1).decode() if match else None
