"""tritonparse traces (meta-pytorch/tritonparse): NDJSON, one event per line.

What tritonparse 0.6 writes (`tritonparse.structured_logging`):
- raw traces `dedicated_log_triton_trace_*.ndjson`; with TRITON_TRACE_COMPRESSION=gzip or zstd the
  same records as `*.bin.ndjson`, one gzip member or zstd frame per record (parsers/inputs/sources.py
  decompresses both by their magic bytes, across members and frames, before this module reads them);
- parsed traces from `tritonparse parse` (`*_mapped.ndjson.gz`, `f0_fc0_a0_cai-.ndjson.gz`): the same
  compilation and launch events, one compilation per kernel hash, plus derived events
  (ir_analysis, launch_diff, autotune_analysis, ...) and source mappings that irlens does not need.

Events used here:
- `compilation`: payload.metadata (the cache's kernel JSON plus src_constants, times, cache_hit),
  payload.file_content (stage name -> text: `k.ttir`, `k.ttgir`, `k.llir`, `k.ptx`/`k.amdgcn`,
  `k.json`), payload.file_path, payload.python_source {file_path, start_line, end_line, code};
  `is_fake` marks one tritonparse inferred from a launch (no IR);
- `launch`: name, grid, stream, compilation_metadata (with the kernel's hash), extracted_args;
- `autotune` (Triton 3.9+'s autotuning listener): best_config, configs_timings;
- `autotune_analysis` (parsed traces): winner_compilation_hash and the listener's result, if any.

Records are read one line at a time, so memory holds one record, never the whole trace; a record
longer than MAX_RECORD is skipped and reported. Pure: no database, no web.
"""

from __future__ import annotations

import io
import json
import math
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from parsers.caches import cache

MAX_RECORD = 256 << 20  # one record's JSON line; a compilation holds every stage's text
_DERIVED = frozenset({
    "ir_analysis", "launch_diff", "autotune_summary", "roofline", "compilation_analysis", "launch_analysis",
})
_AUTOTUNER = "triton/runtime/autotuner.py"


def is_trace(path: str, head: bytes) -> bool:
    """A tritonparse trace by its name (after any .gz/.zst was taken off) or by its first record."""
    name = posixpath.basename(path)
    if name.endswith(".ndjson"):
        return True
    return re.match(rb'\s*\{\s*"event_type"\s*:\s*"(compilation|launch|autotune)"', head) is not None


@dataclass
class TraceStage:
    name: str  # the file_content key: "add_kernel.ttgir"
    kind: str  # "ttgir", "json", ...
    text: str
    path: str | None  # where the file was on the traced machine (payload.file_path)


@dataclass
class PythonSource:
    path: str
    start_line: int
    end_line: int | None
    code: str


@dataclass
class TraceCompilation:
    line: int
    kernel: str | None
    hash: str | None
    metadata: dict[str, Any]
    stages: list[TraceStage]
    python_source: PythonSource | None
    autotune_session: str | None  # the user's call stack around the autotuner, as tritonparse groups them
    fake: bool = False  # tritonparse inferred it from a launch: no IR


@dataclass
class TraceLaunch:
    line: int
    kernel: str | None
    hash: str | None
    grid: list[Any] | None
    stream: Any
    metadata: dict[str, Any]  # compilation_metadata: the compiled kernel's settings
    arguments: dict[str, Any]  # extracted_args: name -> {type, shape, dtype, value, ...}
    autotune_session: str | None
    benchmark: bool  # launched by the autotuner's benchmark (_bench), not by the program


@dataclass
class TraceAutotune:
    """The autotuner's result for one session: an `autotune` event, or a parsed trace's analysis."""

    line: int
    kernel: str | None
    session: str | None
    best_config: str | None
    configs_timings: dict[str, Any] = field(default_factory=dict)
    winner_hash: str | None = None


@dataclass
class TraceProblem:
    line: int
    message: str


@dataclass
class TraceSkipped:
    """Events irlens reads past, counted by type for the input's note."""

    counts: dict[str, int]


TraceRecord = TraceCompilation | TraceLaunch | TraceAutotune | TraceProblem | TraceSkipped


