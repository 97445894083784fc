"""cuTile's outputs: `CUDA_TILE_LOGS=CUTILEIR,TILEIR` logs split into their modules, and TileIR
bytecode (`.tileirbc`, `CUDA_TILE_DUMP_BYTECODE`) decoded by NVIDIA's tileirdisasm where it is found.

A cuTile log is read as any log (its other lines kept as the log's text, Triton dumps in it read
too); each kernel's CuTile IR and TileIR become one compilation of that log (parsers/cutile/logs.py).
tileirdisasm comes with the CUDA Toolkit (13.1 and later) and with the `nvidia-cuda-tileiras` pip
package (`nvidia/cu13/bin`); without it the bytecode is kept by size and hash, and the upload's
file list says which tool decodes it.
"""

from __future__ import annotations

import importlib.util
import io
import os
import posixpath
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import BinaryIO

from app.ingest.file_streams import read_small
from app.ingest.log_reader import LogReader
from app.ingest.pass_files import PassFiles, compilation_of
from app.ingest.state import IngestState
from app.store.blobs import sha256
from parsers.cutile import logs as cutile_logs
from parsers.perpass.names import MODULE, PassFile
from parsers.records import DumpHeader

TIMEOUT_SECONDS = 60.0
NO_TOOL = ("TileIR bytecode, kept by size and hash: not decoded, since NVIDIA's tileirdisasm was not found "
           "(CUDA Toolkit 13.1+, or `pip install nvidia-cuda-tileiras`, on PATH)")


def find_tileirdisasm() -> str | None:
    """tileirdisasm on PATH, else the copy the nvidia-cuda-tileiras package installs (nvidia/cu13/bin)."""
    found = shutil.which("tileirdisasm")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for cuda in ("cu13", "cu14"):
            candidate = Path(folder) / cuda / "bin" / "tileirdisasm"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


class CutileFiles:
    def __init__(self, state: IngestState, logs: LogReader, pass_files: PassFiles) -> None:
        self.state = state
        self.logs = logs
        self.pass_files = pass_files
        self._tool: str | None | bool = False  # looked for on the first bytecode file

    def read_log(self, path: str, stream: BinaryIO, origin: str | None) -> str | None:
        """A cuTile log: read as a log, then its modules as compilations of it. Returns the log's blob."""
        data = read_small(stream, path)
        blob = self.logs.read(path, io.BytesIO(data), None)
        result = self.state.logs[-1]
        text = data.decode("utf-8", "replace")
        for number, kernel in enumerate(cutile_logs.split(text)):
            group = f"{path}#{number + 1}"
            members = []
            for order, block in enumerate(kernel.blocks):
                if block.cut:
                    self.state.problem("warning", f"the {block.kind} of {kernel.name or 'a kernel'} is cut short: "
                                       "kept as far as it goes", path=path, line=block.line)
                info = PassFile(MODULE, group, (order,), kernel.name or "", block.kind, "after")
                header = DumpHeader("mlir", "after", block.kind, None, None, None, False, block.header)
                members.append(self.pass_files.store(path, info, block.text.encode("utf-8"), header, block.line + 1))
            if members:
                result.grouper.compilations.append(compilation_of(group, members))
        result.note = None if result.grouper.compilations else result.note
        return blob

    def read_bytecode(self, path: str, stream: BinaryIO) -> tuple[int, str]:
        """TileIR bytecode: its disassembly as a one-snapshot compilation named for the file (its
        cubin beside it joins it), or a note naming the tool. Returns the size and the note."""
        data = read_small(stream, path)
        if self._tool is False:
            self._tool = find_tileirdisasm()
        if not self._tool:
            self.state.problem("warning", NO_TOOL, path=path)
            return len(data), f"{NO_TOOL} (sha256 {sha256(data)[:12]})"
        text, problem = _disassemble(str(self._tool), data)
        if text is None:
            self.state.problem("warning", f"TileIR bytecode not decoded: {problem}", path=path)
            return len(data), f"TileIR bytecode, not decoded: {problem}"
        folder, name = posixpath.split(path)
        stem = name.removesuffix(".tileirbc")
        info = PassFile(MODULE, posixpath.join(folder, stem), (0,), stem, "tileirdisasm", "after")
        header = DumpHeader("mlir", "after", "tileirdisasm", None, None, None, False, f"tileirdisasm -g {name}")
        self.pass_files.groups.setdefault(info.group, []).append(self.pass_files.store(path, info, text, header))
        return len(data), f"TileIR bytecode, decoded by {posixpath.basename(str(self._tool))} -g"


def _disassemble(tool: str, data: bytes) -> tuple[bytes | None, str | None]:
    """`tileirdisasm -g` of the bytecode (with its debug info: the ops' locations), or why not."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "input.tileirbc"
        source.write_bytes(data)
        try:
            done = subprocess.run([tool, "-g", str(source)], capture_output=True, timeout=TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return None, f"{os.path.basename(tool)} failed to run: {error}"
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"{os.path.basename(tool)} exited with {done.returncode}: {message[-1] if message else ''}"
    return done.stdout, None
