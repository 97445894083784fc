"""Files of Triton's kernel cache (stage files, metadata, group files, binaries), gathered per cache
folder; the folders are tied to compilations later (app/ingest/linking.py). With a disassembler, each
cubin's SASS is made in the background while the rest of the upload is read (app/ingest/disassembler.py)."""

from __future__ import annotations

import posixpath
from concurrent.futures import Future
from typing import BinaryIO

from app.ingest.binary_resources import CubinTap
from app.ingest.disassembler import Disassembler, SassJobs
from app.ingest.file_streams import drain, read_small
from app.ingest.linking import CacheFolder, dsl_keep_group, kept_stem
from app.ingest.state import IngestState
from app.store.blobs import sha256
from parsers.caches import cache
from parsers.caches.amdgcn_resources import amdgcn_resources


class CacheFiles:
    def __init__(self, state: IngestState, disassembler: Disassembler | None = None) -> None:
        self.state = state
        self.folders: dict[str, CacheFolder] = {}
        self.disassembler = disassembler  # None: cubins are recorded by size and hash only, nothing said
        self.sass_jobs = SassJobs(disassembler) if disassembler is not None else None
        self.pending_sass: list[tuple[CacheFolder, str, Future]] = []  # (folder, cubin path, its SASS job)
        self.made_sass: list[dict] = []  # the SASS artifacts disassembled here (a kernel dump's own .sass wins)
        self.cubins_without_sass = 0

    def close(self) -> None:
        if self.sass_jobs is not None:
            self.sass_jobs.close()

    def read(self, path: str, role: str, stream: BinaryIO) -> tuple[str, int]:
        """Keep one cache file; returns its role (``duplicate`` for a second copy) and size."""
        problem = self.state.problem
        folder = self.folders.setdefault(cache.folder_of(path), CacheFolder(cache.folder_of(path)))
        if path in folder.paths:
            size, _ = drain(stream)
            problem("warning", "the same file is in the upload twice: the second copy is not kept", path=path)
            return "duplicate", size
        if role == "cache-binary":
            tap = CubinTap(stream) if path.endswith(".cubin") else None
            if tap is not None:
                stream = tap  # type: ignore[assignment]  # read through it: the resources come on the way
            if self.sass_jobs is not None and path.endswith(".cubin"):
                size, digest, job = self.sass_jobs.add(stream)
                if job is None:
                    self.cubins_without_sass += 1
                else:
                    self.pending_sass.append((folder, path, job))
            else:
                size, digest = drain(stream)
            folder.add(path.rsplit(".", 1)[-1], path, size, digest, None, None)
            if tap is not None:
                kernels, reason = tap.resources()
                if reason and not kernels:
                    problem("warning", f"registers and stack of this cubin not read: {reason}", path=path)
                folder.resources = {"source": "cubin", "kernels": kernels, "problem": reason}
                folder.binary_resources[path] = folder.resources
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
        if kind == "amdgcn" and not folder.resources:
            folder.resources = {"source": "amdgcn", **amdgcn_resources(data.decode("utf-8", "replace"))}
        match = sha256(data.rstrip(b"\r\n")) if kind in ("ttir", "ttgir", "glir", "source") else None
        folder.add(kind, path, len(data), digest, blob, match)
        return role, len(data)

    def collect_sass(self) -> None:
        """Store each cubin's SASS (made in the background while the rest was read) as a `sass` artifact."""
        for folder, cubin, job in self.pending_sass:
            sass = job.result()
            if sass.problem:
                self.state.problem("warning", sass.problem, path=cubin)
            if sass.text is None:
                continue
            artifact = {"kind": "sass", "path": cubin[: -len(".cubin")] + ".sass", "size": len(sass.text),
                        "sha256": sha256(sass.text), "blob": self.state.blobs.put(sass.text)}
            folder.files.append(artifact)  # not in folder.paths: an uploaded .sass of that name still counts
            self.made_sass.append(artifact)
        self.pending_sass = []
        if self.cubins_without_sass and self.disassembler is not None and self.disassembler.tool is None:
            count = self.cubins_without_sass
            self.state.problem("warning", f"SASS not shown for {count} cubin{'s' if count > 1 else ''}: "
                               f"{self.disassembler.reason}")

    def split_kept(self, claimed: frozenset[str]) -> None:
        """A DSL's dump folder holding several kernels' kept artifacts (CUTE_DSL_DUMP_DIR after several
        compiles): one folder per kernel, so each joins its own IR's compilation (`claimed`: the per-pass
        groups, folder/name) with its own cubin's resources. Triton's folders are left whole."""
        for key, folder in list(self.folders.items()):
            if folder.metadata is not None or any(f["kind"] in ("ttir", "ttgir", "json", "grp") for f in folder.files):
                continue
            stems = {kept_stem(f["path"]) for f in folder.files}
            if len(stems) < 2 or not any(posixpath.join(folder.path, stem) in claimed for stem in stems):
                continue
            del self.folders[key]
            for stem in sorted(stems):
                part = CacheFolder(folder.path)
                part.files = [f for f in folder.files if kept_stem(f["path"]) == stem]
                part.paths = {f["path"] for f in part.files}
                cubins = [f["path"] for f in part.files if f["path"] in folder.binary_resources]
                part.resources = folder.binary_resources[cubins[0]] if cubins else None
                self.folders[f"{key}\x00{stem}"] = part

    def check(self, claimed: frozenset[str] = frozenset()) -> None:
        """Tell the user about cache folders that are suspect as a whole: a copy of another one, or
        a kernel binary alone (a .cubin shows nothing but its size and hash). `claimed`: the per-pass
        groups (folder/name) whose compilation a DSL's kept artifacts join: not alone."""
        problem = self.state.problem
        seen: dict[frozenset, str] = {}
        made = {id(artifact) for artifact in self.made_sass}
        binary_only: list[str] = []  # one warning for all: an autotuner can leave thousands
        for folder in self.folders.values():
            if folder.origin == "trace" or dsl_keep_group(folder) in claimed:
                continue  # a traced compilation holds texts only; a DSL's artifacts join their IR
            if sum(artifact["kind"] == "sass" for artifact in folder.files) > 1:  # a kernel dump's own .sass
                folder.files = [artifact for artifact in folder.files if id(artifact) not in made]
            files = frozenset((artifact["kind"], artifact["sha256"]) for artifact in folder.files)
            if files and files in seen:
                problem("warning", f"the same kernel files as {seen[files] or 'the top folder'}: "
                        "a copy of the same cache entry", path=folder.path or None)
            seen.setdefault(files, folder.path)
            kinds = {artifact["kind"] for artifact in folder.files if id(artifact) not in made}
            if kinds and kinds <= {"cubin", "hsaco"} and not folder.is_entry:
                for artifact in folder.files:
                    problem("warning", "not a kernel binary that could be read: kept as an input only, "
                            "no compilation", path=artifact["path"])
            elif kinds and kinds <= {"cubin", "hsaco"}:
                with_sass = any(id(artifact) in made for artifact in folder.files)
                kept = "by size and hash, and its SASS" if with_sass else "by size and hash only"
                for artifact in folder.files:
                    if id(artifact) not in made:
                        problem("warning", "a kernel binary without the IR or metadata of its cache folder: "
                                f"kept {kept}", path=artifact["path"])
            elif cache.is_binary_only(kinds):
                binary_only.append(folder.path)
            elif kinds and not folder.is_entry:
                problem("warning", "not a Triton cache entry (no kernel metadata, no IR): its files are kept as "
                        "inputs, unless a log's compilation claims them by name", path=folder.path or None)
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
        if binary_only:
            count = len(binary_only)
            what = "A binary-only cache entry" if count == 1 else f"{count} binary-only cache entries (the first named)"
            problem("warning", f"{what}: {cache.BINARY_ONLY_WHY}", path=binary_only[0] or None)
