"""Per-pass file folders and bare IR files: one file per snapshot rather than one log of dumps.

This room owns the file-name grammars (`names`) of the folders that pipelines write one pass per
file: `<prefix>_NNN_<Pass>.mlir` splits of MLIR's print-after-all (CuTe DSL users' dump scripts,
with `<prefix>_0_with_loc.mlir` / `<prefix>_0_.mlir` holding the IR before the first pass), MLIR's
tree printing (`--mlir-print-ir-tree-dir`, `tree_printing_path`), LLVM's `-ir-dump-directory`,
CuTe DSL's `CUTE_DSL_KEEP` IR files, and a bare `.mlir` / TileIR text file holding one module; and
how one file's text becomes a dump (`files`). Grouping the files into compilations and storing them
is app/ingest/pass_files.py's.

May import `parsers/records.py` and `parsers/logs/` (banners, scopes, compilations); never `app/`.
"""
