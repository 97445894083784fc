"""Why a dump's body cannot be whole as its printer wrote it: the checks a cut or a mix breaks.

parsers/logs/log.py calls :func:`body_damage` on every body it cuts out of a log; a body that fails
is kept, marked damaged with one of the messages below (what the user reads beside it).
"""

from __future__ import annotations

import functools
import re

from parsers.literal_scan import LiteralSet
from parsers.logs import scopes

UNBALANCED = "unbalanced braces: the dump is incomplete or mixed with other output"
FOREIGN = (
    "holds bytes an IR printer never writes (NUL, control or non-ASCII bytes): "
    "binary data or other output is mixed into the dump"
)
NO_MODULE = "no module in the dump: it is incomplete or mixed with other output"
LOC_GAP = "#loc aliases are missing: the dump was cut short or mixed with other output"
BAD_START = "the dump does not start with #aliases or its module: other output is mixed in"
BAD_END = "the dump does not end with its module's closing brace or #loc aliases: it is incomplete"
METADATA_GAP = "its !N metadata is incomplete or not last: the LLVM dump was cut short or mixed with other output"
MIR_END = "no '# End machine code' line: the machine-code dump was cut short"
LLVM_MIXED = "two LLVM dumps run together: a banner between them is missing or broken"
LLVM_END = "the LLVM dump does not end with a function's closing brace or metadata: it was cut short"
EMPTY = "empty dump"
BROKEN_BANNER = "part of a dump banner inside the dump: other output is mixed in, or the next banner is broken"
MODULES = "more than one module in the dump: two dumps are mixed"
_METADATA_REF = re.compile(rb"![0-9]")
_LLVM_DEFINE = re.compile(rb"\ndefine [^@\n]*@([^(\s]+)\(")
# Lines LLVM's pass manager prints after a dump (LLVM_IR_ENABLE_DUMP with debug-pass-manager output).
_PASS_MANAGER_LINES = (b"Running ", b"Invalidating ", b"Clearing ", b"Skipping ")
# Pieces of a banner that other output broke: wherever a banner is split, one side keeps "IR Dump",
# or the split is inside it and the head ends in "*** I".."*** IR Dum" (an MLIR banner's head is
# already one by its "// -----// ") and the tail starts with "R Dump".."p" and "Before"/"After".
BANNER_PIECE = re.compile(
    rb"IR Dump|\*\*\* I(?:R ?(?:D(?:um?)?)?)?\r?$|^(?:R Dump|\s?Dump|ump|mp|p) (?:Before|After)\b", re.MULTILINE
)
# bytes.translate deleting all but these leaves a short string to count them in: one pass, not three.
# Printers escape every byte outside printable ASCII (MLIR and LLVM alike; no corpus dump holds
# one), so the bytes kept besides "\n{}" are foreign: their count comes from the same pass.
PRINTABLE = b"\t\r" + bytes(range(0x20, 0x7F))
# Also kept: the rare letters every banner piece holds ("*** I", "IR Dump", "p Before", "p After"),
# so the full-text searches for pieces run only on bodies that hold one of them.
_PIECE_LETTERS = b"*DBA"
_PIECE_HEADS = LiteralSet((b"IR Dump", b"*** I", b"p Before", b"p After"))  # the literal finds, in one pass
COUNTED = bytes(c for c in PRINTABLE if c not in b"{}" + _PIECE_LETTERS)
# An MLIR printer numbers #loc aliases #loc, #loc1, #loc2, ... by first use and defines each one used,
# before the module or after it: a gap in the numbers means lines were lost (every corpus dump holds).
# The module is in custom form ("module attributes {") or, when a failed pass left IR that does not
# verify, in generic form ('"builtin.module"() ({', Triton 3.8's "IR Dump After X Failed").
_MODULE_OR_LOC = re.compile(rb'\n(?:((?:"builtin\.)?m)odule|#loc(\d*) = )')
_TYPE_ALIAS = re.compile(rb"![A-Za-z_][\w.$-]* = ")  # MLIR's type alias (!s32i = !cir.int<s, 32>), not LLVM's !0
_METADATA_DEF = re.compile(rb"\n!(\d+) = ")  # LLVM numbers its metadata !0, !1, ... likewise


