"""What the gap text of a log holds: diagnostics, timing reports, and plain lines.

The log scanner hands over blocks of consecutive lines outside any IR dump. `parse_gap` turns one
block into records, in order, covering every line exactly once:

- `TimingReport` (see `parsers.logs.timing`);
- `Diagnostic`, of three kinds:
  - "mlir": MLIR's diagnostics. SourceMgr style (`/path/k.py:236:5: error: ...`, then the source line
    and a caret, then `...: note: ...` lines with their own source and caret, and the stack trace of
    `note: diagnostic emitted with trace:`), `<unknown>:0: error: ...`, `loc("k.py":12:3): error: ...`
    (MLIR's default handler) and a bare `error: ...`. Severities error, warning, remark and note;
    notes after an error, warning or remark belong to it.
  - "traceback": a Python traceback, chained ones ("The above exception was the direct cause ...",
    "During handling of the above exception ...") included in the same record.
  - "llvm": LLVM's fatal error, `LLVM ERROR: ...` (code generation gave up; the process aborts
    next, so no traceback follows), with the crash report LLVM may print under it;
  - "compilation_error": a traceback with a Triton `CompilationError`, whose message is
    `at L:C:`, up to 12 lines of the function's source, a caret, then the error (or nothing);
    the excerpt's `def NAME(` line names the kernel (`Diagnostic.kernel`).
- `LogLines`: everything else (warnings, prints), kept verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from parsers.logs.timing import TIMING_BANNER, TimingReport, looks_like_timing_start, parse_timing_at

__all__ = [
    "TIMING_BANNER",
    "Diagnostic",
    "LogLines",
    "TimingReport",
    "looks_like_diagnostic_start",
    "looks_like_timing_start",
    "parse_gap",
]

# How far to look for the caret under a diagnostic whose message runs over several lines
# (`note: see current operation:` with an op that has regions).
MAX_MESSAGE_LINES = 1000
# A CompilationError shows at most 12 source lines, then the caret.
_EXCERPT_LINES = 13

_SEVERITY = r"(?P<severity>error|warning|remark|note)"
_SOURCE_MGR = re.compile(
    rf"^(?P<file><unknown>|(?:[A-Za-z]:)?[^:\n]+?):(?P<line>\d+)(?::(?P<col>\d+))?: {_SEVERITY}: (?P<message>.*)$"
)
_LOC_HEAD = re.compile(rf"^loc\((?P<loc>.*?)\): {_SEVERITY}: (?P<message>.*)$")
_BARE_HEAD = re.compile(rf"^{_SEVERITY}: (?P<message>.*)$")
_LOC_POSITION = re.compile(r'"(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)')
_CARET = re.compile(r"^\s*~*\^~*\s*$")
_STACK_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-fA-F]+\b")

_TRACEBACK_START = re.compile(r"^(?:\s*\+ )?(?:Exception Group )?Traceback \(most recent call last\):\s*$")
_FRAME = re.compile(r'^[\s|]+File "(?P<file>[^"]*)", line (?P<line>\d+)')  # "|" inside exception groups
_EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::(?: (?P<message>.*))?)?$")
_GROUPED_EXCEPTION = re.compile(r"^[\s|+-]*\| (?P<line>[A-Za-z_][\w.]*(?:Error|Exception|Group)(?::.*)?)$")
_PYTHON_WARNING = re.compile(r"^.+?:\d+: [A-Z]\w*Warning: ")  # warnings.showwarning's first line
_CHAIN_SEPARATORS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
_COMPILATION_AT = re.compile(
    r"^(?:(?P<type>[\w.]*CompilationError): )?at (?:(?P<file>.+?):)?(?P<line>\d+):(?P<col>\d+):(?P<rest>.*)$"
)
LLVM_ERROR = "LLVM ERROR: "
_SOURCE_MISSING = ("<source unavailable>", "<source empty>")
_DEF_LINE = re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>[A-Za-z_]\w*)\s*\(")


@dataclass
class Diagnostic:
    kind: str  # "mlir" | "traceback" | "compilation_error" | "llvm"
    severity: str  # "error" | "warning" | "remark" | "note"
    # One-line summary: for mlir the text after "error: "; for a traceback the final "ExcType: message"
    # line; for a compilation error the error printed under the caret (or, when Triton printed none,
    # the cause's "ExcType: message" line, else the "...CompilationError: at L:C:" line).
    message: str
    # Where it points. mlir: the file:line:col of the head line (`<unknown>` gives None). traceback:
    # the innermost frame of the last traceback. compilation_error: "at L:C:" as printed: line counted
    # from the function's `def` line (1), col 0-based, file only when printed there (Triton does not).
    file: str | None
    line: int | None
    col: int | None
    text: str  # the whole block as logged, joined with "\n"
    first_line: int  # 1-based log line number
    # mlir: the note lines attached to this diagnostic, as logged. traceback and compilation_error:
    # the "ExcType: message" line of each earlier exception of the chain, in printed order.
    notes: list[str] = field(default_factory=list)
    # traceback and compilation_error: every (file, line) frame of the chain, in printed order.
    frames: list[tuple[str, int]] = field(default_factory=list)
    # compilation_error: the function being compiled, from the `def NAME(` line of the outermost
    # CompilationError's source excerpt (the excerpt starts at the def only when the error's line is
    # at most 12); a nested helper's error names the kernel that called it.
    kernel: str | None = None

    @property
    def last_line(self) -> int:
        return self.first_line + self.text.count("\n")


@dataclass
class LogLines:
    """Consecutive lines that are nothing irlens recognises, kept verbatim."""

    first_line: int
    text: str

    @property
    def last_line(self) -> int:
        return self.first_line + self.text.count("\n")


Lines = list[tuple[int, str]]


def _joined(lines: Lines, start: int, end: int) -> str:
    return "\n".join(text for _, text in lines[start:end])


# -- MLIR diagnostics ---------------------------------------------------------------------------


@dataclass
class _Head:
    severity: str
    message: str
    file: str | None
    line: int | None
    col: int | None
    has_excerpt: bool  # SourceMgr style with a real position: a source line and caret may follow


def _position_in_loc(loc: str) -> tuple[str | None, int | None, int | None]:
    match = _LOC_POSITION.search(loc)
    if match is None:
        return None, None, None
    return match["file"], int(match["line"]), int(match["col"])


def _may_be_head(text: str) -> bool:
    return "error: " in text or "warning: " in text or "remark: " in text or "note: " in text


def _match_head(text: str) -> _Head | None:
    if not _may_be_head(text):
        return None
    match = _SOURCE_MGR.match(text)
    if match:
        message = match["message"]
        if match["file"] == "<unknown>":
            # `<unknown>:0: error: loc("x_ptr"): ...`: the location is written into the message.
            file = line = col = None
            if message.startswith("loc("):
                file, line, col = _position_in_loc(message.split("): ", 1)[0])
            return _Head(match["severity"], message, file, line, col, False)
        col = int(match["col"]) if match["col"] else None
        return _Head(match["severity"], message, match["file"], int(match["line"]), col, True)
    match = _LOC_HEAD.match(text)
    if match:
        file, line, col = _position_in_loc(match["loc"])
        return _Head(match["severity"], match["message"], file, line, col, False)
    match = _BARE_HEAD.match(text)
    if match:
        return _Head(match["severity"], match["message"], None, None, None, False)
    return None


def looks_like_diagnostic_start(text: str) -> bool:
    """The first line of an MLIR diagnostic, of a Python traceback or of an LLVM fatal error."""
    return (
        _match_head(text) is not None or _TRACEBACK_START.match(text) is not None or text.startswith(LLVM_ERROR)
    )


def _is_record_start(text: str) -> bool:
    return looks_like_timing_start(text) or looks_like_diagnostic_start(text)


def _after_excerpt(lines: Lines, start: int, head: _Head) -> int:
    """Index after the source line and caret that SourceMgr prints under a located message."""
    if not head.has_excerpt:
        return start + 1
    limit = min(len(lines), start + 1 + MAX_MESSAGE_LINES)
    for index in range(start + 1, limit):
        text = lines[index][1]
        if not text.strip() or _is_record_start(text):
            break
        if index >= start + 2 and _CARET.match(text):
            caret_col = text.index("^") + 1
            # Directly under the source line is the usual layout; further down (a message that ran
            # over several lines) the caret must sit at the diagnostic's column.
            if index == start + 2 or caret_col == head.col:
                return index + 1
    return start + 1


def _after_stack(lines: Lines, index: int) -> int:
    """Skip the stack trace that `note: diagnostic emitted with trace:` prints, and its blank line."""
    count = len(lines)
    if index >= count or not _STACK_FRAME.match(lines[index][1]):
        return index
    while index < count and _STACK_FRAME.match(lines[index][1]):
        index += 1
    if index + 1 < count and not lines[index][1].strip():
        following = _match_head(lines[index + 1][1])
        if following is not None and following.severity == "note":
            index += 1
    return index


def _parse_mlir_at(lines: Lines, start: int) -> tuple[Diagnostic, int] | None:
    head = _match_head(lines[start][1])
    if head is None:
        return None
    index = _after_stack(lines, _after_excerpt(lines, start, head))
    notes: list[str] = []
    if head.severity != "note":
        while index < len(lines):
            note = _match_head(lines[index][1])
            if note is None or note.severity != "note":
                break
            notes.append(lines[index][1])
            index = _after_stack(lines, _after_excerpt(lines, index, note))
    diagnostic = Diagnostic(
        kind="mlir",
        severity=head.severity,
        message=head.message,
        file=head.file,
        line=head.line,
        col=head.col,
        text=_joined(lines, start, index),
        first_line=lines[start][0],
        notes=notes,
    )
    return diagnostic, index


# -- Python tracebacks ---------------------------------------------------------------------------


@dataclass
class _Segment:
    """One exception of a chain: its traceback frames (if printed) and its exception line."""

    frames: list[tuple[str, int]]
    exception: str | None  # the "ExcType: message" line
    exception_type: str | None
    first_message: str  # the exception line's text after "ExcType: "
    message_start: int  # index of the exception line
    end: int  # index after the message


def _after_source_excerpt(lines: Lines, index: int) -> int:
    """Skip a CompilationError's source excerpt (which can hold blank lines) through its caret."""
    if index < len(lines) and lines[index][1].strip() in _SOURCE_MISSING:
        return index + 1
    for probe in range(index, min(len(lines), index + _EXCERPT_LINES)):
        text = lines[probe][1]
        if _is_record_start(text) or text in _CHAIN_SEPARATORS:
            break
        if _CARET.match(text):
            return probe + 1
    return index


