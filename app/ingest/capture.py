"""`irlens capture`: run a program with Triton's dumps on and gather what it wrote.

The program runs with ``MLIR_ENABLE_DUMP=1`` (plus ``LLVM_IR_ENABLE_DUMP=1`` / ``MLIR_ENABLE_TIMING=1`` /
``MLIR_ENABLE_DIAGNOSTICS=remarks`` when asked) and a fresh, empty ``TRITON_CACHE_DIR``, so every kernel it uses is compiled in this run
rather than taken from a cache, and the cache folder holds exactly this run's kernels. Its stderr,
where the dumps go, and its stdout, where ``TRITON_PRINT_AUTOTUNING`` lines and the program's own
prints go, are each copied to the terminal (stderr to stderr, stdout to stdout) and to a log file on
disk (capture.log, stdout.txt) in blocks as they arrive (never held in memory); stdout by a thread. Afterwards :func:`sources_named` finds the Python
files the IR's ``loc()`` entries name, and the caller ingests log, cache and sources as one run
through the ordinary ingest or upload path.

Ctrl-C: the child stays in irlens's process group, so a Ctrl-C at the terminal reaches it directly,
as with ``time`` or ``strace``. A SIGINT sent to irlens alone (no terminal in front of it, e.g.
``kill -INT``) is passed on to the child. Either way irlens keeps copying the child's stderr until
the child exits, then ingests what was captured; a second Ctrl-C during the ingest stops irlens,
and the ingest, being one transaction, stores nothing.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from app.ingest.dsl_capture import boot_code, boot_environment, dsl_environment, written
from app.ingest.profile_boot import profile_environment

CHUNK = 1 << 16
SCAN_BLOCK = 1 << 20
SCAN_OVERLAP = 4096  # a loc() path longer than this straddling two blocks is missed
MAX_SOURCES = 10_000
# The file of an MLIR FileLineColLoc (`loc("/p/k.py":12:0)`), a PTX/AMDGCN `.file 1 "/p/k.py"`, and
# an LLVM `!DIFile(filename: "k.py", directory: "/p")`.
_LOC_FILE = re.compile(rb'loc\("((?:[^"\\\n]|\\.){1,4000})":\d+')
_ASM_FILE = re.compile(rb'\.file\s+\d+\s+"((?:[^"\\\n]|\\.){1,4000})"(?:\s+"((?:[^"\\\n]|\\.){1,4000})")?')
_DIFILE = re.compile(rb'!DIFile\(filename: "((?:[^"\\\n]|\\.){1,4000})", directory: "((?:[^"\\\n]|\\.){0,4000})"')
_ESCAPE = re.compile(rb"\\(\\|\"|[0-9A-Fa-f]{2})")


@dataclass
class Captured:
    """What one run of the program left: its exit status, the log, the cache folder and sources."""

    folder: Path  # the temporary folder holding log and cache
    log: Path
    cache: Path
    returncode: int  # as a shell reports it: 128 + N for a child killed by signal N
    interrupted: bool = False
    sources: list[str] = field(default_factory=list)
    stdout: Path | None = None
    dsls: tuple[str, ...] = ()  # the tile DSLs whose dumps were switched on (app/ingest/dsl_capture.py)

    @property
    def paths(self) -> list[str]:
        """What to ingest: the log (when the program wrote to stderr), its stdout (when it printed
        anything: autotuning results), the cache folder (when Triton compiled anything) and the
        Python sources."""
        paths = [str(self.log)] if self.log.stat().st_size else []
        if self.cache.is_dir() and any(self.cache.iterdir()):
            paths.append(str(self.cache))
        paths += written(self.folder, self.dsls)  # the DSLs' dump folders
        if not paths:  # no dumps, nothing compiled: the prints alone make no run
            return []
        if self.stdout is not None and self.stdout.stat().st_size:
            paths.insert(1 if self.log.stat().st_size else 0, str(self.stdout))
        profile = self.log.parent / "profile.hatchet"  # written by `--profile` (app/ingest/profile_boot.py)
        return paths + ([str(profile)] if profile.is_file() else []) + self.sources


def capture_environment(base: dict[str, str], cache: Path, llvm: bool, timing: bool,
                        remarks: bool = False) -> dict[str, str]:
    env = dict(base)
    env["MLIR_ENABLE_DUMP"] = "1"
    # the autotuner's choice, read by parsers/autotuning/autotune.py
    env.setdefault("TRITON_PRINT_AUTOTUNING", "1")
    env["TRITON_CACHE_DIR"] = str(cache)
    # stdout is a pipe now: without this Python would hold the program's prints until it exits
    env.setdefault("PYTHONUNBUFFERED", "1")
    # With MLIR_DUMP_PATH set the dumps would go to that file instead of stderr, out of our sight.
    env.pop("MLIR_DUMP_PATH", None)
    if llvm:
        env["LLVM_IR_ENABLE_DUMP"] = "1"
    if timing:
        env["MLIR_ENABLE_TIMING"] = "1"
    if remarks:  # the passes' remarks (why a loop was not pipelined...), shown at their ops
        env["MLIR_ENABLE_DIAGNOSTICS"] = "remarks"
    return env


def _keyboard_reaches_child() -> bool:
    """Whether a Ctrl-C at a terminal reaches the child by itself: irlens's process group (which the
    child shares) is the foreground group of the terminal on stdin."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of ``data`` to ``fd``; False once the descriptor is gone (a closed terminal)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return False
        view = view[written:]
    return True


