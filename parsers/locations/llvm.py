"""LLVM IR locations (``llir``, ``llvm``): ``!dbg !N`` and the ``!DILocation`` metadata behind it.

``!dbg !N`` (and MIR's ``debug-location !N``) on instructions; metadata is read in a
first pass: ``!DILocation(line, column, scope, inlinedAt)`` follows ``inlinedAt`` for
the caller frames, and scopes (``!DISubprogram``, ``!DILexicalBlock[File]``) lead to
``!DIFile(filename, directory)``. A ``define ... !dbg !N`` line maps to the
subprogram's ``def`` line. When the metadata is absent (function-only pass dumps,
MIR) the ``; k.py:13:19 @[ caller.py:30:5 ]`` comment LLVM prints is used instead,
with file names as printed (base names).

A log of several dumps is read dump by dump; a dump without metadata (a function's dump)
borrows the latest earlier dump's table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from parsers.locations.frames import (
    LineLocs,
    Resolved,
    SourceLoc,
    dump_segments,
    join_path,
    line_locs,
    resolved,
    unescape,
)

_METADATA_DEF = re.compile(r"!(\d+)\s*=\s*(?:distinct\s+)?!(DI\w+)\((.*)\)\s*$")
_DBG_REF = re.compile(r"(?:!dbg|debug-location)\s+!(\d+)")
_FIELD_PATTERNS = {
    field: re.compile(rf"\b{field}:\s*(?:!(\d+)|(\d+)|\"((?:[^\"\\]|\\.)*)\")")
    for field in ("line", "column", "scope", "inlinedAt", "file", "filename", "directory")
}
# "; kernels.py:15:11 @[ standard.py:43:13 @[ kernels.py:75:17 ] ]" printed by LLVM (MIR, AMDGCN).
_COMMENT_CHAIN = re.compile(r"([^\s;@\[\]]+):(\d+):(\d+)")


def _field(payload: str, field: str) -> str | None:
    match = _FIELD_PATTERNS[field].search(payload)
    if match is None:
        return None
    for group in match.groups():
        if group is not None:
            return group
    return None


class _LlvmMetadata:
    def __init__(self, definitions: Callable[[str], tuple[str, str] | None]) -> None:
        self._definitions = definitions  # "12" -> ("DILocation", payload)
        self._cache: dict[str, Resolved] = {}
        self._file_cache: dict[str, str | None] = {}

    def _file_of_scope(self, node: str) -> str | None:
        if node in self._file_cache:
            return self._file_cache[node]
        self._file_cache[node] = None  # cycle guard
        result: str | None = None
        definition = self._definitions(node)
        if definition is not None:
            kind, payload = definition
            if kind == "DIFile":
                filename = _field(payload, "filename")
                if filename is not None:
                    result = join_path(_field(payload, "directory"), unescape(filename))
            else:
                file_ref = _field(payload, "file")
                if file_ref is not None:
                    result = self._file_of_scope(file_ref)
                if result is None:
                    scope = _field(payload, "scope")
                    if scope is not None:
                        result = self._file_of_scope(scope)
        self._file_cache[node] = result
        return result

    def location(self, node: str) -> Resolved:
        cached = self._cache.get(node)
        if cached is not None:
            return cached
        frames: list[SourceLoc] = []
        seen: set[str] = set()
        current: str | None = node
        while current is not None and current not in seen:
            seen.add(current)
            definition = self._definitions(current)
            if definition is None:
                break
            kind, payload = definition
            line = _field(payload, "line")
            if kind == "DILocation":
                scope = _field(payload, "scope")
                file = self._file_of_scope(scope) if scope is not None else None
                column = _field(payload, "column")
                if file is not None and line is not None:
                    frames.append(SourceLoc(file, int(line), int(column) if column else None))
                current = _field(payload, "inlinedAt")
            elif kind == "DISubprogram":
                file = self._file_of_scope(current)
                if file is not None and line is not None:
                    frames.append(SourceLoc(file, int(line), None))
                current = None
            else:
                current = None
        value = resolved(tuple(frames), None)
        self._cache[node] = value
        return value


def comment_frames(comment: str, by_basename: dict[str, str]) -> tuple[SourceLoc, ...]:
    """Frames of LLVM's printed chain ``k.py:13:19 @[ caller.py:30:5 ]``; base names mapped to paths."""
    frames = []
    for name, line, col in _COMMENT_CHAIN.findall(comment):
        path = name if "/" in name else by_basename.get(name, name)
        frames.append(SourceLoc(path, int(line), int(col) or None))
    return tuple(frames)


