"""`irlens serve` in a child process on a free port: the one real server benchmarks and tests start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.inputs import REPO


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serve(
    db_url: str, data_dir: Path, workers: int = 1, env: dict | None = None, startup_seconds: float = 90
) -> Iterator[tuple[str, Path]]:
    """Yields (base URL, server log path). The demo is off unless `env` turns it on; `env` also sets
    any other IRLENS_* setting (with IRLENS_BASE_URL the URL carries the prefix)."""
    port = free_port()
    log_path = data_dir / "server.log"
    child_env = {**os.environ, "IRLENS_LOAD_DEMO": "false", "IRLENS_DATA_DIR": str(data_dir), **(env or {})}
    child_env.pop("IRLENS_DB_URL", None)  # --db names the database
    command = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--db", db_url, "--workers", str(workers)]
    data_dir.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=REPO, env=child_env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + startup_seconds
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"irlens serve exited with {process.returncode}:\n{log_path.read_text()}")
                try:
                    if httpx.get(f"{url}/-/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"irlens serve did not answer in {startup_seconds:g} s:\n{log_path.read_text()}")
                time.sleep(0.1)
            yield url + child_env.get("IRLENS_BASE_URL", "").rstrip("/"), log_path
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
