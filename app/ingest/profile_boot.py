"""`irlens capture --profile`: the program runs under Proton, started before its first kernel compiles.

A `sitecustomize.py` in a folder put first on PYTHONPATH starts Proton in the child process: PC
sampling (per-line samples and stall reasons) where the GPU and driver allow it, else Proton's
default mode (kernel times); it says which on stderr (kept in the capture log) and finalizes at exit,
writing `profile.hatchet` beside the log, which the capture then ingests with the run.
"""

from __future__ import annotations

import os
from pathlib import Path

BOOT = '''\
import atexit, os, sys
_path = os.environ.get("IRLENS_PROFILE_PATH")
if _path:
    try:
        import triton.profiler as _proton
    except Exception as _error:
        sys.stderr.write("irlens: --profile: Proton (triton.profiler) is not importable: %s; no profile\\n" % _error)
    else:
        try:
            _proton.start(_path, hook="triton", mode="pcsampling")
            _mode = "PC sampling"
        except Exception as _error:
            _proton.start(_path, hook="triton")
            _mode = "default (kernel times; PC sampling unavailable: %s)" % _error
        sys.stderr.write("irlens: profiling with Proton, %s mode\\n" % _mode)
        atexit.register(_proton.finalize)
'''


def profile_environment(env: dict[str, str], folder: Path, also: str = "") -> Path:
    """Set up `env` for a profiled run in `folder`; the profile's path once the program ends. `also`:
    more start-up code for the same `sitecustomize.py` (Python runs only the first one it finds)."""
    boot = folder / "proton-boot"
    boot.mkdir(exist_ok=True)
    (boot / "sitecustomize.py").write_text(BOOT + also)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(boot), env.get("PYTHONPATH", "")]))
    env["IRLENS_PROFILE_PATH"] = str(folder / "profile")  # Proton appends .hatchet
    return folder / "profile.hatchet"
