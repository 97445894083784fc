"""The parsers: bytes in, records out, for every input format irlens reads. Pure and streaming: no
database, no web; nothing here imports `app/`.

Rooms by input family (each `__init__` says what it owns and what it may import):

- `parsers/inputs/`: paths, folders, uploads and archives turned into a stream of files, safely;
- `parsers/logs/`: a compiler's log stream: IR dump banners (MLIR, LLVM), dumps, the gap text
  (timing, diagnostics, crash reproducers, LLVM's pass-manager trace) and dumps grouped into compilations;
- `parsers/caches/`: Triton cache and kernel-dump folders, and the binaries and assembly in them
  (cubin resources, SASS, AMDGCN resources);
- `parsers/traces/`: structured compile and launch traces (tritonparse);
- `parsers/profiles/`: profiles (Proton, Nsight Compute);
- `parsers/autotuning/`: autotuning results, printed in a log or kept in files of their own;
- `parsers/locations/`: IR lines -> Python source lines (`parsers/locations/loc.py` is the entry);
- `parsers/perpass/`: per-pass file folders of any MLIR/LLVM pipeline (`<prefix>_NNN_<Pass>.mlir`, MLIR
  tree printing, LLVM `-ir-dump-directory`, CuTe DSL's `CUTE_DSL_KEEP` IR) and bare module files;
- `parsers/cutile/`: cuTile's `CUDA_TILE_LOGS` output split into its modules;
- `parsers/tilelang/`: TileLang's `tl.dump_ir_path` folder of per-pass TVMScript.

At the top, shared by all: `parsers/records.py` (the dump records) and `parsers/literal_scan.py` (one
pass for several literals) sit below every room and import none; `parsers/registry.py`, the one list
of input formats, sits above the rooms and reads their matchers.

A new input family gets a room of its own, named for it: one per tile DSL (e.g. `parsers/helion/`,
`parsers/cute/`, `parsers/cutile/`, `parsers/tilelang/`) and one for per-pass file folders of any
MLIR/LLVM pipeline. A room may import `parsers/records.py`, `parsers/literal_scan.py` and other rooms
(e.g. `parsers/logs/` for banners and compilations), never in a circle and never `parsers/registry.py`;
its formats are registered in `parsers/registry.py`. A room is never named like a module that moved in
issue 37 (`log`, `cache`, `sources`, `autotune`, ...): the import rewriter relies on it.
tests/test_import_cycles.py checks all of this.
"""
