"""Proton profiles: the Hatchet JSON that `proton.finalize()` writes (`<name>.hatchet`).

The file is a JSON list of two, the call tree and a device map::

    [{"frame": {"name": "ROOT", "type": "function"}, "metrics": {...}, "children": [...]},
     {"CUDA": {"0": {"arch": "90", "num_sms": 132, ...}}}]

Older Proton wrote the tree alone (a JSON object) and capitalised two keys (`Time (ns)`, `Count`);
both spellings are read, under today's names. Each node's metrics are its own (exclusive): the
viewer sums subtrees. Under ROOT come `proton.scope` frames, under them (or under ROOT) kernel
frames, named by `launch_metadata` where the kernel has one (`matmul_kernel [M=1024, ...]`).

- timing mode (cupti): a kernel frame holds `count` (launches), `time (ns)` and any
  `launch_metadata` metrics (`flops16`, `bytes`).
- PC sampling (`mode="pcsampling"`): each Triton kernel frame gets one child per source line,
  `/path/k.py:38@attn_fwd_tma`, holding `num_samples`, `num_stalled_samples` and `stalled_*`
  reasons. With `USE_IR_LOC=ttgir` the file is the cached `.ttgir`
  (`.../cache/<hash>/k.ttgir:135@k`), which names the compilation by its cache hash.
- instrumentation (`backend="instrumentation"`): a kernel frame with no metrics of its own whose
  children are `pl.enter_scope` regions (`load`, `store`) with `cycles`; such regions are kept
  by name, and counted as lines only where their name is a `file:line` location.

A kernel seen under several `proton.scope`s is one entry per scope (its `scopes`), never summed across
them: an autotuning scope holds every config's launches under one name, a steady-state one the pick's.
Kernel totals are the sums over the kernel frame's whole subtree, so a kernel's lines plus what no
line holds (its `unattributed` part) always add up to its total. Labels that are not amounts
(`device_id`, `device_type`) are kept apart and never summed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from parsers import json_numbers
from parsers.profiles.profile_records import Kernel, Profile, ProfileError, add_into, line_kind, metric_info

__all__ = ["is_hatchet", "parse_hatchet"]

_OLD_NAMES = {"Time (ns)": "time (ns)", "Count": "count"}
_LABELS = {"device_id", "device_type"}
# Metrics of the launch itself: a frame with any of them is a kernel.
_KERNEL_KEYS = {"count", "time (ns)"}
_CYCLE_KEYS = {"cycles", "normalized_cycles"}
# `file:line@function`; the file may hold colons (a Windows drive) and @ (rare), so match from the end.
_LINE_FRAME = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<function>[^@/]*)$")


def is_hatchet(path: str, head: bytes) -> bool:
    """A `.hatchet` file by name (so a broken one is still reported as a profile), or JSON whose
    first object is a Hatchet frame."""
    if path.endswith(".hatchet"):
        return True
    start = head.lstrip()[:200]
    return start[:1] in (b"[", b"{") and b'"frame"' in start and (path.endswith(".json") or b'"metrics"' in head)


def _metrics(raw: object) -> tuple[dict[str, float], dict[str, str]]:
    """(amounts, labels) of one node: numbers under today's names; labels and non-numbers apart."""
    amounts: dict[str, float] = {}
    labels: dict[str, str] = {}
    if not isinstance(raw, dict):
        return amounts, labels
    for key, value in raw.items():
        name = _OLD_NAMES.get(key, key)
        if value is None:  # a number json_numbers refused (NaN, 1e400): left out, as the file's warning says
            continue
        if name in _LABELS or isinstance(value, bool) or not isinstance(value, (int, float)):
            labels[name] = str(value)
        else:
            amounts[name] = amounts.get(name, 0) + value
    return amounts, labels


@dataclass
class _Node:
    name: str
    amounts: dict[str, float]
    children: list[_Node] = field(default_factory=list)