def _is_compilation_header(text: str, exception_type: str | None) -> re.Match[str] | None:
    match = _COMPILATION_AT.match(text)
    if match is None:
        return None
    if match["type"] or (exception_type or "").endswith("CompilationError"):
        return match
    return None


def _after_message(lines: Lines, index: int, exception_type: str, first_message: str) -> int:
    """Index after an exception's message, which starts on line `index` and may run on."""
    count = len(lines)
    after = index + 1
    if _is_compilation_header(first_message, exception_type) is not None:
        after = _after_source_excerpt(lines, after)
    while after < count:
        text = lines[after][1]
        if (
            not text.strip()
            or text in _CHAIN_SEPARATORS
            or _is_record_start(text)
            or _PYTHON_WARNING.match(text)
        ):
            break
        after += 1
        if _is_compilation_header(text, None) is not None:  # "CompilationError: at 8:11:" inside a message
            after = _after_source_excerpt(lines, after)
    return after


def _parse_segment(lines: Lines, index: int) -> _Segment:
    count = len(lines)
    frames: list[tuple[str, int]] = []
    if _TRACEBACK_START.match(lines[index][1]):
        index += 1
        while index < count and lines[index][1][:1] in (" ", "\t"):
            frame = _FRAME.match(lines[index][1])
            if frame:
                frames.append((frame["file"], int(frame["line"])))
            index += 1
    if index < count and lines[index][1].strip():
        match = _EXCEPTION_LINE.match(lines[index][1])
        if match:
            exception_type = match["type"]
            message = match["message"] or ""
            end = _after_message(lines, index, exception_type, message)
            return _Segment(frames, lines[index][1], exception_type, message, index, end)
    return _Segment(frames, None, None, "", index, index)