def read_trace(stream: BinaryIO) -> Iterator[TraceRecord]:
    """Every event of a trace, in order; bad lines become TraceProblems. Ends with a TraceSkipped."""
    reader = stream if hasattr(stream, "peek") else io.BufferedReader(stream, 1 << 20)  # type: ignore[arg-type]
    skipped: dict[str, int] = {}
    number = 0
    while True:
        line = reader.readline(MAX_RECORD + 1)
        if not line:
            break
        number += 1
        if len(line.rstrip(b"\r\n")) > MAX_RECORD:
            dropped = 0 if line.endswith(b"\n") else _skip_line(reader)
            yield TraceProblem(number, f"a record of {(len(line) + dropped) / 1e6:.0f} MB, more than irlens reads "
                                       f"({MAX_RECORD >> 20} MiB): skipped")
            continue
        if not line.strip():
            continue
        try:
            # NaN, Infinity and 1e999 (a failed autotune config times as inf) as None: JSON columns refuse them
            record = json.loads(line, parse_constant=_no_constant, parse_float=_finite_float)
        except ValueError as error:
            cut = not line.endswith(b"\n")
            yield TraceProblem(number, "the trace ends inside a record (cut short): skipped" if cut
                               else f"not a JSON record ({error}): skipped")
            continue
        if not isinstance(record, dict):
            yield TraceProblem(number, f"a JSON {type(record).__name__}, not an event: skipped")
            continue
        event = record.get("event_type")
        try:
            if event == "compilation":
                yield _compilation(record, number)
            elif event == "launch":
                yield _launch(record, number)
            elif event == "autotune":
                yield _autotune(record, number)
            elif event == "autotune_analysis":
                analysis = _autotune_analysis(record, number)
                if analysis is not None:
                    yield analysis
            else:
                key = event if isinstance(event, str) and event in _DERIVED else "unknown"
                skipped[key] = skipped.get(key, 0) + 1
        except _BadEvent as error:
            yield TraceProblem(number, f"{event} event: {error}: skipped")
    yield TraceSkipped(skipped)


class _BadEvent(ValueError):
    pass


def _skip_line(reader: BinaryIO) -> int:
    dropped = 0
    while True:
        chunk = reader.readline(1 << 20)
        dropped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return dropped


