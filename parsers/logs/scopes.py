"""What a dump's body holds: a whole module, one function, one loop, one machine function or another op.

Pass printers print the unit their pass ran on unless told to print the module
(`-print-module-scope`, Triton's MLIR_ENABLE_DUMP): LLVM's new pass manager names the unit in its
banner (`on [module]`, `on f`, `on (f)`, `on loop %x in function f`), the legacy one does not, and
MLIR without module scope prints the op alone under a banner that names no op. So the level is read
from the body's first line, and the banner only fills in what a body cannot say (an empty body, the
function a loop is in).

A snapshot is compared with the previous dump of the same scope key (level plus the function,
loop or op it holds), so a loop dump is diffed against the last dump of that loop, never against the
module dump before it.
"""

from __future__ import annotations

import re

from parsers.records import DumpHeader

MODULE, FUNCTION, LOOP, REGION, MACHINE, OP = "module", "function", "loop", "region", "machine", "op"
LEVELS = (MODULE, FUNCTION, LOOP, REGION, MACHINE, OP)

_LLVM_MODULE_HEADS = (b"; ModuleID", b"source_filename", b"target datalayout", b"target triple")
_LLVM_FUNCTION_HEADS = (b"; Function Attrs", b"define ", b"declare ")
_LOOP_HEADS = (b"; Preheader:", b"; Loop:")
# A basic block's label opens a loop dump without a preheader: "1428:", "for.body:", "\"a b\":", and
# an unnamed block as older LLVM (3.9 among them) printed it, "; <label>:1428:" (whose loop dumps
# are the loop's blocks only).
_BLOCK_LABEL = re.compile(rb'(?:; <label>:)?([-\w.$]+|"[^"\n]*"):(?:\s|$)')
_DEFINED = re.compile(rb"define [^@\n]*@(\"[^\"\n]*\"|[-\w.$]+)\(")  # at a line's start: see _defined


def defined(body: bytes) -> list[bytes]:
    """The functions a body defines. Literal finds first: a `^define` regex over a megabyte body
    tries every line start and cost 15% of a log's scan."""
    names = []
    at = 0 if body.startswith(b"define ") else body.find(b"\ndefine ") + 1
    while at >= 0 and (at > 0 or body.startswith(b"define ")):
        match = _DEFINED.match(body, at)
        if match:
            names.append(match.group(1))
        found = body.find(b"\ndefine ", at + 1)
        at = found + 1 if found >= 0 else -1
    return names
_MACHINE_FUNCTION = re.compile(rb"^# Machine code for function ([^:\s]+):")
_METADATA_DEF = re.compile(rb"(?:^|\n)![\w.]+ = ")
_NEW_PM_LOOP = re.compile(r"^loop (%\S+(?: loop>)?) in function (\S+)$")
# A loop dump's last line: its last block's terminator.
_TERMINATOR = re.compile(
    rb"^\s+(?:%\S+ = )?(?:br|switch|ret|unreachable|indirectbr|callbr|invoke|resume|cleanupret|catchret|catchswitch)\b"
)
# MLIR: the first op printed at column 0 (custom form `util.func public @f(`, generic `"func.func"() ...`).
_MLIR_OP_HEAD = re.compile(rb'^(?:%[^=\n]* = )?("?[A-Za-z_][\w$.]*"?)(?:[^@\n]*@("[^"\n]*"|[\w$.\-]+))?')

LOOP_END = "the loop dump does not end with a block's terminator: it was cut short"
LOOP_MIXED = "a function or metadata inside a loop dump: another dump ran into it"
OP_HEADS = "more than one op at the top level of an op dump: two dumps are mixed"
OP_START = "the op dump does not start with an op or its aliases: other output is mixed in"
OP_END = "the op dump does not end with its op's closing brace: it is incomplete"


def _first_line(body: bytes) -> bytes:
    """The first non-blank line (bodies are megabytes: no copy of the whole)."""
    start = 0
    while start < len(body) and body[start] in b"\r\n":
        start += 1
    end = body.find(b"\n", start)
    return body[start : len(body) if end < 0 else end].rstrip(b"\r")


def is_loop_body(body: bytes) -> bool:
    """An LLVM loop dump: "; Preheader:" / "; Loop:" first, or a block label (no function around it)."""
    first = _first_line(body)
    return first.startswith(_LOOP_HEADS) or _BLOCK_LABEL.match(first) is not None


def is_region_body(body: bytes) -> bool:
    """An LLVM region dump (a legacy RegionPass such as AMDGPU's "Structurize control flow"): the
    region's blocks alone, the first one a function's entry block, whose instructions a printer indents
    under no label. No module, function or loop dump starts with an indented line."""
    first = _first_line(body)
    return first[:1] in (b" ", b"\t") and bool(first.strip())


# What a legacy CGSCC pass prints for the call graph's external node, in place of a function.
NULL_FUNCTION = b"Printing <null> Function"


def is_null_function(body: bytes) -> bool:
    lines = body.strip().split(b"\n")
    return all(line.strip() == NULL_FUNCTION for line in lines)


def loop_damage(body: bytes, last_line: bytes) -> str | None:
    """Why an LLVM loop (or region) dump cannot be whole: it holds blocks only, the last ending in a
    terminator."""
    if defined(body) or _METADATA_DEF.search(body):
        return LOOP_MIXED
    if _TERMINATOR.match(last_line) is None:
        return LOOP_END
    return None


