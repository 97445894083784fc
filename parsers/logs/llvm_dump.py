"""Banners of LLVM's print-after-all (`LLVM_IR_ENABLE_DUMP=1`), in its three styles.

New pass manager: ; *** IR Dump After InstCombinePass on add_kernel ***
                  (LLVM 15 and older: no "; ", and loops are "on Loop at depth 1 containing: %5<header>...")
Legacy IR level:  *** IR Dump After Module Verifier (verify) ***
                  (a legacy CGSCC pass prints its first function on the banner's line: "***; Function Attrs...";
                  older LLVM names no argument and prints a module on the banner's line: "***; ModuleID ...")
Machine IR:       # *** IR Dump After Branch Folder (branch-folder) ***:
"""

from __future__ import annotations

import re

from parsers.records import DumpHeader

_BANNER = re.compile(r"^(; |# )?\*\*\* IR Dump (Before|After) (.*?) \*\*\*:?\s*$")
# A new-PM pass name is one word, maybe with template arguments holding spaces:
# "RequireAnalysisPass<llvm::GlobalsAA, llvm::Module, llvm::AnalysisManager<Module>> on [module]".
_NEW_PM = re.compile(r"^([A-Za-z_][\w:]*(?:<.*?>)?) on (.*?)( \(invalidated\)| omitted because no change)?$")
_LEGACY = re.compile(r"^(.*) \(([^()]*)\)$")

# A banner with the body's first line glued on: a legacy CGSCC pass's ("*** IR Dump After X (x) ***;
# Function Attrs: ..."), old LLVM's module dumps ("*** IR Dump After X ***; ModuleID = ..."), or any
# banner pasted with its newline lost. Nothing of a banner follows its closing "***" (or "***:").
_GLUED_BODY = re.compile(rb"^(?:; |# )?\*\*\* IR Dump (?:Before|After) .*? \*\*\*:?(?=[^\s:])")

# Byte prefixes a banner line can start with; cheap to test before the regex.
PREFIXES = (b"; *** IR Dump ", b"*** IR Dump ", b"# *** IR Dump ")


def parse_header(line: str) -> DumpHeader | None:
    match = _BANNER.match(line)
    if not match:
        return None
    style, when, desc = match.groups()
    if style != "# ":  # "; " since LLVM 16; the same banner without it before
        new_pm = _NEW_PM.match(desc)
        if new_pm:
            name, scope, note = new_pm.groups()
            return DumpHeader("llvm", when.lower(), name, None, (note or "").strip() or None, scope, False, line)
    legacy = _LEGACY.match(desc)
    scope = "machine" if style == "# " else "[module]"
    if legacy:
        return DumpHeader("llvm", when.lower(), legacy.group(1), legacy.group(2), None, scope, False, line)
    return DumpHeader("llvm", when.lower(), desc, None, None, scope, False, line)


def names_its_unit(header: DumpHeader) -> bool:
    """Whether a banner is the new pass manager's ("X on UNIT"), the only kind LLVM 16 and later start
    with "; ". A legacy banner names no unit: it gives the pass's argument ("(verify)") or, in older
    LLVM, only its description ("*** IR Dump After Rotate Loops ***")."""
    match = _BANNER.match(header.raw)
    return match is not None and match.group(1) != "# " and _NEW_PM.match(match.group(3)) is not None


def glued_body_start(banner: bytes) -> int:
    """Where the body starts on a banner's own line (LLVM's legacy CGSCC printer, and old LLVM's module
    printer, write no newline after their banner), or 0 when the banner line holds only the banner."""
    match = _GLUED_BODY.match(banner)
    return match.end() if match else 0
