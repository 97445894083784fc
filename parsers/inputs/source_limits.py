"""The limits of one walk over the inputs, and what it has used of them so far."""

from __future__ import annotations

import time
from dataclasses import dataclass

from parsers.inputs.source_names import display_path, fmt_bytes


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str  # human readable: "symlink", "path traversal (../..)", "corrupt archive: ...", ...


class InputLimitExceeded(Exception):
    """The inputs are too big, too many, too compressed or too slow to read. The message names the limit."""


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 4 << 30  # total uncompressed bytes across all inputs
    max_files: int = 100_000  # files yielded plus entries skipped
    max_ratio: int = 1000  # uncompressed/compressed ratio of a bomb (enforced once output > 64 MB)
    max_depth: int = 3  # nesting of archives inside archives
    max_profile_bytes: int = 256 << 20  # a profile is parsed whole: larger ones are refused (app settings)
    # Wall-clock seconds for one walk (the app's ingest_timeout_seconds); None: no limit. Checked
    # cooperatively, each time bytes are read or a file is counted, so a slow parse between two reads
    # overruns it by that parse's time at most.
    timeout_seconds: float | None = None


class Corrupt(Exception):
    """Bad data, tagged with the archive (or compressed file) it came from."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


class WalkBudget:
    """What one walk has used of its ``Limits``: bytes, files and time; and what it skipped, and why.

    Bytes count once against ``max_total_bytes`` where they become uncompressed: the output of each
    decompressor, and the bytes of plain files and plain tars read from disk or an upload. So the
    compressed bytes of a nested archive (a .tar.xz inside a .tar) count twice, which is small.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.skipped: list[Skipped] = []
        self._total_bytes = 0
        self._entries = 0
        self.broken: set[str] = set()  # archives whose stream failed: stop walking them
        self._started = time.monotonic()
        timeout = limits.timeout_seconds
        self._deadline = self._started + timeout if timeout else None

    def skip(self, path: str, reason: str) -> None:
        self.count_entry(path)
        self.skipped.append(Skipped(display_path(path), reason))

    def record_corrupt(self, err: Corrupt, reading: str | None = None) -> None:
        if err.path in self.broken:
            return
        self.broken.add(err.path)
        detail = err.detail if reading in (None, err.path) else f"{err.detail} (in {display_path(reading)})"
        self.skip(err.path, f"corrupt archive: {detail}")

    def count_entry(self, path: str) -> None:
        # Skipped entries count too: an archive of a million symlinks must not grow `skipped` forever.
        self._entries += 1
        self.check_deadline(path)
        if self._entries > self.limits.max_files:
            raise InputLimitExceeded(f"more than {self.limits.max_files} files in the inputs (max_files)")

    def check_deadline(self, path: str | None = None) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            where = f" at {display_path(path)}" if path else ""
            raise InputLimitExceeded(
                f"the ingest took longer than the {self.limits.timeout_seconds:g} s limit{where} "
                f"(ingest_timeout_seconds)"
            )

    def charge(self, count: int, path: str, expanded: bool) -> None:
        self.check_deadline(path)
        self._total_bytes += count
        limit = self.limits.max_total_bytes
        if self._total_bytes > limit:
            if expanded:
                raise InputLimitExceeded(
                    f"archive {display_path(path)} expands beyond the {fmt_bytes(limit)} limit (max_total_bytes)"
                )
            raise InputLimitExceeded(
                f"the inputs exceed the {fmt_bytes(limit)} limit (max_total_bytes) at {display_path(path)}"
            )
