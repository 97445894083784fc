"""Files of Triton's kernel cache (stage files, metadata, group files, binaries), gathered per cache
folder; the folders are tied to compilations later (app/linking.py)."""

from __future__ import annotations

from typing import BinaryIO

from app.blobs import sha256
from app.file_streams import drain, read_small
from app.ingest_state import IngestState
from app.linking import CacheFolder
from parsers import cache


class CacheFiles:
    def __init__(self, state: IngestState) -> None:
        self.state = state
        self.folders: dict[str, CacheFolder] = {}

    def read(self, path: str, role: str, stream: BinaryIO) -> tuple[str, int]:
        """Keep one cache file; returns its role (``duplicate`` for a second copy) and size."""
        problem = self.state.problem
        folder = self.folders.setdefault(cache.folder_of(path), CacheFolder(cache.folder_of(path)))
        if path in folder.paths:
            size, _ = drain(stream)
            problem("warning", "the same file is in the upload twice: the second copy is not kept", path=path)
            return "duplicate", size
        if role == "cache-binary":
            size, digest = drain(stream)
            folder.add(path.rsplit(".", 1)[-1], path, size, digest, None, None)
            return role, size
        data = read_small(stream, path)
        digest = sha256(data)
        if role == "cache-metadata":
            metadata, problems = cache.read_metadata(data)
            for text in problems:
                problem("warning", text, path=path)
            folder.metadata = metadata or folder.metadata
            kind = "json"
        elif role == "cache-group":
            kind = "grp"
        else:
            kind = cache.stage_of(path) or "text"
        blob = self.state.blobs.put(data, digest)
        match = sha256(data.rstrip(b"\r\n")) if kind in ("ttir", "ttgir", "glir", "source") else None
        folder.add(kind, path, len(data), digest, blob, match)
        return role, len(data)

    def check(self) -> None:
        """Tell the user about cache folders that are suspect as a whole: a copy of another one, or
        a kernel binary alone (a .cubin shows nothing but its size and hash)."""
        problem = self.state.problem
        seen: dict[frozenset, str] = {}
        for folder in self.folders.values():
            if folder.origin == "trace":
                continue  # a traced compilation holds texts only, never a binary
            files = frozenset((artifact["kind"], artifact["sha256"]) for artifact in folder.files)
            if files and files in seen:
                problem("warning", f"the same kernel files as {seen[files] or 'the top folder'}: "
                        "a copy of the same cache entry", path=folder.path or None)
            seen.setdefault(files, folder.path)
            kinds = {artifact["kind"] for artifact in folder.files}
            if kinds and kinds <= {"cubin", "hsaco"}:
                for artifact in folder.files:
                    problem("warning", "a kernel binary without the IR or metadata of its cache folder: "
                            "kept by size and hash only", path=artifact["path"])
            elif "json" in kinds:
                # Every complete cache entry holds its TTGIR, LLVM IR and binary beside the metadata.
                missing = [name for name, found in (
                    (".ttgir", "ttgir" in kinds), (".llir", "llir" in kinds), ("binary", kinds & {"cubin", "hsaco"}),
                ) if not found]
                if missing:
                    problem("warning", f"an incomplete cache entry: no {', '.join(missing)} (the compile "
                            "failed, or files were left out of the upload); the rest is kept",
                            path=folder.path or None)
            elif kinds and not kinds & {"ttir", "ttgir", "glir", "source", "grp"}:
                problem("warning", "stage files without the IR or metadata of their cache folder: kept, "
                        "but nothing ties them to a log's compilation", path=folder.path or None)
