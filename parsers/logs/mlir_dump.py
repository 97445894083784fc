"""Banners of MLIR's IR printing (`MLIR_ENABLE_DUMP`, `MLIR_DUMP_PATH`).

Old form:  // -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //
New form:  // -----// IR Dump Before InlinerPass: inline{opts} ('builtin.module' operation) //----- //
Pipeliner: // -----// SoftwarePipeliner internal IR Dump After: LowerLoops
A pass in an anonymous namespace, without a registered argument (Triton 3.8):
           // -----// IR Dump Before (anonymous namespace)::VerifyWarpSpecializationPartitions:
           unknown<(anonymous namespace)::VerifyWarpSpecializationPartitions> ('builtin.module' operation) //----- //
No op:     // -----// IR Dump After CSE (cse) //----- //   (no module scope: the body is the pass's op)
Glued:     // -----// IR Dump Before X (x) ('builtin.module' operation) //----- //#loc = loc(...)
           (a pasted dump whose newline after the banner was lost: the rest of the line is the body's)
"""

from __future__ import annotations

import re

from parsers.records import DumpHeader

PREFIX = b"// -----// "

# Symbol names after "operation: @" may hold spaces, parentheses and commas, so anchor on the trailer.
_PASS_HEADER = re.compile(
    r"^// -----// IR Dump (Before|After) (.*?) \('([^']+)' operation(?:: @(.*))?\) //----- //\s*$"
)
# Without module-scope printing (mlir-opt, IREE), the banner names no op: the pass's op is the body.
_PLAIN_HEADER = re.compile(r"^// -----// IR Dump (Before|After) (.*?) //----- //\s*$")
_INTERNAL_HEADER = re.compile(r"^// -----// (\S+) internal IR Dump (Before|After):? ?(.*?)\s*$")
# A banner's trailer with text after it on the same line: the first " //----- //" ends the banner.
_GLUED_BODY = re.compile(rb"^// -----// IR Dump (?:Before|After) .*? //----- //[ \t]*(?=[^\s])")  # "//----- // !s32i = ..." too
_OLD_DESC = re.compile(r"^(.*?) \(([^()]*)\)$")  # "Inliner (inline)"
_NEW_DESC = re.compile(r"^(.*?): ([\w.\-]+)(\{.*\})?\s*$")  # "InlinerPass: inline{...}"
# MLIR names a pass without an argument "unknown<its C++ type name>"; the type name may carry
# namespaces, "(anonymous namespace)::" among them: "NS::Name: unknown<NS::Name>". Such a pass gets
# the bare type name and no argument (it has none to show).
_UNKNOWN_ARG_DESC = re.compile(r"^(?P<name>.*?): (?P<arg>unknown<.*>)\s*$")
_NAMESPACES = re.compile(r"^(?:(?:\(anonymous namespace\)|[\w]+)::)+")


def parse_pass_description(desc: str) -> tuple[str, str | None, str | None, bool]:
    """Split "Name (arg)" or "Name: arg{options}" into (name, arg, options, failed)."""
    failed = False
    if " Failed" in desc:
        failed = True
        desc = desc.replace(" Failed", "", 1)
    match = _NEW_DESC.match(desc)
    if match:
        return match.group(1), match.group(2), match.group(3), failed
    match = _UNKNOWN_ARG_DESC.match(desc)
    if match:
        return _NAMESPACES.sub("", match["name"]) or match["name"], None, None, failed
    match = _OLD_DESC.match(desc)
    if match:
        return match.group(1), match.group(2), None, failed
    return desc, None, None, failed


def glued_body_start(banner: bytes) -> int:
    """Where the body starts on a banner's own line (its newline lost, as in a pasted log), or 0 when
    the line holds only the banner."""
    match = _GLUED_BODY.match(banner)
    return match.end() if match else 0


def parse_header(line: str) -> DumpHeader | None:
    """Parse one banner line (no newline). None if it is not a well-formed MLIR banner."""
    match = _PASS_HEADER.match(line)
    if match:
        when, desc, op_name, symbol = match.groups()
        name, arg, options, failed = parse_pass_description(desc)
        scope = op_name if symbol is None else f"{op_name} @{symbol}"
        return DumpHeader("mlir", when.lower(), name, arg, options, scope, failed, line)
    match = _PLAIN_HEADER.match(line)
    if match:
        when, desc = match.groups()
        name, arg, options, failed = parse_pass_description(desc)
        return DumpHeader("mlir", when.lower(), name, arg, options, None, failed, line)
    match = _INTERNAL_HEADER.match(line)
    if match:
        who, when, step = match.groups()
        return DumpHeader("internal", when.lower(), step or who, None, None, who, False, line)
    return None
