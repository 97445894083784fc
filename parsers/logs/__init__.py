"""Logs: a compiler's output stream, read once in big blocks. Owns the IR dump banners (MLIR's
`MLIR_ENABLE_DUMP`, LLVM's print-after-all), the scanner that cuts dumps and gap text out of the bytes
(`log.py`, `log_chunks.py`, `dump_damage.py`), what a dump's body holds (`scopes.py`), the gap text
(`timing.py`, `diagnostics.py`, `reproducer.py`, `pm_trace.py`) and dumps grouped into compilations
(`compilations.py`).

May import `parsers/records.py` and `parsers/literal_scan.py`; no other room, never `app/`.
"""
