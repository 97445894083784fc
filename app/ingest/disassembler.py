"""The edge to NVIDIA's disassemblers: find nvdisasm or cuobjdump, and turn a cubin into SASS text.

The tool is looked for in this order: the ``sass_disassembler`` setting (a path, or ``off``), then
``nvdisasm`` and ``cuobjdump`` on PATH, then the copies Triton's wheel bundles
(``triton/backends/nvidia/bin``) and those of the ``nvidia-cuda-nvdisasm`` /
``nvidia-cuda-cuobjdump`` pip packages (``nvidia/cuda_nvdisasm/bin``...), found without importing
them. nvdisasm runs with ``-gi`` (line info with inlining), so SASS maps back to Python lines when
the cubin carries line info, which Triton's do. A tool that fails, runs past its time or prints too
much costs the ingest a warning, never the ingest.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Self

from parsers.caches.sass import clean_cuobjdump_line

TIMEOUT_SECONDS = 60.0
MAX_CUBIN_BYTES = 256 << 20  # a larger cubin is recorded by size and hash only
MAX_SASS_BYTES = 64 << 20  # the disassembly is cut here (and the cut said)
TOOLS = ("nvdisasm", "cuobjdump")
OFF = ("off", "none", "false", "0")


@dataclass
class Sass:
    """One cubin's disassembly: the text (None when there is none) and what went wrong, if anything."""

    text: bytes | None
    problem: str | None = None


@dataclass
class Disassembler:
    """A disassembler found on this host, or the reason there is none (``tool`` None)."""

    tool: str | None
    reason: str | None = None
    timeout: float = TIMEOUT_SECONDS

    @property
    def is_cuobjdump(self) -> bool:
        return self.tool is not None and "cuobjdump" in os.path.basename(self.tool)

    def read_cubin(self, stream: BinaryIO) -> tuple[int, str, Sass | None]:
        """Read a cubin to its end (size, sha256) and disassemble it. The SASS is None when no tool is
        available."""
        with SassJobs(self, workers=1) as jobs:
            size, digest, job = jobs.add(stream)
            return size, digest, job.result() if job is not None else None

    def disassemble(self, cubin: str, pass_fds: tuple[int, ...] = ()) -> Sass:
        """The SASS of the cubin at path ``cubin`` (``pass_fds``: descriptors the path needs, /dev/fd/N)."""
        if self.tool is None:
            return Sass(None, self.reason)
        attempts = [[self.tool, "-sass", cubin]] if self.is_cuobjdump else [
            # -ndf: no dataflow analysis (branch-target labels): a third less CPU, the same text on Triton cubins
            [self.tool, "-gi", "-c", "-ndf", cubin],
            [self.tool, "-c", cubin],  # an nvdisasm too old for -gi, or a cubin its line info trips up
        ]
        problem = None
        for command in attempts:
            text, problem = self._run(command, pass_fds)
            if text is not None:
                return Sass(self._clean(text) if self.is_cuobjdump else text, problem)
        return Sass(None, problem)


    def _run(self, command: list[str], pass_fds: tuple[int, ...]) -> tuple[bytes | None, str | None]:
        name = os.path.basename(command[0])
        with tempfile.TemporaryFile() as output:
            try:
                done = subprocess.run(command, stdout=output, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                      timeout=self.timeout, check=False, pass_fds=pass_fds)
            except subprocess.TimeoutExpired:
                return None, f"{name} ran over {self.timeout:g} s on this cubin: no SASS"
            except OSError as error:
                return None, f"{name} could not be run ({error.strerror or error}): no SASS"
            if done.returncode != 0:
                message = done.stderr.decode("utf-8", "replace").strip().splitlines()
                errors = [line for line in message if "warning" not in line.lower()] or message
                return None, f"{name} could not read this cubin: {(errors[-1] if errors else '')[:300]}"
            output.seek(0)
            text = output.read(MAX_SASS_BYTES + 1)
        if len(text) > MAX_SASS_BYTES:
            cut = text.rfind(b"\n", 0, MAX_SASS_BYTES) + 1
            return text[:cut], f"the SASS is over {MAX_SASS_BYTES >> 20} MB: only its first {MAX_SASS_BYTES >> 20} MB kept"
        return text, None

    @staticmethod
    def _clean(text: bytes) -> bytes:
        lines = (clean_cuobjdump_line(line) for line in text.decode("utf-8", "replace").split("\n"))
        return "\n".join(line for line in lines if line is not None).encode("utf-8")


