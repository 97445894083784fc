"""Autotuning results: printed in a log and read line by line as it streams by (`autotune.py`:
Triton's `TRITON_PRINT_AUTOTUNING`, inductor's AUTOTUNE tables), or kept in files of their own
(`autotune_files.py`: Helion's autotune_log CSV, Triton's `<kernel>.autotune.json`), read into the
same entries.

May import `parsers/records.py`, `parsers/literal_scan.py` and `parsers/json_numbers.py`; no other room, never `app/`.
"""
