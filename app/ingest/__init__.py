"""Ingest: an upload (files, folders, archives, a CLI path list) read through the parsers and written
as one run. Walking inputs, reading logs (with the helper-process prescan), cache folders and
tritonparse traces, linking the pieces to compilations, disassembling binaries, and `irlens capture`.

May import `parsers/`, the pure rooms, `app.store`, `app.render`, `app.insight` (the op index is
built at ingest) and the top-level helpers; never `app.web` or `app.cli`.
"""