class SassJobs:
    """The cubins of one ingest, disassembled a few at a time in the background while the ingest reads
    on (a disassembler's start-up alone is a good part of a second). Each cubin is copied, as it
    streams by, to an anonymous temporary file that the tool opens as /dev/fd/N: no name is left
    behind, even when the ingest is killed."""

    def __init__(self, disassembler: Disassembler, workers: int | None = None) -> None:
        self.disassembler = disassembler
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        self.pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def add(self, stream: BinaryIO) -> tuple[int, str, Future[Sass] | None]:
        """Read a cubin to its end: (size, sha256, the job making its SASS, None without a tool)."""
        digest, size = hashlib.sha256(), 0
        # closed by the job that reads it, or below when it never starts
        spool = tempfile.TemporaryFile() if self.disassembler.tool is not None else None  # noqa: SIM115
        try:
            while block := stream.read(1 << 20):
                digest.update(block)
                size += len(block)
                if spool is not None and size <= MAX_CUBIN_BYTES:
                    spool.write(block)
            if spool is None:
                return size, digest.hexdigest(), None
            spool.flush()
            if self.pool is None:
                self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="irlens-sass")
            job = self.pool.submit(self._disassemble, spool, size)
        except BaseException:
            if spool is not None:
                spool.close()
            raise
        return size, digest.hexdigest(), job

    def _disassemble(self, spool: BinaryIO, size: int) -> Sass:
        try:
            if size > MAX_CUBIN_BYTES:
                return Sass(None, f"a cubin over {MAX_CUBIN_BYTES >> 20} MB is not disassembled")
            return self.disassembler.disassemble(f"/dev/fd/{spool.fileno()}", pass_fds=(spool.fileno(),))
        except (OSError, subprocess.SubprocessError, ValueError) as error:  # costs the cubin its SASS, not the ingest
            return Sass(None, f"the cubin could not be disassembled: {error}")
        finally:
            spool.close()

    def close(self) -> None:
        """Wait for the jobs under way (each is bounded by the tool's timeout)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _bundled_tools() -> list[Path]:
    """nvdisasm/cuobjdump shipped inside installed Python packages (Triton's wheel, NVIDIA's pip
    packages), located by their package folders without importing them."""
    places: list[Path] = []
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        places.append(Path(location) / "backends" / "nvidia" / "bin")
    for entry in sys.path:
        for package in ("cuda_nvdisasm", "cuda_cuobjdump"):
            places.append(Path(entry or ".") / "nvidia" / package / "bin")
    return [place / tool for tool in TOOLS for place in places]


def find_disassembler(setting: str | None = None) -> Disassembler:
    """The disassembler to use, from the setting (a path, or "off"), PATH, then installed packages."""
    if setting and setting.strip().lower() in OFF:
        return Disassembler(None, "SASS is turned off on this server (IRLENS_SASS_DISASSEMBLER)")
    if setting:
        found = shutil.which(setting)
        if found:
            return Disassembler(found)
        return Disassembler(None, f"IRLENS_SASS_DISASSEMBLER names {setting}, which is not an executable")
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            return Disassembler(found)
    for candidate in _bundled_tools():
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return Disassembler(str(candidate))
    return Disassembler(None, "no nvdisasm or cuobjdump was found where this run was stored (install triton or "
                              "nvidia-cuda-nvdisasm, or set IRLENS_SASS_DISASSEMBLER)")
