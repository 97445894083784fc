"""Which per-pass folder a file belongs to, and its place in it, from its path and first bytes.

Styles (each checked against real folders; the fixtures' READMEs say which):

- ``numbered``: `<prefix>_NNN_<Pass>.mlir`, MLIR's print-after-all split into one file per pass by a
  user's script (the CuTe DSL dump scripts committed beside NVIDIA/cutlass examples):
  `dense_gemm_005_CuteExpandOps.mlir`. `<prefix>_0_with_loc.mlir` (CUTE_DSL_PRINT_IR's module, with
  locations) and `<prefix>_0_.mlir` (the same module as the pass manager got it) hold the IR before
  the first pass: they come first, in that order. The number orders the rest.
- ``tree``: MLIR's tree printing (`--mlir-print-ir-tree-dir`, PassManager.enable_ir_printing's
  `tree_printing_dir_path`): `<root>/builtin_module_no-symbol-name/1_inline.mlir`, a nested op's
  passes in a folder of their own (`func_func_f/0_1_cse.mlir`, its parent pass's counter first).
  Each file opens with its pass's banner; the counters order the files across folders.
- ``llvm-dir``: LLVM's `-ir-dump-directory` (with -print-after-all / -print-before-all, LLVM 19+):
  `<N>-<module hash>-module-<Pass>-<before|after>.ll`, `<N>-<module hash>-function-<hash>-<Pass>-after.ll`;
  N orders them (a pass's before and after dumps share it), each file opens with its banner.
(CuTe DSL's `CUTE_DSL_KEEP` IR files are parsers/cute/keep.py's: the registry asks it first.)
- ``module``: any other `.mlir` / `.tileir` / `.ll` file, or a text opening with `cuda_tile.module`,
  without a dump banner: one module, one snapshot.

A `.mlir` file holding dump banners is a log (MLIR_DUMP_PATH's file): `pass_file` returns None.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

NUMBERED, TREE, LLVM_DIR, MODULE = "numbered", "tree", "llvm-dir", "module"

_NUMBERED = re.compile(r"^(?P<prefix>.+)_(?P<number>\d+)_(?P<pass>[A-Za-z][\w.\-]*)\.mlir$")
_BEFORE = re.compile(r"^(?P<prefix>.+)_0_(?P<tag>[\w.\-]*)\.mlir$")
_TREE = re.compile(r"^(?P<counters>\d+(?:_\d+)*)_(?P<pass>[A-Za-z][\w.\-]*)\.mlir$")
_LLVM_DIR = re.compile(r"^(?P<number>\d+)-(?P<hash>[0-9a-f]+)-(?P<rest>.+)-(?P<when>before|after)\.ll$")
_TREE_TOP = re.compile(r"^builtin_module_")
_BANNERS = (b"// -----// IR Dump", b"*** IR Dump")
_MLIR_BANNER = b"// -----// IR Dump"
_CUDA_TILE = re.compile(rb"^\s*(?://[^\n]*\n\s*)*cuda_tile\.module\b")
MODULE_SUFFIXES = (".mlir", ".tileir")
_MLIR_BYTECODE = b"ML\xefR"  # MLIR's bytecode magic


@dataclass(frozen=True)
class PassFile:
    """Where one file sits in its folder's pipeline."""

    style: str
    group: str  # the files of one compilation share it
    order: tuple[int, ...]  # the files' order in the compilation
    prefix: str  # the kernel or program the files are named for ("" where the names say none)
    pass_name: str | None  # from the file name; None for the IR before the first pass
    when: str  # "before" | "after"


def pass_file(path: str, head: bytes) -> PassFile | None:
    """The file's place in a per-pass folder, or None when it is none of the styles (a log of
    dumps, a Python source, anything else)."""
    folder, name = posixpath.split(path)
    if head.startswith(_MLIR_BYTECODE) or b"\x00" in head[:4096]:
        return None  # MLIR bytecode or other binary data named .mlir: not text IR
    opens_with_banner = head.lstrip().startswith(_BANNERS)
    if name.endswith(".ll"):
        place = _llvm_file(folder, name)
        if place is None and not any(banner in head for banner in _BANNERS):
            return PassFile(MODULE, path, (0,), "", None, "after")  # a bare LLVM IR file
        return place
    if not name.endswith(MODULE_SUFFIXES) and _CUDA_TILE.match(head) is None:
        return None
    tree = _TREE.match(name)
    if tree and head.lstrip().startswith(_MLIR_BANNER):
        counters = tuple(int(part) for part in tree["counters"].split("_"))
        return PassFile(TREE, _tree_root(folder), counters, "", tree["pass"], "after")
    if any(banner in head for banner in _BANNERS) and not opens_with_banner:
        return None  # a log of dumps that happens to be named .mlir
    before = _BEFORE.match(name)
    if before and before["tag"] in ("", "with_loc") and not opens_with_banner:
        # `_0_with_loc` first, then `_0_`: both hold the module before any pass
        place = 0 if before["tag"] == "with_loc" else 1
        return PassFile(NUMBERED, posixpath.join(folder, before["prefix"]), (0, place), before["prefix"], None, "before")
    numbered = _NUMBERED.match(name)
    if numbered and not opens_with_banner:
        group = posixpath.join(folder, numbered["prefix"])
        return PassFile(NUMBERED, group, (int(numbered["number"]), 0), numbered["prefix"], numbered["pass"], "after")
    if opens_with_banner:
        return None  # dumps written to a file (MLIR_DUMP_PATH's dumpfile.mlir): the log reader splits them
    return PassFile(MODULE, path, (0,), "", None, "after")


def _tree_root(folder: str) -> str:
    """The folder tree printing was pointed at: above the `builtin_module_*` folder."""
    parts = folder.split("/")
    for index, part in enumerate(parts):
        if _TREE_TOP.match(part):
            return "/".join(parts[:index])
    return folder


def _llvm_file(folder: str, name: str) -> PassFile | None:
    match = _LLVM_DIR.match(name)
    if match is None:
        return None
    # `module-<Pass>`, `function-<function hash>-<Pass>`: the pass is the last part (the banner inside
    # names it in full, and the unit)
    pass_name = match["rest"].rpartition("-")[2]
    order = (int(match["number"]), 0 if match["when"] == "before" else 1)
    return PassFile(LLVM_DIR, posixpath.join(folder, match["hash"]), order, "", pass_name, match["when"])
