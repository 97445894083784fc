"""The one list of input formats: which parser applies to which uploaded file.

Each entry names the role a matching file plays; app/ingest/pipeline.py (Ingest._ingest_file) has one
handler per role, since storing is not the parsers' business. Adding a format means a parser
module, an entry here, and, for a new role, its handler there. Order matters: the first match wins.
Inside a log, the dump formats (mlir_dump, llvm_dump) and timing reports are told apart by
parsers/logs/log.py, which scans the stream once for all of them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from parsers.autotuning import autotune_files
from parsers.caches import cache
from parsers.cute.keep import keep_file
from parsers.cutile.logs import is_cutile_log
from parsers.helion import generated as helion_generated
from parsers.perpass.names import PassFile, pass_file
from parsers.profiles import ncu, proton
from parsers.tilelang.names import dump_file as tilelang_dump_file
from parsers.traces import tritonparse


@dataclass(frozen=True)
class InputFormat:
    role: str  # what the ingest does with it
    description: str
    applies: Callable[[str, bytes], bool]


# Executables and object files (a .cubin is an ELF file), Mach-O, PE: never a log, whatever the name.
_BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"MZ\x90\x00")


def _is_binary_data(head: bytes) -> bool:
    """An executable, or mostly control bytes. A log with a few NUL bytes in it (binary junk written
    into stderr) stays a log: its dumps are read, and the junk is reported where it lands."""
    if head.startswith(_BINARY_MAGIC):
        return True
    if not head:
        return False
    controls = sum(1 for byte in head if byte < 9 or 13 < byte < 32)
    return controls > len(head) // 10


def _is_cache_metadata(path: str, head: bytes) -> bool:
    """Kernel metadata by its content, or by its place: `{name}.json` in a cache folder (a 52-character
    base32 or 64-character hex hash) is metadata even when it is cut short or not JSON, so that it is
    reported as broken metadata rather than read as a log."""
    if head.lstrip().startswith(b"{") and b'"hash"' in head:
        return True
    folder = posixpath.basename(posixpath.dirname(path))
    return _CACHE_FOLDER.fullmatch(folder) is not None and not path.endswith(".autotune.json")


_CACHE_FOLDER = re.compile(r"[A-Z2-7]{52}|[0-9a-f]{64}")


FORMATS: list[InputFormat] = [
    InputFormat(
        "tritonparse",
        "tritonparse trace: raw or parsed NDJSON (.ndjson, .ndjson.gz, .bin.ndjson of gzip members or zstd frames)",
        tritonparse.is_trace,
    ),
    InputFormat(
        "profile",
        "Profile with per-line metrics: Proton's Hatchet JSON (.hatchet), an Nsight Compute report (.ncu-rep) or its "
        "source page as CSV (ncu -i r.ncu-rep --page source --csv --print-source cuda,sass)",
        lambda path, head: proton.is_hatchet(path, head) or path.endswith(".ncu-rep") or ncu.is_source_csv(path, head),
    ),
    InputFormat(
        "profile-launches",
        "Nsight Compute raw page as CSV (--page raw --csv): each profiled kernel's launch, to join it to its compilation",
        ncu.is_raw_csv,
    ),
    InputFormat(
        "autotune",
        "Autotuning results in files of their own: Helion's autotune_log CSV (told by its header, any name) and its "
        ".meta.jsonl sidecar, Triton's <kernel>.autotune.json (cache_results=True / TRITON_CACHE_AUTOTUNING=1)",
        lambda path, head: (autotune_files.is_helion_csv(path, head) or autotune_files.is_helion_meta(path, head)
                            or autotune_files.is_triton_autotune_json(path, head)),
    ),
    InputFormat(
        "ignored",
        "Not read: tritonparse's list of parsed files (log_file_list.json), its CLP-compressed traces (.clp)",
        lambda path, head: posixpath.basename(path) == "log_file_list.json" or path.endswith(".clp"),
    ),
    InputFormat(
        "cache-group", "Triton cache group file (__grp__NAME.json)", lambda path, head: cache.is_group_file(path)
    ),
    InputFormat(
        "cache-stage",
        "Kernel stage file from a Triton cache or TRITON_KERNEL_DUMP folder (.source .ttir .glir .ttgir .llir .ptx .amdgcn .sass)",
        lambda path, head: cache.stage_of(path) is not None,
    ),
    InputFormat(
        "cache-binary", "Kernel binary (.cubin .hsaco), recorded by size and hash; a cubin is also disassembled to SASS "
        "when nvdisasm or cuobjdump is at hand", lambda path, head: cache.is_binary(path),
    ),
    InputFormat(
        "cache-metadata",
        "Kernel metadata JSON from a Triton cache folder",
        lambda path, head: path.endswith(".json") and _is_cache_metadata(path, head),
    ),
    InputFormat(
        "cutile-log",
        "cuTile's CUDA_TILE_LOGS=CUTILEIR,TILEIR output: read as a log, each kernel's CuTile IR and TileIR a "
        "compilation of it",
        lambda path, head: is_cutile_log(head),
    ),
    InputFormat(
        "tileir-bytecode",
        "cuTile's TileIR bytecode (.tileirbc, CUDA_TILE_DUMP_BYTECODE): decoded by tileirdisasm where installed",
        lambda path, head: path.endswith(".tileirbc"),
    ),
    InputFormat(
        "pass-file",
        "One IR file per pass (parsers/perpass/): <prefix>_NNN_<Pass>.mlir with <prefix>_0_with_loc.mlir, MLIR "
        "tree-printing folders, LLVM -ir-dump-directory folders, CuTe DSL's CUTE_DSL_KEEP IR (parsers/cute/); a bare .mlir or "
        "TileIR text (cuda_tile.module) file: one module, one snapshot",
        lambda path, head: ir_file_place(path, head) is not None,
    ),
    InputFormat(
        "tilelang-pass",
        "TileLang's tl.dump_ir_path folder: {counter:03d}_{pass}.py TVMScript after each pass, one compilation",
        lambda path, head: tilelang_dump_file(path, head) is not None,
    ),
    InputFormat(
        "helion-code",
        "Helion's generated Triton code, saved as a file: Python with `# src[file:line]` comments tying each "
        "statement to its Helion line (HELION_PRINT_OUTPUT_CODE=1 prints it into a log, where it is read too)",
        helion_generated.is_generated_code,
    ),
    InputFormat("source", "Python source the IR's loc() entries point at", lambda path, head: path.endswith(".py")),
    InputFormat(
        "ignored",
        "Not needed by irlens: compiled Python (.pyc), launcher libraries (.so), .DS_Store",
        lambda path, head: path.endswith((".pyc", ".so")) or posixpath.basename(path) == ".DS_Store",
    ),
    InputFormat("binary", "Binary data that is not a log", lambda path, head: _is_binary_data(head)),
    InputFormat(
        "log",
        "Text log: MLIR/LLVM pass dumps, timing reports, diagnostics and any other lines (stderr, MLIR_DUMP_PATH file)",
        lambda path, head: True,
    ),
]


def ir_file_place(path: str, head: bytes) -> PassFile | None:
    """A "pass-file" input's place in its folder: CuTe DSL's kept IR first, then the generic styles."""
    return keep_file(path, head) or pass_file(path, head)


def classify(path: str, head: bytes) -> InputFormat:
    for input_format in FORMATS:
        if input_format.applies(path, head):
            return input_format
    raise AssertionError("the log format accepts everything")