def _next_segment_start(lines: Lines, index: int) -> int | None:
    """After one exception of a chain: the index where the next one starts, if one does."""
    count = len(lines)
    probe = index
    while probe < count and not lines[probe][1].strip() and probe < index + 2:
        probe += 1
    if probe >= count or lines[probe][1] not in _CHAIN_SEPARATORS:
        return None
    probe += 1
    while probe < count and not lines[probe][1].strip() and probe < index + 5:
        probe += 1
    if probe < count and (_TRACEBACK_START.match(lines[probe][1]) or _EXCEPTION_LINE.match(lines[probe][1])):
        return probe
    return None


def _compilation_error(
    lines: Lines, segments: list[_Segment]
) -> tuple[str, int | None, int | None, str | None] | None:
    """(message, line, col, file) of the chain's first CompilationError, or None if it has none."""
    for position, segment in enumerate(segments):
        if segment.exception is None:
            continue
        for index in range(segment.message_start, segment.end):
            if index == segment.message_start:
                header = _is_compilation_header(segment.first_message, segment.exception_type)
            else:
                header = _is_compilation_header(lines[index][1], None)
            if header is None:
                continue
            after = _after_source_excerpt(lines, index + 1)
            message = next(
                (lines[k][1].strip() for k in range(after, segment.end) if lines[k][1].strip()), ""
            )
            if not message and position > 0 and segments[position - 1].exception:
                message = segments[position - 1].exception or ""
            if not message:
                message = lines[index][1].strip()
            return message, int(header["line"]), int(header["col"]), header["file"]
    return None


