"""A compilation's launches (from tritonparse traces) as the page and its .json twin show them."""

from __future__ import annotations

from typing import Any

from app.store.models import Compilation

SHOWN = 200  # rows in the HTML table; the .json twin has every stored launch


def _argument_text(argument: Any) -> str:
    """One cell: a tensor as dtype[shape], a scalar as its value, anything else as tritonparse put it."""
    if not isinstance(argument, dict):
        return str(argument)
    if argument.get("type") == "tensor":
        dtype = str(argument.get("dtype", "")).removeprefix("torch.")
        shape = argument.get("shape")
        shape_text = "×".join(str(size) for size in shape) if isinstance(shape, list) else "?"
        return f"{dtype}[{shape_text}]"
    if "value" in argument:
        return str(argument["value"])
    return str(argument.get("repr") or argument.get("type") or "")


def launch_table(compilation: Compilation) -> dict:
    launches = list(compilation.launches)
    names: list[str] = []
    for launch in launches:
        for name in launch.arguments or {}:
            if name not in names:
                names.append(name)
    rows = [
        {
            "index": launch.index,
            "grid": launch.grid,
            "config": launch.config or {},
            "benchmark": bool(launch.benchmark),
            "trace_line": launch.line,
            "arguments": launch.arguments or {},
        }
        for launch in launches
    ]
    total = (compilation.metadata_json or {}).get("launches") if compilation.metadata_json else None
    return {
        "count": len(rows),
        "traced": total if isinstance(total, int) else len(rows),
        "benchmark": sum(1 for row in rows if row["benchmark"]),
        "argument_names": names,
        "rows": rows,
    }


def launch_page_cells(table: dict) -> list[list[str]]:
    """The HTML table's argument cells for the rows it shows."""
    names = table["argument_names"]
    return [
        [_argument_text(row["arguments"][name]) if name in row["arguments"] else "" for name in names]
        for row in table["rows"][:SHOWN]
    ]
