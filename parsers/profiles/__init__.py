"""Profiles: Proton's Hatchet JSON (`proton.py`), Nsight Compute's source/raw CSV (`ncu.py`) and
`.ncu-rep` reports (`ncu_rep.py`, through the optional `ncu-report` package), all read into the same
kernels, per-line and per-instruction metrics (`profile_records.py`).

May import `parsers/records.py`, `parsers/literal_scan.py` and `parsers/json_numbers.py`; no other room, never `app/`.
"""