# A module at column 0, in custom or generic form (a failed pass prints the generic form).
_MODULE_LINE = re.compile(rb'(?:^|\n)(?:module\b|"builtin\.module")')
# A line at column 0 that is not an alias, a block label (^bb1:) or a closing brace.
_TOP_OP = re.compile(rb"(?:^|\n)[^\s#!}^]")
_QUOTED = re.compile(rb'"(?:[^"\\\n]|\\.)*"')  # a string literal, escapes and all


def is_mlir_op_body(body: bytes) -> bool:
    """An MLIR dump of one op printed alone: an op at column 0, and no `module` there."""
    return _MODULE_LINE.search(body) is None and _TOP_OP.search(body) is not None


def mlir_op_damage(body: bytes) -> str | None:
    """Why an MLIR dump of one op (not a module) cannot be whole: aliases (#x = / !x = lines), then
    exactly one op at column 0, whose region (if it opens one) closes with the last line."""
    heads = [
        line for line in body.split(b"\n")
        if line and not line[:1].isspace() and not line.startswith((b"#", b"!", b"}", b"^"))
    ]
    if not heads:
        return OP_START
    if len(heads) > 1:
        return OP_HEADS
    first = body[: body.find(b"\n")] if b"\n" in body else body
    if not (first.startswith((b"#", b"!")) or _MLIR_OP_HEAD.match(first)):
        return OP_START
    if heads[0].rstrip().endswith(b"{"):
        last = body.rstrip()[body.rstrip().rfind(b"\n") + 1 :]
        if not (last.startswith(b"#loc") or _closes_op(last)):
            return OP_END
    return None


def _closes_op(line: bytes) -> bool:
    """Whether a line closes a top-level op's region as a printer ends it: `}` at column 0, then
    what follows the region on its line, if anything: `) {attrs} : type` in generic form, and the
    op's location under --mlir-print-debuginfo (`} loc("f.mlir":1:1)`, `} loc(#loc3)`), which
    closes the line."""
    if not line.startswith(b"}"):
        return False
    at = line.find(b"loc(")
    if at < 0:
        return True
    # A line cut inside the location leaves it unclosed: its brackets (outside strings) do not balance.
    rest = _QUOTED.sub(b"", line[at:])
    balanced = rest.count(b"(") == rest.count(b")") and rest.count(b"[") == rest.count(b"]")
    return balanced and rest.endswith(b")")


def level_and_name(header: DumpHeader, body: bytes) -> tuple[str, str | None]:
    """The level a dump's body holds and the name of its unit (function, loop or op), if any."""
    if header.kind == "llvm":
        return _llvm_level(header, body)
    if header.kind == "internal":
        return MODULE, None
    scope = header.scope or ""
    if scope and not header.is_module_scope:
        op = scope.partition(" ")[0]
        # Module-scope printing prints the whole module under an op-scoped banner: the body decides.
        if _MODULE_LINE.search(body):
            return MODULE, None
        return (FUNCTION if op.endswith("func") else OP), scope
    if _MODULE_LINE.search(body) or _TOP_OP.search(body) is None:
        return MODULE, None
    for line in body.split(b"\n"):
        if line and not line[:1].isspace() and not line.startswith((b"#", b"!")):
            match = _MLIR_OP_HEAD.match(line)
            if match is None:
                break
            op = match.group(1).strip(b'"').decode("utf-8", "replace")
            symbol = match.group(2)
            name = op if symbol is None else f"{op} @{symbol.decode('utf-8', 'replace')}"
            return (FUNCTION if op.endswith("func") else OP), name
    return OP, None


def _llvm_level(header: DumpHeader, body: bytes) -> tuple[str, str | None]:
    first = _first_line(body)
    scope = header.scope or ""
    loop = _NEW_PM_LOOP.match(scope)
    if first.startswith(_LLVM_MODULE_HEADS):
        return MODULE, None
    if first.startswith(b"# Machine code for function"):
        match = _MACHINE_FUNCTION.match(first)
        return MACHINE, match.group(1).decode("utf-8", "replace") if match else None
    if is_region_body(body):
        return REGION, None
    if loop or is_loop_body(body):
        function = loop.group(2) if loop else None
        label = _loop_header(body)
        parts = (label or (loop.group(1) if loop else None), function and f"in {function}")
        return LOOP, " ".join(part for part in parts if part) or None
    if first.startswith((*_LLVM_FUNCTION_HEADS, b"; ", NULL_FUNCTION)):
        names = [name.decode("utf-8", "replace") for name in defined(body)]
        return FUNCTION, ",".join(names) or None
    if not body.strip():  # "omitted because no change": the banner says what it was
        if scope in ("", "[module]"):
            return MODULE, None
        return FUNCTION, scope.strip("()")
    return MODULE, None


def _loop_header(body: bytes) -> str | None:
    """The label of a loop dump's header block: the first block after "; Loop:", or the first block."""
    start = body.find(b"; Loop:")
    start = body.find(b"\n", start) + 1 if start >= 0 else 0
    for line in body[start:].split(b"\n"):
        match = _BLOCK_LABEL.match(line)
        if match:
            return "%" + match.group(1).decode("utf-8", "replace")
    return None


def scope_key(level: str, name: str | None) -> str:
    """The key snapshots are compared by: module dumps with module dumps (MLIR or LLVM alike), a
    function's, loop's or op's dumps with the previous one of the same unit."""
    return level if name is None else f"{level} {name}"


def function_of_loop(name: str | None) -> bool:
    """Whether a loop's name already says which function it is in."""
    return bool(name) and " in " in name
