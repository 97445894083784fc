"""TileLang (`tilelang`): the per-pass TVMScript folder `tl.enable_dump_ir` writes.

This room owns the file-name grammar of a `tl.dump_ir_path` folder (`names`): TVM's DumpIR
instrument writes the module after each pass as `{counter:03d}_{pass}.py` TVMScript
(`# from tvm.script import ir as I` first). The files become one compilation per folder through
app/ingest/pass_files.py, as the MLIR per-pass folders of parsers/perpass/ do.

May import `parsers/records.py` and `parsers/perpass/` (its file-place record); never `app/`.
"""
