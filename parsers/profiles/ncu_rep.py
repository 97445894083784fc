"""Nsight Compute reports (`.ncu-rep`), read through NVIDIA's `ncu-report` package (optional:
`pip install 'irlens[ncu]'`). Without it a report is kept as a file and a note says how to read
it; the CSV that `ncu --import r.ncu-rep --page source --csv` exports needs nothing (parsers/profiles/ncu.py).

Per kernel (an "action") the per-instruction metrics are the source-correlated ones: each metric
with correlation IDs has one value per instruction address. Read here: the warp-state samples
(`smsp__pcsamp_*`: the "Warp Stall Sampling" columns of the source page) and `inst_executed`; each
instruction's source line comes from the report's line table (`source_info`), its text from
`sass_by_pc`. Launch facts (`launch__*`, `gpu__time_duration.sum`) join kernels to compilations.
"""

from __future__ import annotations

from parsers.profiles.profile_records import (
    Kernel,
    Profile,
    ProfileError,
    SassRow,
    add_into,
    line_kind,
    metric_info,
)

__all__ = ["available", "parse_report"]

_PER_INSTRUCTION = ("smsp__pcsamp_", "inst_executed", "thread_inst_executed")
_LAUNCH = {"launch__block_size": "block_size", "launch__registers_per_thread": "registers",
           "launch__grid_size": "grid_size"}


def available() -> bool:
    try:
        import ncu_report  # noqa: F401
    except ImportError:
        return False
    return True


def _value(metric) -> float | None:
    try:
        return metric.as_double()
    except Exception:  # noqa: BLE001 - a string metric, or one without a value
        return None


def _kernel(action) -> Kernel:
    kernel = Kernel(name=action.name(), base=action.name())
    by_pc: dict[int, dict[str, float]] = {}
    for name in action.metric_names():
        if not name.startswith(_PER_INSTRUCTION):
            if name in _LAUNCH:
                value = _value(action.metric_by_name(name))
                if value is not None:
                    kernel.launch[_LAUNCH[name]] = value
            continue
        metric = action.metric_by_name(name)
        if not metric.has_correlation_ids():
            continue
        ids = metric.correlation_ids()
        for index in range(metric.num_instances()):
            value = metric.as_double(index)
            if value:
                by_pc.setdefault(ids.as_uint64(index), {})[name] = value
    shared = action.metric_by_name("launch__shared_mem_per_block_dynamic")
    if shared is not None and _value(shared) is not None:
        scale = {"Kbyte": 1000, "Mbyte": 1e6}.get(shared.unit().split("/")[0], 1)
        kernel.launch["shared_dynamic"] = round(_value(shared) * scale)
    duration = action.metric_by_name("gpu__time_duration.sum")
    if duration is not None and _value(duration) is not None:
        kernel.time_ns = _value(duration) * {"us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(duration.unit(), 1)
    kernel.count = 1
    first = min(by_pc) if by_pc else 0
    for pc in sorted(by_pc):
        info = action.source_info(pc)
        file, line = (info.file_name(), info.line()) if info is not None else (None, None)
        metrics = by_pc[pc]
        kernel.sass.append(SassRow(pc - first, hex(pc), action.sass_by_pc(pc).strip(), file, line or None, metrics))
        add_into(kernel.totals, metrics)
        if file and line:
            kernel.add_line(line_kind(file), file, line, metrics)
        else:
            add_into(kernel.unattributed, metrics)
    return kernel


def parse_report(path: str) -> Profile:
    """Every kernel of the report at `path` (the package reads files, not streams)."""
    try:
        import ncu_report
    except ImportError:
        raise ProfileError(
            "an Nsight Compute report: reading it needs the optional ncu-report package "
            "(pip install 'irlens[ncu]'); or upload `ncu -i report.ncu-rep --page source --csv "
            "--print-source cuda,sass` instead") from None
    try:
        context = ncu_report.load_report(path)
    except Exception as error:  # noqa: BLE001 - the package raises its own kinds
        raise ProfileError(f"ncu-report could not read it: {error}") from None
    kernels = []
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            kernels.append(_kernel(report_range.action_by_idx(action_index)))
    names = sorted({name for kernel in kernels for name in kernel.totals})
    return Profile(tool="ncu", mode="report", kernels=kernels, metrics=[metric_info(name) for name in names])
