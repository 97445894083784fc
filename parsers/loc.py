"""Map each line of an IR text back to the Python source lines it came from.

``resolve(text, kind)`` returns one :class:`LineLocs` per line of ``text.split("\\n")``.
The module is pure: no web, no database, no import of ``app``.

What is read, per kind
----------------------
MLIR (``mlir``, ``ttir``, ``ttgir``, ``source``, ``glir``)
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
LLVM IR (``llir``, ``llvm``)
    ``!dbg !N`` (and MIR's ``debug-location !N``) on instructions; metadata is read in a
    first pass: ``!DILocation(line, column, scope, inlinedAt)`` follows ``inlinedAt`` for
    the caller frames, and scopes (``!DISubprogram``, ``!DILexicalBlock[File]``) lead to
    ``!DIFile(filename, directory)``. A ``define ... !dbg !N`` line maps to the
    subprogram's ``def`` line. When the metadata is absent (function-only pass dumps,
    MIR) the ``; k.py:13:19 @[ caller.py:30:5 ]`` comment LLVM prints is used instead,
    with file names as printed (base names).
PTX (``ptx``)
    ``.loc F L C`` sets the location for the following instructions until the next
    ``.loc`` (or the end of the function); ``.file F "/path/k.py"`` (with optional
    timestamp/size, or ``"dir" "name"``) names the file. The
    ``.loc F L C, function_name $L__info_stringN, inlined_at F2 L2 C2`` form adds the
    caller frame, and the caller's own ``inlined_at`` (from the latest ``.loc`` at that
    position) is followed for deeper inlining.
AMDGCN (``amdgcn``)
    Like PTX, with ``.file F "/dir" "k.py" md5 0x...`` or ``.file F "/path/k.py"`` and
    flags after the column (``prologue_end``, ``is_stmt 0``). The inlining chain is only
    in the comment (``; standard.py:43:13 @[ kernels.py:75:17 ]``); its base names are
    mapped back to the full ``.file`` paths.
SASS (``sass``)
    nvdisasm's ``-g``/``-gi`` line info: ``//## File "/path/k.py", line 12`` sets the location of the
    instructions after it (``/*0040*/ ...``) until the next such comment or section;
    ``inlined at "/path/k.py", line 30`` adds caller frames, innermost first. Without line info
    (cuobjdump, or a cubin built without it) no line is located.

A text holding several dumps (a whole log) is cut at each ``IR Dump`` header line
(``// -----// IR Dump ...``, ``; *** IR Dump ...``): alias and metadata tables belong to
their own dump (an LLVM dump without metadata borrows the latest earlier one's).

Lines without a location get empty ``frames``: braces, blank lines, labels, directives,
alias and metadata definitions (``#loc3 = loc(...)``, ``!12 = !DILocation(...)``: they
define locations, they are not ops). Line 0 means "no source line" (DWARF) and is dropped.
In PTX/AMDGCN the ``.loc`` line itself carries the location it sets, so a highlighted
block includes its header.

Frames and the primary frame
----------------------------
``frames`` is innermost first: ``callsite(callee at caller)`` gives ``[callee..., caller...]``,
``fused[a, b]`` gives ``a``'s frames then ``b``'s. ``name`` is the first NameLoc name met
walking the location the same way (outermost name of a NameLoc chain).

**Primary rule** (the frame shown in the gutter): the innermost frame whose file is not
library code; if every frame is library code, the outermost frame. Library code is
Triton's own Python package (a path containing ``/triton/language/``,
``/triton/experimental/``, ``/site-packages/triton/`` or ``/dist-packages/triton/``: e.g.
``standard.py``, ``core.py``, ``math.py``) and, in the same spirit, Inductor's runtime
helpers inlined into generated kernels (``/torch/_inductor/runtime/``). So a
``tl.cdiv`` call shows the kernel line that called it, not ``standard.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "KINDS",
    "LineLocs",
    "LlvmLocations",
    "SourceLoc",
    "is_library_file",
    "lines_by_source",
    "llvm_by_node_applies",
    "llvm_lines_by_node",
    "llvm_node_counts",
    "match_source",
    "resolve",
]


@dataclass(frozen=True)
class SourceLoc:
    file: str  # path as recorded ("/home/dev/kernels/kernels.py")
    line: int
    col: int | None


@dataclass
class LineLocs:
    frames: list[SourceLoc]  # innermost first; empty if unknown
    primary: SourceLoc | None  # the frame to show in the gutter
    name: str | None  # NameLoc name if any ("x_ptr")


MLIR_KINDS = frozenset({"mlir", "ttir", "ttgir", "source", "glir"})
LLVM_KINDS = frozenset({"llir", "llvm"})
KINDS = MLIR_KINDS | LLVM_KINDS | {"ptx", "amdgcn", "sass"}

# (frames, primary, name): the resolved value of one location, shared between lines.
_Resolved = tuple[tuple[SourceLoc, ...], SourceLoc | None, str | None]
_UNKNOWN: _Resolved = ((), None, None)

_LIBRARY_PATH = re.compile(
    r"/triton/language/|/triton/experimental/|/(?:site|dist)-packages/triton/|/torch/_inductor/runtime/"
)


def is_library_file(path: str) -> bool:
    """True for Triton's (and Inductor's runtime) library files, which the primary frame skips."""
    return _LIBRARY_PATH.search(path.replace("\\", "/")) is not None


def _primary(frames: tuple[SourceLoc, ...]) -> SourceLoc | None:
    for frame in frames:
        if not is_library_file(frame.file):
            return frame
    return frames[-1] if frames else None


def _resolved(frames: tuple[SourceLoc, ...], name: str | None) -> _Resolved:
    frames = tuple(frame for frame in frames if frame.line > 0)
    return (frames, _primary(frames), name)


def _line_locs(value: _Resolved) -> LineLocs:
    return LineLocs(list(value[0]), value[1], value[2])


_NO_LOCS = LineLocs([], None, None)  # shared by every line without a location: read, never changed


# A new dump inside one text (a whole log): alias and metadata tables restart there.
_DUMP_HEADER = re.compile(r"//\s*-----//.*IR Dump|[;#]?\s*\*\*\* IR Dump")


def _segments(lines: list[str]) -> list[tuple[int, int]]:
    starts = [0]
    for index, line in enumerate(lines):
        if index and line[:1] in ("/", ";", "*", "#") and "IR Dump" in line and _DUMP_HEADER.match(line):
            starts.append(index)
    ends = starts[1:] + [len(lines)]
    return list(zip(starts, ends, strict=True))


def resolve(text: str, kind: str) -> list[LineLocs]:
    """One :class:`LineLocs` per line of ``text.split("\\n")``; see the module docstring."""
    if kind not in KINDS:
        raise ValueError(f"unknown IR kind {kind!r}; expected one of {sorted(KINDS)}")
    lines = text.split("\n")
    if kind in MLIR_KINDS:
        return _resolve_mlir(lines)
    if kind in LLVM_KINDS:
        return _resolve_llvm(lines)
    if kind == "sass":
        return _resolve_sass(lines)
    return _resolve_asm(lines, kind)


def lines_by_source(locs: list[LineLocs]) -> dict[tuple[str, int], list[int]]:
    """``(file, line) -> [0-based IR line indexes]`` by primary frame, for "click a Python line"."""
    index: dict[tuple[str, int], list[int]] = {}
    for line_index, line_locs in enumerate(locs):
        primary = line_locs.primary
        if primary is not None:
            index.setdefault((primary.file, primary.line), []).append(line_index)
    return index


def _path_parts(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]


def match_source(loc_file: str, candidates: Iterable[str]) -> str | None:
    """The candidate sharing the longest path suffix with ``loc_file`` (at least the file name).

    Recorded paths are absolute paths on the machine that compiled; uploaded sources have
    their own paths, so ``/home/dev/kernels/kernels.py`` matches ``sm90_mix/src/kernels.py``
    and ``/tmp/wl/x/inductor/kd/ckd....py`` matches ``src/inductor/kd/ckd....py``. Ties go
    to the candidate with fewer extra directories, then to the earlier candidate.
    """
    wanted = _path_parts(loc_file)
    if not wanted:
        return None
    best: str | None = None
    best_key: tuple[int, int] = (0, 0)
    for candidate in candidates:
        parts = _path_parts(candidate)
        common = 0
        for mine, theirs in zip(reversed(wanted), reversed(parts), strict=False):
            if mine != theirs:
                break
            common += 1
        if common == 0:
            continue
        key = (common, -(len(parts) - common))
        if best is None or key > best_key:
            best, best_key = candidate, key
    return best


# --------------------------------------------------------------------------- MLIR

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
_HEX_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})|\\(.)")


class _LocSyntaxError(ValueError):
    pass


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    return _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), body)


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
        self._alias_cache: dict[str, _Resolved] = {}
        self._alias_bodies: dict[str, _Resolved] = {}  # "#loc12" -> its value, for lines ending in it
        self._in_progress: set[str] = set()

    def alias(self, alias: str) -> _Resolved:
        cached = self._alias_cache.get(alias)
        if cached is not None:
            return cached
        definition = self._alias_defs.get(alias)
        if definition is None or alias in self._in_progress:
            return _UNKNOWN  # undefined, or a reference cycle
        self._in_progress.add(alias)
        try:
            text, start = definition
            value = self._simple_alias(text, start) or self.parse(text, start)[0]
        except (_LocSyntaxError, ValueError, IndexError, RecursionError):
            value = _UNKNOWN
        finally:
            self._in_progress.discard(alias)
        self._alias_cache[alias] = value
        return value

    def _simple_alias(self, text: str, start: int) -> _Resolved | None:
        """The common alias bodies, by one regex: "file":L:C, "name"(#a), callsite(#a at #b)."""
        match = _SIMPLE_ALIAS_BODY.match(text, start)
        if match is None:
            return None
        file, line, col, name, child, callee, caller = match.groups()
        if file is not None:
            return _resolved((SourceLoc(file, int(line), int(col)),), None)
        if name is not None:
            value = self.alias(child)
            return (value[0], value[1], name)
        callee_value, caller_value = self.alias(callee), self.alias(caller)
        name = callee_value[2] if callee_value[2] is not None else caller_value[2]
        return _resolved(callee_value[0] + caller_value[0], name)

    def parse_loc_call(self, text: str, start: int) -> tuple[_Resolved, int]:
        """Parse the body of ``loc(`` whose body starts at ``start``; returns the index after ``)``."""
        value, index = self.parse(text, start)
        index = _WS.match(text, index).end()
        if index >= len(text) or text[index] != ")":
            raise _LocSyntaxError("expected ')' closing loc(")
        return value, index + 1

    def parse(self, text: str, index: int) -> tuple[_Resolved, int]:
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
            string = _unescape(text[index + 1 : end - 1])
            if end < len(text) and text[end] == ":":
                match = _LINE_COL.match(text, end)
                if match is None:
                    raise _LocSyntaxError("bad line:col")
                col = match.group(2)
                frame = SourceLoc(string, int(match.group(1)), int(col) if col is not None else None)
                return _resolved((frame,), None), match.end()
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
            return _UNKNOWN, index
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
            return _resolved(callee[0] + caller[0], name), index + 1
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
                return _UNKNOWN, index + 1
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
                    return _resolved(frames, name), index + 1
                raise _LocSyntaxError("expected ',' or ']' in fused")
        raise _LocSyntaxError(f"unknown location form {word!r}")

    def line_value(self, line: str) -> _Resolved | None:
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
        last_top: _Resolved | None = None
        last_any: _Resolved | None = None
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


def _resolve_mlir(lines: list[str]) -> list[LineLocs]:
    result: list[LineLocs] = []
    for start, end in _segments(lines):
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
        shared: dict[int, tuple[_Resolved, LineLocs]] = {}
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
                made = shared[id(value)] = (value, _line_locs(value))
            result.append(made[1])
    return result


# --------------------------------------------------------------------------- LLVM IR

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


def _join_path(directory: str | None, filename: str) -> str:
    if not directory or filename.startswith("/") or re.match(r"[A-Za-z]:[\\/]", filename):
        return filename
    return directory.rstrip("/") + "/" + filename


class _LlvmMetadata:
    def __init__(self, definitions: Callable[[str], tuple[str, str] | None]) -> None:
        self._definitions = definitions  # "12" -> ("DILocation", payload)
        self._cache: dict[str, _Resolved] = {}
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
                    result = _join_path(_field(payload, "directory"), _unescape(filename))
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

    def location(self, node: str) -> _Resolved:
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
        value = _resolved(tuple(frames), None)
        self._cache[node] = value
        return value


def _comment_frames(comment: str, by_basename: dict[str, str]) -> tuple[SourceLoc, ...]:
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
                path = _join_path(_field(payload, "directory"), _unescape(filename))
                paths[path.rsplit("/", 1)[-1]] = path
    return paths


def _resolve_llvm(lines: list[str]) -> list[LineLocs]:
    result: list[LineLocs] = []
    carried: dict[str, tuple[str, str]] = {}  # metadata of earlier dumps, for function-only dumps
    for start, end in _segments(lines):
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
                    value = _resolved(_comment_frames(line[comment_at + 1 :], known_files), None)
            result.append(_line_locs(value))
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
            value = _resolved(_comment_frames(comment, self._known_files), None)
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


# --------------------------------------------------------------------------- PTX / AMDGCN

_FILE_DIRECTIVE = re.compile(
    r'\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s*,\s*\d+\s*,\s*\d+)?(?:\s+"((?:[^"\\]|\\.)*)")?'
)
_LOC_DIRECTIVE = re.compile(r"\s*\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?(.*)$")
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_PTX_FUNCTION_START = re.compile(r"\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(?:entry|func)\b")
_AMDGCN_RESET = (".Lfunc_end", ".section", ".amdgpu_metadata", ".end_amdgpu_metadata", ".size", ".end_amdhsa")


def _asm_files(lines: list[str]) -> dict[str, str]:
    files: dict[str, str] = {}
    for line in lines:
        if ".file" in line:
            match = _FILE_DIRECTIVE.match(line)
            if match is not None:
                first, second = _unescape(match.group(2)), match.group(3)
                files[match.group(1)] = _join_path(first, _unescape(second)) if second is not None else first
    return files


def _resolve_asm(lines: list[str], kind: str) -> list[LineLocs]:
    files = _asm_files(lines)
    by_basename: dict[str, str] = {}
    for path in files.values():
        by_basename.setdefault(path.rsplit("/", 1)[-1], path)

    comment_marker = "//" if kind == "ptx" else ";"
    # (file, line, col) -> the caller chain of the latest .loc at that position (PTX inlined_at).
    callers_of: dict[tuple[str, int, int], tuple[SourceLoc, ...]] = {}
    current: _Resolved | None = None
    cache: dict[str, _Resolved] = {}
    result: list[LineLocs] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(comment_marker):
            result.append(LineLocs([], None, None))
            continue
        first = stripped[0]
        if first == ".":
            if stripped.startswith(".loc") and (len(stripped) == 4 or stripped[4] in " \t"):
                current = cache.get(stripped)
                if current is None:
                    current = _asm_loc(stripped, files, by_basename, callers_of, comment_marker)
                    if not current[0] or "inlined_at" not in stripped:
                        cache[stripped] = current
                result.append(_line_locs(current))
                continue
            if kind == "ptx":
                if _PTX_FUNCTION_START.match(stripped):
                    current = None
            elif stripped.startswith(_AMDGCN_RESET):
                current = None
            result.append(LineLocs([], None, None))
            continue
        if kind == "ptx" and line.startswith("}"):
            current = None
        if stripped.endswith(":") or (kind == "amdgcn" and ":" in stripped.split(";", 1)[0].split()[0]):
            if kind == "amdgcn" and not stripped.startswith("."):
                current = None  # a function symbol, or the metadata YAML after the code
            result.append(LineLocs([], None, None))
            continue
        if current is not None and (first.isalpha() or first in "@_"):
            result.append(_line_locs(current))
        else:
            result.append(LineLocs([], None, None))
    return result


def _asm_loc(
    stripped: str,
    files: dict[str, str],
    by_basename: dict[str, str],
    callers_of: dict[tuple[str, int, int], tuple[SourceLoc, ...]],
    comment_marker: str,
) -> _Resolved:
    match = _LOC_DIRECTIVE.match(stripped)
    if match is None:
        return _UNKNOWN
    file_number, line_text, col_text, rest = match.groups()
    line = int(line_text)
    col = int(col_text) if col_text else 0
    if line == 0:
        return _UNKNOWN
    file = files.get(file_number, file_number)
    frame = SourceLoc(file, line, col or None)
    comment_at = rest.find(comment_marker)
    directive = rest if comment_at < 0 else rest[:comment_at]
    comment = "" if comment_at < 0 else rest[comment_at + len(comment_marker) :]
    callers: tuple[SourceLoc, ...] = ()
    inlined = _INLINED_AT.search(directive)
    if inlined is not None:
        caller_file = files.get(inlined.group(1), inlined.group(1))
        caller_key = (caller_file, int(inlined.group(2)), int(inlined.group(3)))
        caller = SourceLoc(caller_file, caller_key[1], caller_key[2] or None)
        callers = (caller, *callers_of.get(caller_key, ()))
        callers_of[(file, line, col)] = callers
    elif "@[" in comment:
        # AMDGCN prints the inlining chain only in its comment: "k.py:13:19 @[ caller.py:30:5 ]".
        callers = _comment_frames(comment[comment.find("@[") :], by_basename)
    return _resolved((frame, *callers), None)


# nvdisasm -g / -gi line info: `//## File "/p/k.py", line 12` before the instructions it covers,
# with ` inlined at "/p/k.py", line 30` once per caller (innermost first) under -gi.
_SASS_LINE_INFO = re.compile(r'\s*//## File "((?:[^"\\]|\\.)*)", line (\d+)((?: inlined at "(?:[^"\\]|\\.)*", line \d+)*)')
_SASS_INLINED = re.compile(r' inlined at "((?:[^"\\]|\\.)*)", line (\d+)')


def _resolve_sass(lines: list[str]) -> list[LineLocs]:
    """SASS from nvdisasm: a line-info comment sets the location of the instructions (`/*0040*/ ...`)
    after it, until the next one or the next section (a new function)."""
    current: _Resolved | None = None
    cache: dict[str, _Resolved] = {}
    result: list[LineLocs] = []
    none = LineLocs([], None, None)
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("/*"):
            result.append(_line_locs(current) if current is not None else none)
        elif stripped.startswith("//## File"):
            current = cache.get(stripped)
            if current is None:
                current = _sass_loc(stripped)
                cache[stripped] = current
            result.append(_line_locs(current))
        else:
            if stripped.startswith((".section", "//----")):
                current = None
            result.append(none)
    return result


def _sass_loc(stripped: str) -> _Resolved:
    match = _SASS_LINE_INFO.match(stripped)
    if match is None:
        return _UNKNOWN
    frames = [SourceLoc(_unescape(match.group(1)), int(match.group(2)), None)]
    for caller in _SASS_INLINED.finditer(match.group(3)):
        frames.append(SourceLoc(_unescape(caller.group(1)), int(caller.group(2)), None))
    return _resolved(tuple(frames), None)
