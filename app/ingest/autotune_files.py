"""Autotuning result files in an upload (parsers/autotuning/autotune_files.py): Helion's autotune_log CSV
and its .meta.jsonl sidecar, Triton's <kernel>.autotune.json. Entries are gathered as the files stream by and
joined at the end (a sidecar or a log may come before or after the file it completes), then added to
`runs.autotune` beside those the logs printed."""

from __future__ import annotations

import copy
import io
from typing import Any, BinaryIO

from app.ingest.file_streams import read_small
from app.ingest.state import IngestState
from parsers.autotuning import autotune_files


class AutotuneFiles:
    def __init__(self, state: IngestState) -> None:
        self.state = state
        self.helion: list[dict[str, Any]] = []
        self.meta: dict[str, dict[str, Any]] = {}
        self.triton: list[dict[str, Any]] = []

    def read(self, path: str, head: bytes, stream: BinaryIO) -> str:
        """Read one file; returns the note its input record shows."""
        if autotune_files.is_triton_autotune_json(path, head):
            data = read_small(stream, path)
            try:
                entry = autotune_files.read_triton_autotune(path, data.decode("utf-8", "replace"))
            except (ValueError, TypeError, KeyError, IndexError, RecursionError) as error:
                self.state.problem("warning", f"Triton autotune cache file not read: {str(error)[:200] or type(error).__name__}",
                                   path=path)
                return "Triton autotune cache file, damaged: not read"
            self.triton.append(entry)
            return f"Triton autotune timings: {len(entry['choices'])} configs"
        text = io.TextIOWrapper(io.BufferedReader(stream), encoding="utf-8", errors="replace", newline="")  # type: ignore[arg-type]
        if autotune_files.is_helion_meta(path, head):
            found, problems = autotune_files.read_helion_meta(text)
            self.meta.update(found)
            note = f"Helion autotune metadata: {len(found)} sessions"
        else:
            reader = autotune_files.HelionLogReader(path)
            entries = reader.read(text)
            self.helion += entries
            problems = reader.problems
            note = f"Helion autotune log: {len(entries)} sessions, {sum(len(e['choices']) for e in entries)} configs"
        for problem in problems:
            self.state.problem("warning", f"Helion autotune file: {problem}", path=path)
        return note

    def finish(self) -> None:
        autotune_files.join_helion_meta(self.helion, self.meta)
        if not (self.triton or self.helion):
            return
        run = self.state.run
        entries = copy.deepcopy(run.autotune or [])  # a new value: the JSON column sees no change in place
        for cached in self.triton:
            if not autotune_files.merge_triton_timings(entries, cached):
                entries.append(cached)
        run.autotune = entries + self.helion
