"""Triton cache folders (`TRITON_CACHE_DIR`) and `TRITON_KERNEL_DUMP` folders.

A kernel folder holds `{name}.ttir/.ttgir/.llir/.ptx/...`, binaries, `{name}.json` metadata and
`__grp__{name}.json`. Kernel-dump folders have the stage files but no metadata.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

from parsers import json_numbers

TEXT_STAGES = (".source", ".ttir", ".glir", ".ttgir", ".llir", ".ptx", ".amdgcn", ".sass")
BINARIES = (".cubin", ".hsaco")
STAGE_ORDER = ("source", "ttir", "glir", "ttgir", "llir", "ptx", "amdgcn", "sass", "json")


# The stages Triton writes after its first IR (`.source`); TRITON_STORE_BINARY_ONLY=1 keeps none of them.
_LATER_STAGES = frozenset(("ttir", "glir", "ttgir", "llir", "ptx", "amdgcn"))
BINARY_ONLY_WHY = (
    "metadata and a binary (and the first IR, .source), no TTIR, TTGIR, "
    "LLVM IR or PTX. Triton stores only these under TRITON_STORE_BINARY_ONLY=1, which Helion's autotuner sets "
    "while it benchmarks configs (their entries stay in the cache with HELION_KEEP_CACHE=1); run with "
    "TRITON_STORE_BINARY_ONLY=0 to keep every stage (`irlens capture` does)")
BINARY_ONLY_NOTE = "a binary-only cache entry: " + BINARY_ONLY_WHY


def is_binary_only(kinds: set[str]) -> bool:
    """Whether a cache entry's file kinds are those TRITON_STORE_BINARY_ONLY=1 leaves: metadata and a
    binary, none of the stages after the first IR."""
    return "json" in kinds and bool(kinds & {"cubin", "hsaco"}) and not kinds & _LATER_STAGES


def stage_of(path: str) -> str | None:
    """"ttgir" for ".../add_kernel.ttgir"; None for files that are not kernel stages."""
    for suffix in TEXT_STAGES:
        if path.endswith(suffix):
            return suffix[1:]
    return None


def is_binary(path: str) -> bool:
    return path.endswith(BINARIES)


def is_group_file(path: str) -> bool:
    return posixpath.basename(path).startswith("__grp__") and path.endswith(".json")


def folder_of(path: str) -> str:
    return posixpath.dirname(path)


@dataclass
class KernelMetadata:
    """The fields of a cache entry's `{name}.json` that irlens shows; `raw` keeps them all."""

    name: str | None
    hash: str | None
    target: str | None
    triton_version: str | None
    num_warps: int | None
    num_stages: int | None
    num_ctas: int | None
    shared: int | None
    raw: dict[str, Any] = field(default_factory=dict)


def _int(value: Any) -> int | None:
    """An integer an Integer column holds (32 bits in PostgreSQL); None otherwise (said as ignored)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31 else None


_INT_FIELDS = ("num_warps", "num_stages", "num_ctas", "shared")
_STR_FIELDS = ("name", "hash", "triton_version")


def parse_metadata(data: bytes) -> KernelMetadata | None:
    """Parse a metadata JSON tolerantly: fields come and go between Triton versions.

    Returns None when the JSON is not kernel metadata (no `name`/`hash`/`target`).
    """
    return read_metadata(data)[0]


def read_metadata(data: bytes) -> tuple[KernelMetadata | None, list[str]]:
    """The metadata, and what is wrong with the file (for the user): not JSON, cut short, not an
    object, fields of the wrong type (ignored), numbers JSON has no room for (NaN, 1e999: kept as null,
    since PostgreSQL refuses them in a json column). Never raises."""
    try:
        raw, dropped = json_numbers.loads(data)  # NaN, Infinity, 1e999, 10**30: as null, listed
    except RecursionError:
        return None, ["kernel metadata JSON nested too deeply to read: its fields are not shown"]
    except UnicodeDecodeError as error:
        return None, [f"kernel metadata JSON is not UTF-8 ({error.reason} at byte {error.start}): its fields are not shown"]
    except ValueError as error:
        cut = isinstance(error, json.JSONDecodeError) and (
            error.pos >= len(data.rstrip()) or error.msg.startswith("Unterminated")
        )
        what = "cut short" if cut else "not valid JSON"
        return None, [f"kernel metadata JSON is {what} ({error}): its fields are not shown"]
    if not isinstance(raw, dict):
        return None, [f"kernel metadata JSON is a {type(raw).__name__}, not an object: its fields are not shown"]
    # Every Triton writes a hash or a target, or (2.x) a name with the launch options; a stray config
    # file beside a cache ({"name": ...}) is no kernel's metadata and must not become a compilation.
    if not ({"hash", "target"} & raw.keys() or "name" in raw and {"num_warps", "num_stages", "shared"} & raw.keys()):
        return None, ["a .json file that is not Triton kernel metadata (no hash, target, or name with num_warps)"]
    problems = [
        f"metadata holds {', '.join(sorted(set(dropped)))}, which JSON or a 64-bit column cannot hold: kept as null"
    ] if dropped else []
    problems += [
        f"metadata field {name!r} is {type(raw[name]).__name__} {_short(raw[name])}, not {kind}: ignored"
        for names, check, kind in ((_INT_FIELDS, _int, "an integer"), (_STR_FIELDS, _str, "a string"))
        for name in names
        if raw.get(name) is not None and check(raw[name]) is None
    ]
    target = raw.get("target")
    target_text = None
    if isinstance(target, dict) and isinstance(target.get("backend"), str):
        target_text = f"{target['backend']}:{target.get('arch')}"
    elif isinstance(target, list) and len(target) >= 2:  # Triton 3.0 wrote [backend, arch, warp_size]
        target_text = f"{target[0]}:{target[1]}"
    elif isinstance(target, str):
        target_text = target
    elif target is not None:
        problems.append(f"metadata field 'target' is {type(target).__name__} {_short(target)}: ignored")
    return KernelMetadata(
        name=_str(raw.get("name")),
        hash=_str(raw.get("hash")),
        target=target_text,
        triton_version=_str(raw.get("triton_version")),
        num_warps=_int(raw.get("num_warps")),
        num_stages=_int(raw.get("num_stages")),
        num_ctas=_int(raw.get("num_ctas")),
        shared=_int(raw.get("shared")),
        raw=raw,
    ), problems


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
