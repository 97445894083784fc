"""Flags on a kernel's history: a step between two consecutive points of one series is `worse` or
`better` when spill bytes appear or change, registers change by at least a threshold percent or
occupancy changes, the time per launch changes by at least a threshold percent (both points
profiled), an op group (TMA, MMA, barriers...) appears or vanishes in the final TTGIR, or the
compile starts or stops failing. Pure: points in, flags out (app/insight/kernel_history.py adds
the compare link and the first pass whose effect differs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

METRICS = ("spills", "registers", "occupancy", "time", "ops", "status")
# Groups that are the hardware doing the work (losing one is worse); others (barriers, shared memory
# traffic, layout conversions) cost time where they appear.
ACCELERATING_GROUPS = frozenset({"descriptor", "tma", "tdm", "mma", "async", "tmem", "warpspec"})


@dataclass(frozen=True)
class Thresholds:
    registers_percent: float = 5.0
    time_percent: float = 5.0

    @classmethod
    def from_settings(cls, settings: Any) -> Thresholds:
        return cls(settings.history_register_change_percent, settings.history_time_change_percent)


def _percent(before: float, after: float) -> float:
    return abs(after - before) * 100.0 / before if before else (100.0 if after else 0.0)


def step_flags(before: dict[str, Any], after: dict[str, Any], thresholds: Thresholds) -> list[dict[str, Any]]:
    """The flags of one step, each {"metric", "before", "after", "direction", "detail"}."""
    flags: list[dict[str, Any]] = []

    def flag(metric: str, old: Any, new: Any, worse: bool, detail: str = "") -> None:
        flags.append({"metric": metric, "before": old, "after": new, "direction": "worse" if worse else "better",
                      "detail": detail})

    failed_before, failed_after = before.get("status") == "failed", after.get("status") == "failed"
    if failed_before != failed_after:
        flag("status", before.get("status"), after.get("status"), failed_after)
    if failed_before or failed_after:
        return flags  # a failed compile has no binary: its numbers say nothing
    old, new = before.get("spill_bytes"), after.get("spill_bytes")
    if old is not None and new is not None and old != new:
        flag("spills", old, new, new > old, "spill bytes per thread (local memory)")
    old, new = before.get("registers"), after.get("registers")
    if old is not None and new is not None and old != new and _percent(old, new) >= thresholds.registers_percent:
        flag("registers", old, new, new > old, f"{_percent(old, new):.1f}% change")
    old, new = before.get("occupancy"), after.get("occupancy")
    if old is not None and new is not None and old != new:
        flag("occupancy", old, new, new < old)
    old, new = before.get("time_ns"), after.get("time_ns")
    if old and new and _percent(old, new) >= thresholds.time_percent:
        flag("time", old, new, new > old, f"{_percent(old, new):.1f}% change in time per launch")
    old_ops, new_ops = before.get("ops"), after.get("ops")
    if old_ops is not None and new_ops is not None and (old_ops or new_ops):
        for group in sorted(set(old_ops) | set(new_ops)):
            had, has = bool(old_ops.get(group)), bool(new_ops.get(group))
            if had != has:
                lost = had and not has
                flag("ops", old_ops.get(group, 0), new_ops.get(group, 0),
                     lost if group in ACCELERATING_GROUPS else not lost,
                     f"op group {group} {'vanished' if lost else 'appeared'}")
    return flags


def series_flags(points: list[dict[str, Any]], thresholds: Thresholds) -> list[dict[str, Any]]:
    """Flags between consecutive points (in the order given), each with `from_index` and `to_index`."""
    out = []
    for index in range(1, len(points)):
        for found in step_flags(points[index - 1], points[index], thresholds):
            out.append({**found, "from_index": index - 1, "to_index": index})
    return out