def body_damage(body: bytes, kind: str, counted: bytes | None = None, empty_ok: bool = False) -> str | None:
    """Why `body` (trailing newlines removed) cannot be a whole dump as its printer wrote it, or None.

    `counted` is `body.translate(None, COUNTED)` when the caller has it; `empty_ok` for an LLVM dump
    whose banner says it is empty ("omitted because no change"). The checks are the ones a
    cut or a mix breaks and a real dump never does (all hold on every corpus dump): printable ASCII
    only, balanced braces, a module, an MLIR dump's last line, the numbering of #loc aliases and of
    LLVM metadata. They cannot see a foreign line that keeps all of these (a brace-free line from
    another writer's dump at the same depth): tests/test_fuzz_logs.py says what is guaranteed.
    """
    if counted is None:
        counted = body.translate(None, COUNTED)
    opening, closing = counted.count(b"{"), counted.count(b"}")
    letters = sum(counted.count(letter) for letter in _PIECE_LETTERS)
    if len(counted) != opening + closing + counted.count(b"\n") + letters:
        return FOREIGN
    if not body.strip():
        return None if empty_ok and kind == "llvm" else EMPTY
    if opening != closing:
        return UNBALANCED
    text = b"\n" + body
    if has_banner_piece(body, counted):
        return BROKEN_BANNER
    if kind == "llvm":
        # One module, or one function, per dump: a second one is another dump's text run into it.
        machine = body.count(b"# Machine code for function")
        if (
            text.find(b"\n; ModuleID", 1) >= 0 or machine > 1 or body.count(b"# End machine code") > 1
            or (machine and not body.startswith(b"# Machine code"))
        ):
            return LLVM_MIXED
        defined = _LLVM_DEFINE.findall(text)
        if len(set(defined)) != len(defined):
            return LLVM_MIXED
        last = _last_ir_line(body)
        if scopes.is_null_function(body):  # a legacy CGSCC pass on the call graph's external node
            return None
        if scopes.is_loop_body(body) or scopes.is_region_body(body):  # a loop's or region's blocks only
            return scopes.loop_damage(body, _last_line(body))
        if b"# Machine code for function" in body:
            if not last.startswith(b"# End machine code for function"):
                return MIR_END
        elif not last.startswith((b"}", b"!", b"attributes #", b"declare ")):
            return LLVM_END
        numbers = _METADATA_DEF.findall(text)  # only a module dump defines metadata, and last
        if numbers and (not _numbered(numbers) or b"!%d" % len(numbers) in body or not last.startswith(b"!")):
            return METADATA_GAP
        module = body.startswith((b"; ModuleID", b"source_filename"))
        if not numbers and module and _METADATA_REF.search(body):
            return METADATA_GAP  # a module using metadata it does not define: cut before them
        if numbers and not module:
            return LLVM_MIXED  # a function dump defines no metadata: a module's tail ran into it
        return None
    if scopes.is_mlir_op_body(body):  # a pass's op printed alone (no module scope): IREE, mlir-opt
        return scopes.mlir_op_damage(body) or _loc_damage(body, text)
    if not body.startswith((b"#", b"module", b'"builtin.module"')) and not _TYPE_ALIAS.match(body):
        return BAD_START  # an MLIR module dump opens with its aliases (#attr, !type) or the module itself
    found = _MODULE_OR_LOC.findall(text)  # one pass for both: (b"m", b"") or (b"", alias number)
    modules = sum(1 for module, _ in found if module)
    if modules != 1:
        return NO_MODULE if not modules else MODULES
    if body[body.rfind(b"\n") + 1 : body.rfind(b"\n") + 2] not in (b"}", b"#"):
        return BAD_END
    numbers = [number for module, number in found if not module]
    if not _numbered(numbers) or (_loc_at_least(len(numbers)).search(body) if numbers else b"#loc" in body):
        return LOC_GAP  # a number missing, or one used beyond the last defined (by any line, alias or op)
    return None


def _loc_damage(body: bytes, text: bytes) -> str | None:
    """The #loc numbering check of an MLIR dump, for one that holds no module."""
    numbers = [number for module, number in _MODULE_OR_LOC.findall(text) if not module]
    if not _numbered(numbers) or (_loc_at_least(len(numbers)).search(body) if numbers else b"#loc" in body):
        return LOC_GAP
    return None


def _last_line(body: bytes) -> bytes:
    """The last non-blank line of a body, as printed (leading blanks kept)."""
    body = body.rstrip()
    return body[body.rfind(b"\n") + 1 :]


def has_banner_piece(data: bytes, counted: bytes | None = None) -> bool:
    # Literal finds run at memory speed, the regex (anchored at line ends) only on a hit; with
    # `counted`, a find runs only if its rare letter is in the text at all. Hyperscan does the four
    # finds in one pass, faster than even the one or two that the letters leave.
    if _PIECE_HEADS.compiled:
        return _PIECE_HEADS.any(data) and BANNER_PIECE.search(data) is not None
    if counted is None:
        counted = _PIECE_LETTERS
    return (
        (b"D" in counted and b"IR Dump" in data)
        or (b"*" in counted and b"*** I" in data)
        or (b"B" in counted and b"p Before" in data)
        or (b"A" in counted and b"p After" in data)
    ) and BANNER_PIECE.search(data) is not None


def _last_ir_line(body: bytes) -> bytes:
    """The last line of an LLVM dump that is not blank and not LLVM's pass-manager chatter."""
    end = len(body)
    while end > 0:
        start = body.rfind(b"\n", 0, end) + 1
        line = body[start:end].strip()
        if line and not line.startswith(_PASS_MANAGER_LINES):
            return line
        end = start - 1
    return b""


@functools.lru_cache(maxsize=256)
def _loc_at_least(count: int) -> re.Pattern[bytes]:
    """A pattern for a reference to #locN with N >= count (count >= 1): one search of the body, where
    collecting every #loc number would cost twice as much."""
    digits = str(count)
    larger = [
        digits[:i] + f"[{int(digit) + 1}-9]" + r"\d" * (len(digits) - i - 1)
        for i, digit in enumerate(digits)
        if digit != "9"
    ]
    alternatives = [digits, *larger, r"[1-9]\d{" + str(len(digits)) + ",}"]
    return re.compile(rb"#loc(?:" + "|".join(alternatives).encode() + rb")(?!\d)")


def _numbered(numbers: list[bytes]) -> bool:
    """Whether alias numbers are 0 (written as nothing), 1, 2, ... each once."""
    values = sorted(int(number) if number else 0 for number in numbers)
    return values == list(range(len(values)))
