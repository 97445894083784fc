"""MLIR locations (``mlir``, ``ttir``, ``ttgir``, ``source``, ``glir``): ``loc(...)`` on each line.

Location aliases ``#locN = loc(...)`` are collected first (some sit before ``module``,
the rest after the final ``} loc(#loc)``; they are numbered by first use, so they are
resolved lazily, memoised, and a reference cycle resolves to "unknown"). Every location
form is understood, nested or behind aliases: ``"file":L:C`` (and ranges
``"file":L:C to L2:C2`` / ``to :C2``), ``unknown``, NameLoc ``"x_ptr"(child)`` and bare
``"name"``, CallSiteLoc ``callsite(callee at caller)`` and FusedLoc ``fused[a, b]`` /
``fused<#llvm.di_subprogram<...>>[...]`` (the metadata is skipped with bracket and
string balancing). A line's op location is its LAST ``loc(...)`` outside any
bracket, which is the op's trailing one; argument locations written inline in
``(...)`` come earlier. A line with only bracketed locations (a ``tt.func`` header,
a block label ``^bb1(%a: i32 loc(...))``) takes the last known one of those.
"""

from __future__ import annotations

import re

from parsers.locations.frames import (
    UNKNOWN,
    LineLocs,
    Resolved,
    SourceLoc,
    dump_segments,
    line_locs,
    resolved,
    unescape,
)

_NO_LOCS = LineLocs([], None, None)  # shared by every line without a location: read, never changed

_ALIAS_DEF = re.compile(r"(#[A-Za-z_][\w$.-]*)\s*=\s*loc\(")
_ALIAS_NAME = re.compile(r"#[A-Za-z_][\w$.-]*")
_IDENT = re.compile(r"[A-Za-z_][\w$.]*")
_WS = re.compile(r"\s*")
# ":L:C", ":L", with an optional " to L2:C2" / " to :C2" range end.
_LINE_COL = re.compile(r":(\d+)(?::(\d+))?(?:\s+to\s+(?:\d+)?(?::\d+)?)?")
# Tokens a loc(...) scan cares about: strings (skipped), loc( at a word boundary, brackets.
_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.$@#-])loc\(|[()\[\]{}]')
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")
_SIMPLE_ALIAS_BODY = re.compile(
    r'(?:"([^"\\]*)":(\d+):(\d+)|"([^"\\]*)"\((#[\w$.-]+)\)|callsite\((#[\w$.-]+) at (#[\w$.-]+)\))\)\s*$'
)


class _LocSyntaxError(ValueError):
    pass


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _string_end(text: str, start: int) -> int:
    """Index just past the string literal whose opening quote is at ``start``."""
    match = _STRING.match(text, start)
    if match is None:
        raise _LocSyntaxError("unterminated string")
    return match.end()


def _skip_angle(text: str, start: int) -> int:
    """Index just past the ``<...>`` group opening at ``start`` (strings and nesting balanced)."""
    depth = 0
    index = start
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
            continue
        if char in "<([{":
            depth += 1
        elif char == ">":
            if index > 0 and text[index - 1] == "-":  # "->" in a type is not a closer
                index += 1
                continue
            depth -= 1
        elif char in ")]}":
            depth -= 1
        index += 1
        if depth == 0:
            return index
    raise _LocSyntaxError("unbalanced <...>")