def _compiled_function(lines: Lines, segments: list[_Segment]) -> str | None:
    """The `def NAME(` of the chain's last (outermost: the kernel triton.compile was given)
    CompilationError excerpt, when that excerpt starts at the function's first line."""
    last: tuple[re.Match[str], int] | None = None
    for segment in segments:
        if segment.exception is None:
            continue
        for index in range(segment.message_start, segment.end):
            text = segment.first_message if index == segment.message_start else lines[index][1]
            header = _is_compilation_header(text, segment.exception_type if index == segment.message_start else None)
            if header is not None:
                last = header, index
    if last is None:
        return None
    header, index = last
    # Triton prints the last 12 source lines up to the error's line, counted from the def line (1).
    if int(header["line"]) > _EXCERPT_LINES - 1 or index + 1 >= len(lines):
        return None
    match = _DEF_LINE.match(lines[index + 1][1])
    return match["name"] if match else None


def _grouped_exceptions(lines: Lines, start: int, end: int) -> list[str]:
    """The `| ExcType: message` lines inside an exception group's box: the group's, then its members'."""
    found = (_GROUPED_EXCEPTION.match(lines[index][1]) for index in range(start, end))
    return [match["line"] for match in found if match]


def _parse_traceback_at(lines: Lines, start: int) -> tuple[Diagnostic, int] | None:
    if not _TRACEBACK_START.match(lines[start][1]):
        return None
    segments = [_parse_segment(lines, start)]
    while segments[-1].exception is not None:
        following = _next_segment_start(lines, segments[-1].end)
        if following is None:
            break
        segments.append(_parse_segment(lines, following))
    end = segments[-1].end
    notes = [segment.exception for segment in segments[:-1] if segment.exception]
    message = segments[-1].exception
    if message is None:
        grouped = _grouped_exceptions(lines, start, end)
        message = grouped[0] if grouped else lines[end - 1][1].strip()
        notes += grouped[1:]
    innermost = next((segment.frames[-1] for segment in reversed(segments) if segment.frames), None)
    file, line = innermost if innermost else (None, None)
    col: int | None = None
    kind = "traceback"
    kernel: str | None = None
    compilation = _compilation_error(lines, segments)
    if compilation is not None:
        kind = "compilation_error"
        message, line, col, file = compilation
        kernel = _compiled_function(lines, segments)
    diagnostic = Diagnostic(
        kind=kind,
        severity="error",
        message=message,
        file=file,
        line=line,
        col=col,
        text=_joined(lines, start, end),
        first_line=lines[start][0],
        notes=notes,
        frames=[frame for segment in segments for frame in segment.frames],
        kernel=kernel,
    )
    return diagnostic, end


