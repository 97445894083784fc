"""Starting the replay worker (app/replay/worker.py) in an interpreter that holds the capture's Triton,
with limits, and talking to it: one JSON request a line, one answer a line.

Hostile IR can crash, hang or bloat a pass. So the worker is its own process: its address space and
CPU time are capped with setrlimit (set by the worker itself before it imports Triton, so nothing here
runs between fork and exec), every answer has a wall-clock deadline, and on any overrun the process
is killed and the request answered with why. Its stderr goes to a file, read back only to explain a
death; nothing it prints reaches this process's output.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

WORKER = Path(__file__).resolve().parent / "worker.py"
_CHUNK = 1 << 20
MAX_ANSWER_BYTES = 256 << 20  # an answer past this is treated as a runaway


class ReplayFailed(Exception):
    """The worker could not answer: it did not start, died, or overran a limit."""


@dataclass(frozen=True)
class Limits:
    seconds: float = 60.0  # per request (the start has its own, the same)
    memory_mb: int = 4096  # the worker's address space


class Worker:
    """One worker process. Use as a context manager; `ask` sends a request and waits for its answer."""

    def __init__(self, python: str, limits: Limits | None = None) -> None:
        self.python = python
        self.limits = limits or Limits()
        self.process: subprocess.Popen | None = None
        self.ready: dict = {}
        self.start_seconds = 0.0
        self._buffer = b""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> dict:
        started = time.perf_counter()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the worker's life, closed in close()
        env = {key: value for key, value in os.environ.items() if not key.startswith(("MLIR_", "TRITON_"))}
        env["TRITON_DEFAULT_FP_FUSION"] = env.get("TRITON_DEFAULT_FP_FUSION", "1")  # silences 3.9's warning
        command = [self.python, "-I", str(WORKER), "--memory-mb", str(self.limits.memory_mb),
                   "--cpu-seconds", str(int(self.limits.seconds * 4) + 10)]
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=self._stderr, env=env, close_fds=True, cwd=tempfile.gettempdir())
        except OSError as error:
            raise ReplayFailed(f"cannot start {self.python}: {error}") from error
        self._buffer = b""
        self.ready = self._answer(self.limits.seconds)
        if not self.ready.get("ready"):
            raise ReplayFailed(self.ready.get("error") or "the worker did not start")
        self.start_seconds = time.perf_counter() - started
        return self.ready

    def ask(self, request: dict, seconds: float | None = None) -> dict:
        if self.process is None or self.process.poll() is not None:
            raise ReplayFailed("the worker is not running")
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as error:
            raise ReplayFailed(self._death(f"the worker stopped reading ({error})")) from error
        return self._answer(seconds or self.limits.seconds)

    def _answer(self, seconds: float) -> dict:
        deadline = time.monotonic() + seconds
        out = self.process.stdout
        with selectors.DefaultSelector() as selector:
            selector.register(out, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or len(self._buffer) > MAX_ANSWER_BYTES:
                    self.kill()
                    limit = "its time limit" if left <= 0 else "the answer size limit"
                    raise ReplayFailed(f"killed: the pass ran past {limit} ({seconds:g} s)" if left <= 0
                                       else f"killed: past {limit}")
                if not selector.select(min(left, 1.0)):
                    continue
                chunk = os.read(out.fileno(), _CHUNK)
                if not chunk:
                    raise ReplayFailed(self._death("the worker died"))
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _death(self, what: str) -> str:
        """Why the process ended: its signal or exit status and the end of what it printed."""
        code = self.process.wait(timeout=5) if self.process else None
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - 2000))
        tail = self._stderr.read().decode("utf-8", "replace").strip()
        memory = " (out of its memory limit?)" if "MemoryError" in tail or "bad_alloc" in tail else ""
        return f"{what}: {how}{memory}" + (f"; it printed: {tail[-600:]}" if tail else "")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        if self.process is None:
            return
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self.process.stdout.close()
        self._stderr.close()
        self.process = None


def installed_triton() -> str | None:
    """The version of the `triton` this interpreter could import, without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("triton")
    except PackageNotFoundError:
        return None


def parse_pythons(setting: str | None) -> dict[str, str]:
    """`3.9=/venvs/t39/bin/python,3.1.0=/venvs/t31/bin/python` -> {version: interpreter}."""
    pythons = {}
    for item in (setting or "").split(","):
        version, sep, path = item.partition("=")
        if sep and version.strip() and path.strip():
            pythons[version.strip()] = path.strip()
    return pythons


def _matches(wanted: str, have: str) -> bool:
    """3.9.0 matches a setting for 3.9.0 or 3.9; a setting for 3 matches any 3.x."""
    return wanted == have or wanted.startswith(have + ".")


def choose_python(capture_version: str | None, explicit: str | None = None,
                  setting: str | None = None) -> tuple[str | None, str]:
    """The interpreter to replay with, and why it was chosen (None: none fits)."""
    if explicit:
        return explicit, "named with --python"
    pythons = parse_pythons(setting)
    here = installed_triton()
    if capture_version:
        if here and _matches(capture_version, here):
            return sys.executable, f"this interpreter's triton {here} matches the capture's"
        for version in sorted(pythons, key=len, reverse=True):
            if _matches(capture_version, version):
                return pythons[version], f"the replay_pythons setting names it for Triton {version}"
        return None, (f"no interpreter with Triton {capture_version}: install irlens[replay] with that "
                      f"version, pass --python, or name one in IRLENS_REPLAY_PYTHONS")
    if here:
        return sys.executable, f"the capture names no Triton version; this interpreter has {here}"
    if len(pythons) == 1:
        return next(iter(pythons.values())), "the capture names no Triton version; the one replay_pythons names"
    return None, "the capture names no Triton version and this interpreter has no triton: pass --python"
