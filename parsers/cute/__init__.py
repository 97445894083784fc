"""CuTe DSL (`nvidia-cutlass-dsl`): the files its switches write.

This room owns the names of what `CUTE_DSL_KEEP` writes into `CUTE_DSL_DUMP_DIR` (`keep`): the IR
files `cute_dsl_<fn>.mlir` (`ir-debug`) and `cute_dsl_<fn>_clean.mlir` (`ir`), which become the
snapshots of one compilation (app/ingest/pass_files.py); its `<fn>.ptx`, `<fn>.sm_XX.cubin` and
`<fn>.sass` are read as cache stage files and join that compilation (app/ingest/linking.py). The
per-pass splits CuTe DSL users make are parsers/perpass/'s; the `cute` dialect's layout types are
explained in app/highlight/cute_layouts.py.

May import `parsers/records.py` and `parsers/perpass/` (its file-place record); never `app/`.
"""
