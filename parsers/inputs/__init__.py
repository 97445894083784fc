"""Inputs: user paths, folders and uploads turned into a stream of files, safely (`sources.py`, the
walker): formats by magic bytes and safe member names (`source_names.py`), tar and zip members
(`archives.py`), decoders and metered replayable readers (`source_streams.py`), the walk's limits and
what it skipped (`source_limits.py`). Streams only: memory stays flat however large the input.

May import `parsers/records.py` and `parsers/literal_scan.py`; no other room, never `app/`.
"""
