"""Caches and binaries: Triton's cache folders (`TRITON_CACHE_DIR`) and `TRITON_KERNEL_DUMP` folders
(`cache.py`), and what the binaries and assembly in them say: a cubin's resources read from its ELF
(`cubin.py`), SASS instruction lines and their groups (`sass.py`), an `.amdgcn` file's resources
(`amdgcn_resources.py`).

May import `parsers/records.py`, `parsers/literal_scan.py` and `parsers/json_numbers.py`; no other room, never `app/`.
"""
