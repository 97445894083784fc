"""What a profile parser gives (parsers/profiles/proton.py, parsers/profiles/ncu.py): kernels with their
metric totals, their per-source-line and per-SASS-instruction metrics, and what each metric means.

Every kernel keeps, for each metric, `totals` = the sum over `lines` + `unattributed`: what no
line holds (a kernel frame's own launch time, an instrumentation region, an instruction without
line info) is never dropped, so a page can show the lines plus one "unattributed" row that add up
to the profile's own total.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from parsers.json_numbers import usable

__all__ = ["Kernel", "Profile", "ProfileError", "SassRow", "add_into", "cache_hash", "display_twins",
           "leave_out_unusable", "line_kind", "metric_info"]

# A Triton cache folder: 52 base32 characters, or 64 hex digits in older Triton.
_CACHE_HASH = re.compile(r"/([A-Z2-7]{52}|[0-9a-f]{64})/[^/]+$")
_IR_SUFFIXES = (".ttgir", ".ttir", ".llir", ".ptx", ".amdgcn", ".mlir")


def cache_hash(path: str) -> str | None:
    """The cache hash of a file inside a Triton cache folder (USE_IR_LOC names those files)."""
    match = _CACHE_HASH.search(path.replace("\\", "/"))
    return match.group(1) if match else None


def line_kind(path: str) -> str:
    """"ir" for a line of an IR file (USE_IR_LOC=ttgir), "python" for a kernel's source line."""
    return "ir" if path.endswith(_IR_SUFFIXES) else "python"


class ProfileError(ValueError):
    """A profile that cannot be read: the message says why, for the user."""


def add_into(total: dict[str, float], amounts: dict[str, float]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, 0) + value


@dataclass
class SassRow:
    """One SASS instruction with its metrics, as the profiler saw it."""

    offset: int  # from the kernel's first instruction (what nvdisasm prints as /*0040*/)
    address: str  # as printed by the profiler ("0x7fdf3f7b3e00")
    text: str  # the instruction ("LDC R1, c[0x0][0x28]")
    file: str | None  # source file of its line info, when the export gave one
    line: int | None
    metrics: dict[str, float]


@dataclass
class Kernel:
    name: str  # as the profile names it ("matmul_kernel [M=1024, N=1024, K=1024]")
    base: str  # the kernel's own name ("matmul_kernel"), used to join it to compilations
    count: int | None = None  # launches, where the profile counts them
    time_ns: float | None = None
    totals: dict[str, float] = field(default_factory=dict)
    unattributed: dict[str, float] = field(default_factory=dict)
    # (kind, file, line) -> metrics; kind "python" (the loc's file) or "ir" (a TTGIR line, USE_IR_LOC)
    lines: dict[tuple[str, str, int], dict[str, float]] = field(default_factory=dict)
    regions: dict[str, dict[str, float]] = field(default_factory=dict)  # instrumentation scopes
    sass: list[SassRow] = field(default_factory=list)
    hashes: set[str] = field(default_factory=set)  # Triton cache hashes its line frames name
    launch: dict[str, float] = field(default_factory=dict)  # block size, shared memory, registers (ncu)
    scopes_seen: set[str] = field(default_factory=set)

    def add_line(self, kind: str, file: str, line: int, amounts: dict[str, float]) -> None:
        digest = cache_hash(file)
        if digest:
            self.hashes.add(digest)
        add_into(self.lines.setdefault((kind, file, line), {}), amounts)

    def add_region(self, name: str, amounts: dict[str, float]) -> None:
        add_into(self.regions.setdefault(name, {}), amounts)

    def merge(self, other: Kernel) -> None:
        """The same kernel seen again (under another scope): everything adds up."""
        if other.count is not None:
            self.count = (self.count or 0) + other.count
        if other.time_ns is not None:
            self.time_ns = (self.time_ns or 0) + other.time_ns
        add_into(self.totals, other.totals)
        add_into(self.unattributed, other.unattributed)
        for key, amounts in other.lines.items():
            add_into(self.lines.setdefault(key, {}), amounts)
        for name, amounts in other.regions.items():
            self.add_region(name, amounts)
        self.sass.extend(other.sass)
        self.hashes |= other.hashes
        self.scopes_seen |= other.scopes_seen


