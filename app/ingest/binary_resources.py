"""A kernel binary's resources, read while it streams by: irlens keeps a cubin by size and hash only
(app/ingest/cache_files.py), so what it says about registers, stack and static shared memory
(parsers/caches/cubin.py) is taken on the way and stored per compilation (`compilations.resources`).

The bytes go to a spooled temporary file (in memory up to SPOOL_IN_MEMORY, on disk beyond, never
past MAX_CUBIN_BYTES), which the parser then reads through an mmap: a large cubin is never held."""

from __future__ import annotations

import mmap
import tempfile
from typing import BinaryIO

from parsers.caches.cubin import read_cubin

SPOOL_IN_MEMORY = 16 << 20
MAX_CUBIN_BYTES = 256 << 20


class CubinTap:
    """Wraps a cubin's stream; every block read through it is also kept for :meth:`resources`."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 (closed in resources)
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        if self.size + len(data) <= MAX_CUBIN_BYTES:
            self.spool.write(data)
        self.size += len(data)
        return data

    def resources(self) -> tuple[dict[str, dict], str | None]:
        """{kernel: resources} of the cubin read so far, and why there are none (if so)."""
        try:
            if self.size > MAX_CUBIN_BYTES:
                return {}, f"a cubin over {MAX_CUBIN_BYTES >> 20} MB: its resources are not read"
            if not self.size:
                return {}, "an empty cubin"
            if self.spool._rolled:  # on disk: map it rather than read it whole
                self.spool.flush()
                with mmap.mmap(self.spool.fileno(), 0, access=mmap.ACCESS_READ) as view:
                    kernels, problem = read_cubin(view)
            else:
                kernels, problem = read_cubin(self.spool._file.getvalue())
            return {name: kernel.as_dict() for name, kernel in kernels.items()}, problem
        finally:
            self.spool.close()


def stored_resources(found: dict | None, kernel: str | None) -> dict | None:
    """What `compilations.resources` keeps for one compilation, from its cache folder's binary or
    AMDGCN (`found`: {"source": "cubin", "kernels": {...}} or {"source": "amdgcn", ...})."""
    if not found:
        return None
    if found.get("source") != "cubin":
        return dict(found)
    kernels = found.get("kernels") or {}
    chosen = kernels.get(kernel) if kernel else None
    if chosen is None and len(kernels) == 1:
        chosen = next(iter(kernels.values()))
    if chosen is None:
        return {"source": "cubin", "problem": found.get("problem") or f"no kernel {kernel} in the cubin"}
    return {"source": "cubin", **chosen}