def _copy(pipe: int, file: BinaryIO, terminal_fd: int) -> None:
    """Copy a pipe to a file and a terminal in blocks until it closes (the terminal may go away)."""
    terminal_open = True
    while True:
        try:
            block = os.read(pipe, CHUNK)
        except InterruptedError:
            continue
        if not block:
            return
        file.write(block)
        if terminal_open:
            terminal_open = _write_all(terminal_fd, block)


def run_program(command: Sequence[str], *, llvm: bool = False, timing: bool = False,
                terminal_fd: int = 2, stdout_fd: int = 1, profile: bool = False, remarks: bool = False,
                dsls: Sequence[str] = ()) -> Captured:
    """Run ``command``, copying its stderr to ``terminal_fd`` and its stdout to ``stdout_fd``, each
    also to a file in a new temporary folder, and wait for it; ``dsls``: the tile DSLs whose dumps
    to switch on. Raises OSError when the program cannot be started."""
    folder = Path(tempfile.mkdtemp(prefix="irlens-capture-"))
    log, cache, out = folder / "capture.log", folder / "triton-cache", folder / "stdout.txt"
    cache.mkdir()
    env = capture_environment(dict(os.environ), cache, llvm, timing, remarks)
    dsl_environment(env, folder, dsls)
    start_up = boot_code(dsls)  # one sitecustomize.py for all: Python runs the first it finds
    if profile:
        profile_environment(env, folder, also=start_up)  # the profile lands in `folder`, found by Captured.paths
    elif start_up:
        boot_environment(env, folder, start_up)
    interrupted = False
    forward = not _keyboard_reaches_child()
    with open(log, "wb") as log_file, open(out, "wb") as out_file:
        try:
            child = subprocess.Popen(list(command), stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        except OSError:
            log_file.close()
            out_file.close()
            _remove(folder)
            raise
        # stdout by a thread: reading one pipe while the program blocks on the other, full, would hang both
        copier = threading.Thread(target=_copy, args=(child.stdout.fileno(), out_file, stdout_fd),  # type: ignore[union-attr]
                                  name="capture-stdout", daemon=True)
        copier.start()

        def on_interrupt(signum, frame) -> None:
            nonlocal interrupted
            interrupted = True
            if forward and child.poll() is None:
                child.send_signal(signal.SIGINT)

        previous = signal.signal(signal.SIGINT, on_interrupt)
        try:
            _copy(child.stderr.fileno(), log_file, terminal_fd)  # type: ignore[union-attr]
            child.stderr.close()  # type: ignore[union-attr]
            copier.join()
            child.stdout.close()  # type: ignore[union-attr]
            while True:
                try:
                    code = child.wait()
                    break
                except InterruptedError:
                    continue
        finally:
            signal.signal(signal.SIGINT, previous)
    returncode = 128 - code if code < 0 else code
    return Captured(folder=folder, log=log, cache=cache, returncode=returncode, interrupted=interrupted,
                    stdout=out, dsls=tuple(dsls))


def _unescape(raw: bytes) -> str:
    """A path as MLIR or LLVM print it in a string: `\\\\`, `\\"` and `\\XX` hex escapes."""

    def replace(match: re.Match[bytes]) -> bytes:
        escaped = match.group(1)
        return escaped if len(escaped) == 1 else bytes([int(escaped, 16)])

    return _ESCAPE.sub(replace, raw).decode("utf-8", "surrogateescape")


def _named_in(path: Path) -> set[str]:
    """Every file a location in ``path`` names, read in blocks (a log can be gigabytes)."""
    names: set[str] = set()
    tail = b""
    with open(path, "rb") as stream:
        while block := stream.read(SCAN_BLOCK):
            data = tail + block
            for match in _LOC_FILE.finditer(data):
                names.add(_unescape(match.group(1)))
            for match in _ASM_FILE.finditer(data):
                directory, name = (match.group(1), match.group(2)) if match.group(2) else (b"", match.group(1))
                names.add(os.path.join(_unescape(directory), _unescape(name)))
            for match in _DIFILE.finditer(data):
                names.add(os.path.join(_unescape(match.group(2)), _unescape(match.group(1))))
            tail = data[-SCAN_OVERLAP:]
    return names


def sources_named(files: Iterable[Path]) -> list[str]:
    """The Python files the locations in ``files`` name that exist and this user may read, sorted."""
    names: set[str] = set()
    for path in files:
        names |= _named_in(path)
    found: set[str] = set()
    for name in sorted(names):
        if not name.endswith(".py"):
            continue
        if os.path.isfile(name) and os.access(name, os.R_OK):  # a relative name: from the child's cwd, ours
            found.add(os.path.abspath(name))
        if len(found) >= MAX_SOURCES:
            break
    return sorted(found)


def text_files(captured: Captured) -> list[Path]:
    """The log and the cache's IR files: where locations are printed."""
    files = [captured.log]
    if captured.cache.is_dir():
        files += sorted(p for p in captured.cache.rglob("*") if p.is_file() and p.suffix in (
            ".source", ".ttir", ".ttgir", ".glir", ".llir", ".ptx", ".amdgcn"))
    return files


def _remove(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def discard(captured: Captured) -> None:
    _remove(captured.folder)
