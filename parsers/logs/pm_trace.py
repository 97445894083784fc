"""LLVM's pass-manager trace (`-debug-pass-manager`; Triton's LLVM_IR_ENABLE_DUMP turns it on).

    Running pass: InstCombinePass on add_kernel (72 instructions)
    Running analysis: DominatorTreeAnalysis on add_kernel
    Invalidating analysis: LastRunTrackingAnalysis on add_kernel
    Clearing all analysis results for: <possibly invalidated loop>

These lines are log text between dumps (parsers/logs/log.py ends an LLVM dump at them). What they add to
the dumps is which passes ran without printing one (pass adaptors, wrappers, passes on a filtered
function) and in which order: `Trace` collects the passes reported since the last dump and hands
them to the next one, less the pass that dump is of.
"""

from __future__ import annotations

import re

from parsers.records import DumpHeader

_RUNNING = re.compile(r"^Running pass: (.+?)(?: \(\d+ (?:instructions?|nodes?)\))?\s*$")
MAX_PASSES = 200  # a dump's list stays short whatever the log holds


class Trace:
    def __init__(self) -> None:
        self.pending: list[str] = []

    def add_lines(self, lines: list[tuple[int, str]]) -> None:
        for _, text in lines:
            if text.startswith("Running pass: "):
                match = _RUNNING.match(text)
                if match and len(self.pending) < MAX_PASSES:
                    self.pending.append(match.group(1))

    def take(self, header: DumpHeader) -> tuple[str, ...]:
        """The passes that ran since the previous dump without one of their own, in order."""
        passes, self.pending = self.pending, []
        if header.kind != "llvm":
            return ()
        own = f"{header.pass_name} on "
        for position in range(len(passes) - 1, -1, -1):
            if passes[position].startswith(own):
                del passes[position]
                break
        return tuple(passes)
