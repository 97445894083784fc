"""One per-pass file's text as a dump: its banner (the file's own first line where it has one, else
made from the file's name) and its body."""

from __future__ import annotations

import posixpath
import re

from parsers.logs import llvm_dump, mlir_dump
from parsers.perpass.names import PassFile
from parsers.records import DumpHeader

_LLVM_HEADS = (b"; ModuleID", b"source_filename", b"target datalayout", b"target triple", b"define ", b"declare ")
# The kernel a module holds, where the file's name says none: its first function, entry or kernel.
_SYMBOL = re.compile(rb'^\s*"?[\w.]*(?:func|entry|kernel)"?(?: (?:public|private))? @("[^"\n]*"|[\w$.\-]+)', re.MULTILINE)
_LLVM_DEFINE = re.compile(rb"^define [^@\n]*@(\"[^\"\n]*\"|[\w$.\-]+)\(", re.MULTILINE)


def ir_kind(body: bytes, path: str) -> str:
    """"llvm" for LLVM IR (a `.ll` file, or text that opens as a module does), else "mlir"."""
    if path.endswith(".ll"):
        return "llvm"
    return "llvm" if body.lstrip().startswith(_LLVM_HEADS) else "mlir"


def split_banner(data: bytes) -> tuple[DumpHeader | None, bytes]:
    """The banner a file opens with (tree printing's, LLVM's dump directory's), parsed, and the body
    after it; (None, data) when the file has none or it does not parse."""
    stripped = data.lstrip(b"\r\n")
    end = stripped.find(b"\n")
    first = (stripped if end < 0 else stripped[:end]).rstrip(b"\r").decode("utf-8", "replace")
    if first.startswith("// -----// "):
        header = mlir_dump.parse_header(first)
    elif "*** IR Dump " in first[:16]:
        header = llvm_dump.parse_header(first)
    else:
        return None, data
    if header is None:
        return None, data
    return header, b"" if end < 0 else stripped[end + 1 :]


def header_for(info: PassFile, path: str, kind: str, first_pass: str | None) -> DumpHeader:
    """The banner a file without one would have had: `when` and the pass from its name; the IR before
    the first pass is "before" that pass (`first_pass`, the group's first named one). `raw` is the
    file's name, which the pages show where a log shows the banner line."""
    name = info.pass_name or first_pass or "the first pass"
    return DumpHeader(kind if kind in ("llvm", "tvmscript") else "mlir", info.when, name, None, None, None, False,
                      posixpath.basename(path))


def kernel_of(body: bytes) -> str | None:
    """The first function (MLIR func/entry/kernel, LLVM define) a file defines."""
    match = _SYMBOL.search(body) or _LLVM_DEFINE.search(body)
    return match.group(1).strip(b'"').decode("utf-8", "replace") if match else None
