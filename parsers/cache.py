"""Triton cache folders (`TRITON_CACHE_DIR`) and `TRITON_KERNEL_DUMP` folders.

A kernel folder holds `{name}.ttir/.ttgir/.llir/.ptx/...`, binaries, `{name}.json` metadata and
`__grp__{name}.json`. Kernel-dump folders have the stage files but no metadata.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

TEXT_STAGES = (".source", ".ttir", ".glir", ".ttgir", ".llir", ".ptx", ".amdgcn", ".sass")
BINARIES = (".cubin", ".hsaco")
STAGE_ORDER = ("source", "ttir", "glir", "ttgir", "llir", "ptx", "amdgcn", "sass", "json")


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
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_metadata(data: bytes) -> KernelMetadata | None:
    """Parse a metadata JSON tolerantly: fields come and go between Triton versions.

    Returns None when the JSON is not kernel metadata (no `name`/`hash`/`target`).
    """
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(raw, dict) or not ({"hash", "target", "name"} & raw.keys()):
        return None
    target = raw.get("target")
    target_text = None
    if isinstance(target, dict) and target.get("backend"):
        target_text = f"{target['backend']}:{target.get('arch')}"
    elif isinstance(target, list) and len(target) >= 2:  # Triton 3.0 wrote [backend, arch, warp_size]
        target_text = f"{target[0]}:{target[1]}"
    elif isinstance(target, str):
        target_text = target
    version = raw.get("triton_version")
    return KernelMetadata(
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        hash=raw.get("hash") if isinstance(raw.get("hash"), str) else None,
        target=target_text,
        triton_version=version if isinstance(version, str) else None,
        num_warps=_int(raw.get("num_warps")),
        num_stages=_int(raw.get("num_stages")),
        num_ctas=_int(raw.get("num_ctas")),
        shared=_int(raw.get("shared")),
        raw=raw,
    )