class _MlirLocations:
    """Parses location expressions of one MLIR module, resolving aliases lazily."""

    def __init__(self, alias_defs: dict[str, tuple[str, int]]) -> None:
        self._alias_defs = alias_defs  # alias -> (line text, index just after "loc(")
        self._alias_cache: dict[str, Resolved] = {}
        self._alias_bodies: dict[str, Resolved] = {}  # "#loc12" -> its value, for lines ending in it
        self._in_progress: set[str] = set()

    def alias(self, alias: str) -> Resolved:
        cached = self._alias_cache.get(alias)
        if cached is not None:
            return cached
        definition = self._alias_defs.get(alias)
        if definition is None or alias in self._in_progress:
            return UNKNOWN  # undefined, or a reference cycle
        self._in_progress.add(alias)
        try:
            text, start = definition
            value = self._simple_alias(text, start) or self.parse(text, start)[0]
        except (_LocSyntaxError, ValueError, IndexError, RecursionError):
            value = UNKNOWN
        finally:
            self._in_progress.discard(alias)
        self._alias_cache[alias] = value
        return value

    def _simple_alias(self, text: str, start: int) -> Resolved | None:
        """The common alias bodies, by one regex: "file":L:C, "name"(#a), callsite(#a at #b)."""
        match = _SIMPLE_ALIAS_BODY.match(text, start)
        if match is None:
            return None
        file, line, col, name, child, callee, caller = match.groups()
        if file is not None:
            return resolved((SourceLoc(file, int(line), int(col)),), None)
        if name is not None:
            value = self.alias(child)
            return (value[0], value[1], name)
        callee_value, caller_value = self.alias(callee), self.alias(caller)
        name = callee_value[2] if callee_value[2] is not None else caller_value[2]
        return resolved(callee_value[0] + caller_value[0], name)

    def parse_loc_call(self, text: str, start: int) -> tuple[Resolved, int]:
        """Parse the body of ``loc(`` whose body starts at ``start``; returns the index after ``)``."""
        value, index = self.parse(text, start)
        index = _WS.match(text, index).end()
        if index >= len(text) or text[index] != ")":
            raise _LocSyntaxError("expected ')' closing loc(")
        return value, index + 1

    def parse(self, text: str, index: int) -> tuple[Resolved, int]:
        """Parse one location attribute starting at ``index``."""
        index = _WS.match(text, index).end()
        if index >= len(text):
            raise _LocSyntaxError("unexpected end of location")
        char = text[index]
        if char == "#":
            match = _ALIAS_NAME.match(text, index)
            if match is None:
                raise _LocSyntaxError("bad alias")
            return self.alias(match.group()), match.end()
        if char == '"':
            end = _string_end(text, index)
            string = unescape(text[index + 1 : end - 1])
            if end < len(text) and text[end] == ":":
                match = _LINE_COL.match(text, end)
                if match is None:
                    raise _LocSyntaxError("bad line:col")
                col = match.group(2)
                frame = SourceLoc(string, int(match.group(1)), int(col) if col is not None else None)
                return resolved((frame,), None), match.end()
            if end < len(text) and text[end] == "(":
                child, after = self.parse(text, end + 1)
                after = _WS.match(text, after).end()
                if after >= len(text) or text[after] != ")":
                    raise _LocSyntaxError("expected ')' closing a name location")
                return (child[0], child[1], string), after + 1
            return (((), None, string)), end
        match = _IDENT.match(text, index)
        if match is None:
            raise _LocSyntaxError(f"unexpected {char!r} in location")
        word = match.group()
        index = match.end()
        if word == "unknown":
            return UNKNOWN, index
        if word == "loc" and text.startswith("(", index):
            return self.parse_loc_call(text, index + 1)
        if word == "callsite" and text.startswith("(", index):
            callee, index = self.parse(text, index + 1)
            index = _WS.match(text, index).end()
            if not text.startswith("at", index):
                raise _LocSyntaxError("expected 'at' in callsite")
            caller, index = self.parse(text, index + 2)
            index = _WS.match(text, index).end()
            if index >= len(text) or text[index] != ")":
                raise _LocSyntaxError("expected ')' closing callsite")
            name = callee[2] if callee[2] is not None else caller[2]
            return resolved(callee[0] + caller[0], name), index + 1
        if word == "fused":
            if text.startswith("<", index):
                index = _skip_angle(text, index)
            index = _WS.match(text, index).end()
            if not text.startswith("[", index):
                raise _LocSyntaxError("expected '[' in fused")
            index += 1
            frames: tuple[SourceLoc, ...] = ()
            name: str | None = None
            index = _WS.match(text, index).end()
            if text.startswith("]", index):
                return UNKNOWN, index + 1
            while True:
                member, index = self.parse(text, index)
                frames += member[0]
                if name is None:
                    name = member[2]
                index = _WS.match(text, index).end()
                if text.startswith(",", index):
                    index += 1
                    continue
                if text.startswith("]", index):
                    return resolved(frames, name), index + 1
                raise _LocSyntaxError("expected ',' or ']' in fused")
        raise _LocSyntaxError(f"unknown location form {word!r}")

    def line_value(self, line: str) -> Resolved | None:
        """The op location of one line: the last ``loc(...)`` outside brackets, else the last one."""
        # Fast path: the line ends with its op's "loc(#alias)".
        if line.endswith(")"):
            start = line.rfind("loc(")
            if start >= 0 and (start == 0 or line[start - 1] in " \t"):
                body = line[start + 4 : -1]
                known = self._alias_bodies.get(body)
                if known is not None:
                    return known
                if body[:1] == "#" and _ALIAS_NAME.fullmatch(body):
                    value = self._alias_bodies[body] = self.alias(body)
                    return value
        last_top: Resolved | None = None
        last_any: Resolved | None = None
        depth = 0
        position = 0
        while True:
            match = _SCAN.search(line, position)
            if match is None:
                break
            token = match.group()
            position = match.end()
            if token == "loc(":
                try:
                    value, position = self.parse_loc_call(line, position)
                except (_LocSyntaxError, ValueError, IndexError):
                    continue
                if value[0] or last_any is None:
                    last_any = value  # inside brackets, an argument with a known location wins
                if depth == 0:
                    last_top = value
            elif token in _OPEN:
                depth += 1
            elif token in _CLOSE:
                depth = max(depth - 1, 0)
        return last_top if last_top is not None else last_any


def resolve_mlir(lines: list[str]) -> list[LineLocs]:
    result: list[LineLocs] = []
    for start, end in dump_segments(lines):
        alias_defs: dict[str, tuple[str, int]] = {}
        definition_lines: set[int] = set()
        for index in range(start, end):
            line = lines[index]
            if line[:1] == "#":
                match = _ALIAS_DEF.match(line)
                if match is not None:
                    alias_defs.setdefault(match.group(1), (line, match.end()))
                    definition_lines.add(index)
        locations = _MlirLocations(alias_defs)
        # Lines with the same location share one LineLocs (nothing changes them after this):
        # by the value's id, the value kept alive beside it so that no id is reused.
        shared: dict[int, tuple[Resolved, LineLocs]] = {}
        for index in range(start, end):
            line = lines[index]
            if index in definition_lines or "loc(" not in line:
                result.append(_NO_LOCS)
                continue
            value = locations.line_value(line)
            if value is None:
                result.append(_NO_LOCS)
                continue
            made = shared.get(id(value))
            if made is None:
                made = shared[id(value)] = (value, line_locs(value))
            result.append(made[1])
    return result