def _difile_paths(*tables: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Base name -> full path of every ``!DIFile`` in the tables (the first table wins)."""
    paths: dict[str, str] = {}
    for table in reversed(tables):
        for kind, payload in table.values():
            filename = _field(payload, "filename") if kind == "DIFile" else None
            if filename is not None:
                path = join_path(_field(payload, "directory"), unescape(filename))
                paths[path.rsplit("/", 1)[-1]] = path
    return paths


def resolve_llvm(lines: list[str]) -> list[LineLocs]:
    result: list[LineLocs] = []
    carried: dict[str, tuple[str, str]] = {}  # metadata of earlier dumps, for function-only dumps
    for start, end in dump_segments(lines):
        own: dict[str, tuple[str, str]] = {}
        definition_lines: set[int] = set()
        for index in range(start, end):
            line = lines[index]
            if line[:1] == "!":
                match = _METADATA_DEF.match(line)
                if match is not None:
                    own[match.group(1)] = (match.group(2), match.group(3))
                    definition_lines.add(index)

        def definitions(node: str, own: dict[str, tuple[str, str]] = own) -> tuple[str, str] | None:
            found = own.get(node)
            return found if found is not None else carried.get(node)

        metadata = _LlvmMetadata(definitions)
        known_files: dict[str, str] | None = None  # base name -> DIFile path, built when needed
        for index in range(start, end):
            line = lines[index]
            if index in definition_lines or ("!dbg" not in line and "debug-location" not in line):
                result.append(LineLocs([], None, None))
                continue
            references = _DBG_REF.findall(line)
            if not references:
                result.append(LineLocs([], None, None))
                continue
            value = metadata.location(references[-1])
            if not value[0]:
                # No metadata in this text (function-only pass dump, MIR): use LLVM's comment.
                comment_at = line.find(";", line.rfind("!" + references[-1]))
                if comment_at >= 0:
                    if known_files is None:
                        known_files = _difile_paths(own, carried)
                    value = resolved(comment_frames(line[comment_at + 1 :], known_files), None)
            result.append(line_locs(value))
        carried.update(own)
    return result


class LlvmLocations:
    """The ``!dbg`` nodes of one LLVM IR metadata table, resolved per node, for counting an IR
    text's lines by source without resolving each line (:func:`llvm_node_counts`). For texts
    that :func:`llvm_by_node_applies` accepts, a line gets what :func:`resolve` gives it: its
    node's location in the table, else LLVM's location comment after the reference (MIR dumps
    print no metadata; the comment names files by base name, mapped through the table's files)."""

    def __init__(self, metadata_text: str) -> None:
        definitions: dict[str, tuple[str, str]] = {}
        start = metadata_text.find("\n!")  # the table closes a module: skip the code
        if start >= 0 or metadata_text.startswith("!"):
            for match in _METADATA_LINE.finditer(metadata_text, max(start, 0)):
                definitions[match.group(1)] = (match.group(2), match.group(3))
        self._definitions = definitions
        self._metadata = _LlvmMetadata(definitions.get)
        self._known_files: dict[str, str] | None = None
        self.size = 64 * len(definitions) + len(metadata_text) // 64

    def primary(self, node: str, comment: str = "") -> SourceLoc | None:
        value = self._metadata.location(node)
        if not value[0] and comment:
            if self._known_files is None:
                self._known_files = _difile_paths(self._definitions)
            value = resolved(comment_frames(comment, self._known_files), None)
        return value[1]


_METADATA_LINE = re.compile(r"^!(\d+)[ \t]*=[ \t]*(?:distinct[ \t]+)?!(DI\w+)\(([^\n]*)\)[ \t]*$", re.MULTILINE)
# A reference and the comment after it. LLVM prints at most one location per instruction line;
# a line with two (none in real dumps) counts twice here, where resolve() takes the last.
# One pattern per spelling (IR's `!dbg`, MIR's `debug-location`): a literal first is found fast.
_DBG_NODE = {
    word: re.compile(re.escape(word) + r"[ \t]+!(\d+)(?:[^\n;]*;([^\n]*))?") for word in ("!dbg", "debug-location")
}


def llvm_by_node_applies(text: str) -> bool:
    """Whether a text's lines can be counted by node: one dump (metadata tables restart at each
    dump header)."""
    return "IR Dump" not in text


def llvm_node_counts(text: str) -> dict[tuple[str, str], int]:
    """How many lines of an LLVM IR text reference each (``!dbg`` node, location comment)."""
    counts: Counter[tuple[str, str]] = Counter()
    for word, pattern in _DBG_NODE.items():
        if word in text:
            counts.update(pattern.findall(text))  # counted in C
    return counts


def llvm_lines_by_node(text: str) -> dict[str, list[int]]:
    """The 1-based lines (ascending, without repeats) that reference each ``!dbg`` node."""
    starts: list[tuple[int, str]] = []
    present = [pattern for word, pattern in _DBG_NODE.items() if word in text]
    for pattern in present:
        starts += [(match.start(), match.group(1)) for match in pattern.finditer(text)]
    if len(present) > 1:
        starts.sort()
    by_node: dict[str, list[int]] = {}
    line, position = 1, 0
    for start, node in starts:
        line += text.count("\n", position, start)
        position = start
        numbers = by_node.get(node)
        if numbers is None:
            by_node[node] = [line]
        elif numbers[-1] != line:
            numbers.append(line)
    return by_node