@dataclass
class Profile:
    tool: str  # "proton" | "ncu"
    mode: str  # proton: "timing" | "pcsampling" | "instrumentation"; ncu: "source"
    kernels: list[Kernel]
    metrics: list[dict[str, str]]  # {name, unit, description} of every metric some kernel holds
    devices: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


COUNT_LIMIT = 2**31 - 1  # profile_kernels.count is a 32-bit integer column


def _usable_only(amounts: dict, dropped: list[str]) -> None:
    for name in [name for name, value in amounts.items() if not usable(value)]:
        dropped.append(f"{name}={amounts.pop(name)!r}")


def leave_out_unusable(profile: Profile) -> None:
    """Every number a parser kept is one JSON and the columns hold: a NaN, an infinity (a sum that
    overflowed) or a count beyond 32 bits is left out, and a note says so, once per profile."""
    dropped: list[str] = []
    for kernel in profile.kernels:
        for amounts in (kernel.totals, kernel.unattributed, kernel.launch, *kernel.lines.values(),
                        *kernel.regions.values(), *(row.metrics for row in kernel.sass)):
            _usable_only(amounts, dropped)
        if kernel.count is not None and not (usable(kernel.count) and 0 <= kernel.count <= COUNT_LIMIT):
            dropped.append(f"count={kernel.count!r}")
            kernel.count = None
        if kernel.time_ns is not None and not (usable(kernel.time_ns) and math.isfinite(float(kernel.time_ns))):
            dropped.append(f"time={kernel.time_ns!r}")
            kernel.time_ns = None
    if dropped:
        shown = ", ".join(sorted(set(dropped))[:4]) + ("…" if len(set(dropped)) > 4 else "")
        profile.notes.append(f"{len(dropped)} value{'s' if len(dropped) != 1 else ''} no column holds ({shown}) left out")


_STALL_REASONS = {
    "barrier": "waiting at a CTA barrier (bar.sync)",
    "branch_resolving": "waiting for a branch target to be computed",
    "dispatch": "the dispatcher could not issue the selected instruction",
    "dispatch_stall": "the dispatcher could not issue the selected instruction",
    "drain": "waiting for memory stores to drain at exit",
    "imc": "instruction cache miss (immediate constant cache)",
    "imc_miss": "immediate constant cache miss",
    "lg": "local/global memory queue full (LG throttle)",
    "lg_throttle": "local/global memory queue full",
    "long_sb": "waiting on a long scoreboard: a global/local memory or TMA result",
    "long_scoreboard": "waiting on a long scoreboard: a global/local memory or TMA result",
    "math": "math pipe busy (math pipe throttle)",
    "math_pipe_throttle": "math pipe busy",
    "membar": "waiting at a memory barrier",
    "mio": "MIO (shared memory, special function) queue full",
    "mio_throttle": "MIO (shared memory, special function) queue full",
    "misc": "miscellaneous hardware reason",
    "no_inst": "no instruction fetched (instruction cache miss)",
    "no_instruction": "no instruction fetched (instruction cache miss)",
    "not_selected": "eligible but another warp was selected",
    "not_Selected": "eligible but another warp was selected",
    "selected": "issuing an instruction (not a stall)",
    "short_sb": "waiting on a short scoreboard: shared memory or MUFU result",
    "short_scoreboard": "waiting on a short scoreboard: shared memory or MUFU result",
    "sleep": "warp sleeping (nanosleep)",
    "sleeping": "warp sleeping (nanosleep)",
    "tex": "texture/TMA unit queue full",
    "tex_throttle": "texture/TMA unit queue full",
    "wait": "fixed-latency wait (dependency on a previous instruction)",
}