def _node(raw: object, depth: int = 0) -> _Node:
    if depth > 200:
        raise ProfileError("the tree is nested deeper than 200 frames")
    if not isinstance(raw, dict) or not isinstance(raw.get("frame"), dict):
        raise ProfileError("a tree node without a frame")
    amounts, _ = _metrics(raw.get("metrics"))
    children = raw.get("children") or []
    if not isinstance(children, list):
        raise ProfileError(f"the children of {raw['frame'].get('name')!r} are not a list")
    return _Node(str(raw["frame"].get("name", "")), amounts, [_node(child, depth + 1) for child in children])


def _subtree_sum(node: _Node) -> dict[str, float]:
    total = dict(node.amounts)
    for child in node.children:
        add_into(total, _subtree_sum(child))
    return total


def _is_kernel(node: _Node) -> bool:
    if _KERNEL_KEYS & node.amounts.keys():
        return True
    if any(_LINE_FRAME.match(child.name) for child in node.children):
        return True
    # instrumentation: a frame whose children are all cycle-counted leaves (its regions) is the kernel;
    # and a leaf with launch metadata only (`bytes`, `flops16`) is a kernel whose regions were not recorded
    if node.children:
        return all(not child.children and _CYCLE_KEYS & child.amounts.keys() for child in node.children)
    return bool(node.amounts)


def base_name(name: str) -> str:
    """The kernel's own name: `launch_metadata` appends ` [M=1024, ...]` to it."""
    bracket = name.find(" [")
    return name[:bracket] if bracket > 0 and name.endswith("]") else name


def _kernel(node: _Node, scope: str) -> Kernel:
    kernel = Kernel(name=node.name, base=base_name(node.name), scopes_seen={scope} if scope else set())
    kernel.totals = _subtree_sum(node)
    add_into(kernel.unattributed, node.amounts)
    for child in node.children:
        match = _LINE_FRAME.match(child.name)
        amounts = _subtree_sum(child)
        if match is None:
            kernel.add_region(child.name, amounts)
            add_into(kernel.unattributed, amounts)
            continue
        path = match.group("file")
        kernel.add_line(line_kind(path), path, int(match.group("line")), amounts)
    kernel.count = int(node.amounts.get("count", 0)) if "count" in node.amounts else None
    kernel.time_ns = node.amounts.get("time (ns)")
    return kernel


def _walk(node: _Node, scope: str, out: list[Kernel]) -> None:
    for child in node.children:
        if _is_kernel(child):
            out.append(_kernel(child, scope))
        else:
            _walk(child, f"{scope}/{child.name}" if scope else child.name, out)


def _mode(kernels: list[Kernel], names: set[str]) -> str:
    if any(name.startswith(("num_samples", "stalled_")) for name in names):
        return "pcsampling"
    if "cycles" in names or any(kernel.regions for kernel in kernels):
        return "instrumentation"
    return "timing" if "time (ns)" in names else "other"


def parse_hatchet(data: bytes) -> Profile:
    """One Proton profile from the whole file's bytes (the caller caps their size)."""
    try:
        document, dropped = json_numbers.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise ProfileError(f"not valid JSON ({error})") from None
    except RecursionError:
        raise ProfileError("JSON nested too deeply to read") from None
    devices: object = {}
    if isinstance(document, list):
        if not document:
            raise ProfileError("an empty JSON list, not a Hatchet tree")
        tree = document[0]
        devices = document[1] if len(document) > 1 else {}
    else:
        tree = document
    root = _node(tree)
    kernels: list[Kernel] = []
    if _is_kernel(root) and root.name != "ROOT":
        kernels.append(_kernel(root, ""))
    else:
        _walk(root, "", kernels)
    # One kernel launched under several scopes (an autotuning scope that times every config under one
    # name, then a steady-state one) stays one entry per scope: summing them would mix the two.
    merged: dict[tuple[str, str], Kernel] = {}
    for kernel in kernels:
        key = (",".join(sorted(kernel.scopes_seen)), kernel.name)
        if key in merged:
            merged[key].merge(kernel)
        else:
            merged[key] = kernel
    names = {name for kernel in merged.values() for name in kernel.totals}
    return Profile(
        tool="proton",
        mode=_mode(list(merged.values()), names),
        kernels=list(merged.values()),
        metrics=[metric_info(name) for name in sorted(names)],
        devices=devices if isinstance(devices, dict) else {},
        notes=[note] if (note := json_numbers.dropped_note(dropped)) else [],
    )
