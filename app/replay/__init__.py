"""Replay: re-run a compilation's passes on their dumped IR with a Triton of the capture's version, and
build reproducers (reproducer.mlir for `triton-opt --run-reproducer`, a short reproducer.py).

Building a reproducer is pure (`reproducers`). Running a pass needs Triton, so it happens in a worker
process (`worker`, standard library and triton only) that `runner` starts with time and memory limits,
never in the web worker. `plan` pairs dumps with the passes the backend's own stages add; `compare`
reads a result against the stored next dump; `replay` ties them to a stored compilation.

The package may import `app.store`, `app.diff`, `app.settings` and `app.urls`, never `app.web` or `app.cli`.
"""
