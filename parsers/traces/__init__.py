"""Traces: structured compile and launch traces, one record at a time: tritonparse's NDJSON
(`tritonparse.py`: compilations, launches, autotune results).

May import `parsers/records.py`, `parsers/literal_scan.py` and `parsers/caches/` (a trace's compilation
carries the cache's kernel metadata); never `app/`.
"""