# -- LLVM fatal errors -------------------------------------------------------------------------

# What LLVM's crash handler may print under a fatal error: the bug-report request, "Stack dump:",
# numbered program-argument / pass lines ("0.\tProgram arguments: ..."), and stack frames.
_LLVM_CRASH_LINE = re.compile(r"^(?:PLEASE submit a bug report|Stack dump:|\s*\d+\.\s|\s*#\d+ 0x[0-9a-fA-F]+\b)")


def _parse_llvm_error_at(lines: Lines, start: int) -> tuple[Diagnostic, int] | None:
    text = lines[start][1]
    if not text.startswith(LLVM_ERROR):
        return None
    end = start + 1
    while end < len(lines) and _LLVM_CRASH_LINE.match(lines[end][1]):
        end += 1
    message = text[len(LLVM_ERROR):].strip()
    diagnostic = Diagnostic(
        kind="llvm", severity="error", message=f"LLVM ERROR: {message}", file=None, line=None, col=None,
        text=_joined(lines, start, end), first_line=lines[start][0],
    )
    return diagnostic, end


# -- the gap ------------------------------------------------------------------------------------

Parser = Callable[[Lines, int], "tuple[TimingReport | Diagnostic, int] | None"]

# One entry per recognised kind: a cheap "does a record start on this line?" and its parser.
RECOGNISERS: list[tuple[Callable[[str], bool], Parser]] = [
    (looks_like_timing_start, parse_timing_at),
    (lambda text: _TRACEBACK_START.match(text) is not None, _parse_traceback_at),
    (lambda text: _match_head(text) is not None, _parse_mlir_at),
    (lambda text: text.startswith(LLVM_ERROR), _parse_llvm_error_at),
]


def parse_gap(lines: Lines, *, strict: bool = False) -> list[TimingReport | Diagnostic | LogLines]:
    """Records for one block of consecutive non-IR lines, in order, covering every line once.

    `lines` holds (1-based line number, text without newline) pairs. A recogniser that fails on
    its input leaves the lines as `LogLines`; with `strict=True` the exception propagates instead.
    """
    records: list[TimingReport | Diagnostic | LogLines] = []
    plain_start: int | None = None
    index = 0
    count = len(lines)
    while index < count:
        text = lines[index][1]
        parsed = None
        # Most gap lines start nothing: test that cheaply before asking each recogniser.
        maybe = text.startswith(("===-", LLVM_ERROR)) or "Traceback" in text or _may_be_head(text)
        for applies, parse in RECOGNISERS if maybe else ():
            if not applies(text):
                continue
            try:
                parsed = parse(lines, index)
            except Exception:
                if strict:
                    raise
                parsed = None
            if parsed is not None and parsed[1] > index:
                break
            parsed = None
        if parsed is None:
            if plain_start is None:
                plain_start = index
            index += 1
            continue
        if plain_start is not None:
            records.append(LogLines(lines[plain_start][0], _joined(lines, plain_start, index)))
            plain_start = None
        records.append(parsed[0])
        index = parsed[1]
    if plain_start is not None:
        records.append(LogLines(lines[plain_start][0], _joined(lines, plain_start, count)))
    return records
