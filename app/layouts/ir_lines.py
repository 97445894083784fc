"""A TTGIR text's op lines, each with the module's target and the layout aliases defined so far: the
walk that the per-op cost scans (conversions, shared-memory accesses) share."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

_DEF = re.compile(r"#([A-Za-z_][\w$-]*) = (#[A-Za-z_]\w*\.\w+.*)$")
_TARGET = re.compile(r'(?:ttg|triton_gpu)\.target = "([^"]+)"')  # triton_gpu: Triton up to 3.2


def op_lines(lines: Iterable[str], default_target: str, needles: tuple[str, ...]
             ) -> Iterator[tuple[int, str, str, dict[str, str]]]:
    """(line number, line, target, aliases) for each line holding one of ``needles``. The module's
    `ttg.target` is the target, ``default_target`` (the compilation's) where it names none. A substring
    test first: far cheaper than the callers' regexes on the lines that hold no such op."""
    aliases: dict[str, str] = {}
    target = default_target or ""
    for number, line in enumerate(lines, 1):
        if line.startswith("module"):
            found = _TARGET.search(line)
            target = found.group(1) if found else target
        elif line.startswith("#"):
            definition = _DEF.match(line.rstrip())
            if definition:
                aliases[definition.group(1)] = definition.group(2)
        elif any(needle in line for needle in needles):
            yield number, line, target, aliases
