"""cuTile (`cuda-tile`): what its compiler prints and writes.

This room owns the splitting of `CUDA_TILE_LOGS=CUTILEIR,TILEIR` output into its modules (`logs`):
each kernel's CuTile IR (the Python frontend's IR, `==== CuTile IR for NAME====`) and its TileIR
(`==== TILEIR ====`, the `cuda_tile` dialect as tileirdisasm prints the bytecode). TileIR text
files (`CUDA_TILE_DUMP_TILEIR`'s `.tileir`, or any `cuda_tile.module` text) are per-pass files of one
module (parsers/perpass/); TileIR bytecode (`.tileirbc`) is decoded by NVIDIA's tileirdisasm where
it is installed (app/ingest/cutile_files.py).

May import `parsers/records.py`; no other room, never `app/`.
"""
