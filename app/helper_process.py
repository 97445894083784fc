"""What the ingest's helper processes (app/ingest/log_prescan.py, app/insight/op_term_scan.py) share: starting one
with this same `app` importable and a wide pipe, and the length-prefixed frames on its pipes (the
payload's length as 8 little-endian bytes, then the payload)."""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path
from typing import BinaryIO

PIPE_BYTES = 1 << 20  # asked for the pipe to or from a helper (Linux allows 1 MB unprivileged)
_APP_ROOT = str(Path(__file__).resolve().parent.parent)
_LENGTH = struct.Struct("<Q")


def start_helper(command: list[str], stdin: int, widen: str) -> subprocess.Popen | None:
    """`command` with stdout to a pipe, or None when it cannot be started. `widen` names the pipe to
    enlarge, "stdin" or "stdout": the one carrying the bulk of the bytes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (_APP_ROOT, env.get("PYTHONPATH"))))
    try:
        process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, env=env, close_fds=True)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    try:
        import fcntl

        fcntl.fcntl(getattr(process, widen).fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):
        pass  # a smaller pipe only means more reads and writes
    return process


def write_frame(out: BinaryIO, payload: bytes) -> None:
    out.write(_LENGTH.pack(len(payload)))
    out.write(payload)


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next frame's payload; None at the end of the stream or when a frame is cut short."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    payload = stream.read(size)
    return payload if len(payload) == size else None
