"""CUTE_DSL_KEEP's IR files (nvidia-cutlass-dsl 4.x, base_dsl/dsl.py `build_module`; cache_helpers.py
`save_ir` names them `{dsl_name.lower()}_{fname}.mlir`):

- `cute_dsl_<fn>.mlir`: `ir-debug`, the module before any pass (with locations when CUTE_DSL_LINEINFO=1);
- `cute_dsl_<fn>_clean.mlir`: `ir`, the module after `builtin.module(canonicalize,cse)`.

`cute_experimental_dsl_` for the experimental DSL. Both are one compilation, named `<fn>`.
"""

from __future__ import annotations

import posixpath
import re

from parsers.perpass.names import PassFile

CUTE_KEEP = "cute-keep"
CLEAN_PIPELINE = "canonicalize,cse"  # what CuTe DSL runs on the module it keeps as `ir`
_NAME = re.compile(r"^(?P<dsl>cute_dsl|cute_experimental_dsl)_(?P<fn>.+?)(?P<clean>_clean)?\.mlir$")
_BANNER = b"// -----// IR Dump"


def keep_file(path: str, head: bytes) -> PassFile | None:
    folder, name = posixpath.split(path)
    match = _NAME.match(name)
    if match is None or _BANNER in head:
        return None
    group = posixpath.join(folder, match["fn"])
    if match["clean"]:
        return PassFile(CUTE_KEEP, group, (1,), match["fn"], CLEAN_PIPELINE, "after")
    return PassFile(CUTE_KEEP, group, (0,), match["fn"], None, "before")