def _dict(value: Any, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _BadEvent(f"{what} is a {type(value).__name__}, not an object")
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _stage_kind(name: str) -> str:
    if name.endswith(".json"):
        return "json"
    kind = cache.stage_of(name)
    if kind:
        return kind
    return name.rsplit(".", 1)[-1][:16] if "." in name else "text"


def _compilation(record: dict, line: int) -> TraceCompilation:
    payload = _dict(record.get("payload"), "payload")
    metadata = _dict(payload.get("metadata"), "payload.metadata")
    contents = _dict(payload.get("file_content"), "payload.file_content")
    paths = payload.get("file_path") if isinstance(payload.get("file_path"), dict) else {}
    stages = [
        TraceStage(name, _stage_kind(name), text, _str(paths.get(name)))
        for name, text in contents.items()
        if isinstance(text, str)
    ]
    source = payload.get("python_source")
    python_source = None
    if isinstance(source, dict) and isinstance(source.get("code"), str):
        start = source.get("start_line")
        end = source.get("end_line")
        python_source = PythonSource(
            path=_str(source.get("file_path")) or "",
            start_line=start if isinstance(start, int) and start > 0 else 1,
            end_line=end if isinstance(end, int) else None,
            code=source["code"],
        )
    return TraceCompilation(
        line=line,
        kernel=_str(metadata.get("name")),
        hash=_str(metadata.get("hash")),
        metadata=metadata,
        stages=stages,
        python_source=python_source,
        autotune_session=autotune_session(record.get("stack")),
        fake=record.get("is_fake") is True,
    )


def _launch(record: dict, line: int) -> TraceLaunch:
    metadata = _dict(record.get("compilation_metadata"), "compilation_metadata")
    grid = record.get("grid")
    stack = record.get("stack")
    launch_type = record.get("autotune_launch_type")  # parsed traces say it outright
    return TraceLaunch(
        line=line,
        kernel=_str(record.get("name")) or _str(metadata.get("name")),
        hash=_str(metadata.get("hash")),
        grid=grid if isinstance(grid, list) else ([grid] if isinstance(grid, int) else None),
        stream=record.get("stream") if isinstance(record.get("stream"), (int, str)) else None,
        metadata=metadata,
        arguments=_dict(record.get("extracted_args"), "extracted_args"),
        autotune_session=autotune_session(stack),
        benchmark=launch_type == "benchmark" or (launch_type is None and _in_benchmark(stack)),
    )


def _autotune(record: dict, line: int) -> TraceAutotune:
    timings = record.get("configs_timings")
    return TraceAutotune(
        line=line,
        kernel=_str(record.get("kernel_name")),
        session=autotune_session(record.get("stack")),
        best_config=_str(record.get("best_config")),
        configs_timings=timings if isinstance(timings, dict) else {},
    )


def _autotune_analysis(record: dict, line: int) -> TraceAutotune | None:
    result = record.get("autotune_result") if isinstance(record.get("autotune_result"), dict) else {}
    timings = result.get("configs_timings")
    return TraceAutotune(
        line=line,
        kernel=_str(record.get("name")),
        session=_str(record.get("session_id")),
        best_config=_str(result.get("best_config")),
        configs_timings=timings if isinstance(timings, dict) else {},
        winner_hash=_str(record.get("winner_compilation_hash")),
    )


def _frames(stack: Any) -> list[dict]:
    return [frame for frame in stack if isinstance(frame, dict)] if isinstance(stack, list) else []


def _in_benchmark(stack: Any) -> bool:
    return any(_AUTOTUNER in str(f.get("filename", "")) and f.get("name") == "_bench" for f in _frames(stack))


def autotune_session(stack: Any) -> str | None:
    """The user's frames above Triton's autotuner (its `run` or `_bench`), as one key: compilations
    and launches of one autotuning call share it. None outside the autotuner. tritonparse groups
    sessions the same way (parse/sourcemap_utils.get_autotune_session_id)."""
    frames = _frames(stack)
    for index, frame in enumerate(frames):
        if _AUTOTUNER in str(frame.get("filename", "")) and frame.get("name") in ("run", "_bench"):
            user = frames[:index]
            if not user:
                return None
            return " > ".join(f"{frame.get('filename')}:{frame.get('line')}:{frame.get('name')}" for frame in user)
    return None


def _no_constant(name: str) -> None:
    return None


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


# -- configs ----------------------------------------------------------------------------------------
_CONFIG_FIELDS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def constexpr_names(compilation: TraceCompilation, argument_names: list[str]) -> dict[str, Any]:
    """The kernel's constexpr values by name. metadata.src_constants keys them by argument position
    ("(5,)"); a launch's extracted_args (every argument, in signature order: `argument_names`) or the
    def line of the traced Python source names the positions. Positions no name was found for keep
    their key."""
    constants = compilation.metadata.get("src_constants")
    if not isinstance(constants, dict):
        return {}
    names = argument_names or _def_arguments(compilation.python_source)
    named: dict[str, Any] = {}
    for key, value in constants.items():
        match = re.fullmatch(r"\((\d+),\)", str(key))
        position = int(match.group(1)) if match else None
        if position is not None and position < len(names):
            named[names[position]] = value
        else:
            named[str(key)] = value
    return named


def _def_arguments(source: PythonSource | None) -> list[str]:
    if source is None:
        return []
    match = re.search(r"^\s*def\s+\w+\s*\((.*?)\)\s*(->[^:]*)?:", source.code, re.DOTALL | re.MULTILINE)
    if not match:
        return []
    names = []
    for part in match.group(1).split(","):
        name = part.split(":", 1)[0].split("=", 1)[0].strip().lstrip("*")
        if name:
            names.append(name)
    return names


def kernel_config(compilation: TraceCompilation, argument_names: list[str]) -> dict[str, Any]:
    """What an autotune Config sets: the constexprs, then num_warps, num_stages, num_ctas, maxnreg."""
    config = dict(constexpr_names(compilation, argument_names))
    for name in _CONFIG_FIELDS:
        if name in compilation.metadata:
            config[name] = compilation.metadata[name]
    return config


def parse_config_text(text: str) -> dict[str, str]:
    """Triton's str(Config): "BLOCK: 64, num_warps: 2, num_ctas: 1, num_stages: 2, maxnreg: None"."""
    parsed = {}
    for part in text.split(", "):
        name, _, value = part.partition(": ")
        if name:
            parsed[name.strip()] = value.strip()
    return parsed


def config_matches(config: dict[str, Any], text: str) -> bool:
    """Whether a compilation's config is the one Triton printed: every field both name agrees."""
    printed = parse_config_text(text)
    shared = [name for name in config if name in printed]
    return bool(shared) and all(str(config[name]) == printed[name] for name in shared)