_KNOWN = {
    "time (ns)": ("ns", "GPU time of the kernel's launches (Proton: CUPTI activity records)"),
    "count": ("launches", "number of launches of the kernel"),
    "num_samples": ("samples", "PC samples taken at this line's instructions (Proton PC sampling)"),
    "num_stalled_samples": ("samples", "PC samples whose warp was stalled, not issuing (Proton PC sampling)"),
    "cycles": ("cycles", "clock cycles spent in the region (Proton instrumentation)"),
    "normalized_cycles": ("cycles", "the region's cycles normalised per warp (Proton instrumentation)"),
    "bytes": ("bytes", "bytes moved, as the kernel's launch_metadata declares"),
    "Warp Stall Sampling (All Samples)": (
        "samples", "ncu: warp state samples at this instruction, all of them (issued or stalled)"),
    "Warp Stall Sampling (Not-issued Samples)": (
        "samples", "ncu: warp state samples at this instruction where the warp did not issue"),
    "# Samples": ("samples", "ncu: samples taken at this instruction"),
    "Instructions Executed": ("warp instructions", "ncu: times a warp executed this instruction"),
    "Thread Instructions Executed": ("thread instructions", "ncu: times a thread executed this instruction"),
    "gpu__time_duration.sum": ("ns", "ncu: the kernel's duration"),
    "smsp__pcsamp_sample_count": ("samples", "ncu: warp state samples at this instruction (Warp Stall Sampling, all samples)"),
    "inst_executed": ("warp instructions", "ncu: times a warp executed this instruction"),
}


# An ncu report names its per-instruction metrics by their raw names; the source page exported as
# CSV shows the same counters under display names. A run holding both (report.ncu-rep beside its
# CSV export) would offer each metric twice: the display name is the one shown.
_NCU_DISPLAY = {
    "smsp__pcsamp_sample_count": "Warp Stall Sampling (All Samples)",
    "inst_executed": "Instructions Executed",
    "thread_inst_executed": "Thread Instructions Executed",
    "thread_inst_executed_true": "Predicated-On Thread Instructions Executed",
}
_NCU_STALLS = {
    "barrier": "barrier", "branch_resolving": "branch_resolving", "dispatch_stall": "dispatch", "drain": "drain",
    "imc_miss": "imc", "lg_throttle": "lg", "long_scoreboard": "long_sb", "math_pipe_throttle": "math",
    "membar": "membar", "mio_throttle": "mio", "misc": "misc", "no_instructions": "no_inst",
    "not_selected": "not_selected", "selected": "selected", "short_scoreboard": "short_sb", "sleeping": "sleep",
    "tex_throttle": "tex", "wait": "wait",
}


def display_twins(name: str) -> tuple[str, ...]:
    """The names the same ncu counter has on the source page (display names), for a raw report name;
    () for any other name."""
    if name in _NCU_DISPLAY:
        return (_NCU_DISPLAY[name],)
    prefix = "smsp__pcsamp_warps_issue_stalled_"
    if name.startswith(prefix):
        reason = name[len(prefix):]
        issued = reason.endswith("_not_issued")
        short = _NCU_STALLS.get(reason.removesuffix("_not_issued"))
        if short is None:
            return ()
        # ncu itself writes "stall_sleep" but "stall_sleeping (Not Issued)"
        return (f"stall_{short} (Not Issued)", "stall_sleeping (Not Issued)") if issued and short == "sleep" else \
            ((f"stall_{short} (Not Issued)",) if issued else (f"stall_{short}",))
    return ()


def metric_info(name: str) -> dict[str, str]:
    """Name, unit and meaning of a metric, for the pages; unknown ones keep their name and a unit
    read from `(unit)` at its end, if any."""
    if name in _KNOWN:
        unit, description = _KNOWN[name]
        return {"name": name, "unit": unit, "description": description}
    for prefix, unit, source in (("stalled_", "samples", "Proton PC sampling"), ("stall_", "samples", "ncu"),
                                 ("smsp__pcsamp_warps_issue_stalled_", "samples", "ncu")):
        if name.startswith(prefix):
            reason = name[len(prefix):].removesuffix(" (Not Issued)").removesuffix("_not_issued")
            meaning = _STALL_REASONS.get(reason, reason.replace("_", " "))
            issued = " while not issuing" if name.endswith(("(Not Issued)", "_not_issued")) else ""
            return {"name": name, "unit": unit, "description": f"{source}: samples of warps stalled{issued}: {meaning}"}
    if name.startswith("flops"):
        return {"name": name, "unit": "flop", "description": f"{name[5:]}-bit floating-point operations, from launch_metadata"}
    unit = re.search(r"\(([^()]+)\)\s*$", name)
    return {"name": name, "unit": unit.group(1) if unit else "", "description": ""}
