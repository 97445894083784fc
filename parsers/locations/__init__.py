"""Locations: each line of an IR text mapped back to the Python source lines it came from.
`loc.py` is the entry (the kinds, the dispatch, indexing lines by source); one module per location
syntax: `mlir.py` (`loc(...)`, `#loc` tables), `llvm.py` (`!dbg`, MIR's debug-location),
`ptx_amdgcn.py` (`.loc`/`.file`), `sass_line_info.py` (nvdisasm's line info), `frames.py` (what they
all resolve to).

May import `parsers/records.py` and `parsers/literal_scan.py`; no other room, never `app/`.
"""
