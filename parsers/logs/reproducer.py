"""MLIR's crash reproducer, as Triton 3.8 prints it to stderr when a pass fails.

The pass manager prints, before the "IR Dump After X Failed" banner, the IR the failing pipeline was
given, as a whole MLIR file: aliases, the module, a blank line, then the pipeline in a resource block:

    #blocked = #ttg.blocked<...>
    module attributes {...} {
      ...
    }

    {-#
      external_resources: {
        mlir_reproducer: {
          pipeline: "builtin.module(...)",
          ...
    #-}

This text sits in the log's gap text (no banner precedes it). When the failed dump after it holds
no module (only aliases and #loc lines), the reproducer is the IR at the failure that the log keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RESOURCES_OPEN = "{-#"
_RESOURCES_CLOSE = "#-}"
_KEY = "mlir_reproducer:"
_LOOKAHEAD = 4  # lines from "{-#" to "mlir_reproducer:"
_MODULE_START = re.compile(r'^(?:module\b|"builtin\.module"\(\))')
_ALIAS = re.compile(r"^[#!][\w.$-]+ = ")
_PIPELINE = re.compile(r'^\s*pipeline: "(.*)",?\s*$')


@dataclass
class Reproducer:
    first_line: int  # 1-based log line of its first alias (or module) line
    last_line: int  # the "#-}" line
    text: str  # as logged, lines joined with "\n"
    pipeline: str | None  # the pass pipeline it names


def find_reproducer(lines: list[tuple[int, str]]) -> Reproducer | None:
    """The last whole reproducer in a block of gap lines ((line number, text) pairs), or None."""
    found = None
    for index, (_, text) in enumerate(lines):
        if text != _RESOURCES_OPEN:
            continue
        ahead = lines[index + 1 : index + 1 + _LOOKAHEAD]
        if not any(line.strip().startswith(_KEY) for _, line in ahead):
            continue
        close = next((j for j in range(index + 1, len(lines)) if lines[j][1] == _RESOURCES_CLOSE), None)
        start = _module_start(lines, index)
        if close is None or start is None:
            continue
        pipeline = next((m.group(1) for _, line in lines[index:close] if (m := _PIPELINE.match(line))), None)
        text = "\n".join(line for _, line in lines[start : close + 1])
        found = Reproducer(lines[start][0], lines[close][0], text, pipeline)
    return found


def _module_start(lines: list[tuple[int, str]], resources: int) -> int | None:
    """Index of the reproducer's first line: the module line above the resource block (the module's
    closing "}" and a blank line come between), with the alias lines right above it."""
    index = resources - 1
    while index >= 0 and not lines[index][1].strip():
        index -= 1
    if index < 0 or lines[index][1] != "}":
        return None
    while index >= 0 and not _MODULE_START.match(lines[index][1]):
        index -= 1
    if index < 0:
        return None
    while index > 0 and _ALIAS.match(lines[index - 1][1]):
        index -= 1
    return index
