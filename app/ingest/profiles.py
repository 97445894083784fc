"""Profiles uploaded with a run: read as they stream by (size-capped), joined to the run's
compilations once those are written, stored as `profiles` and `profile_kernels` rows.

A kernel joins a compilation by the cache hash its line frames name (USE_IR_LOC=ttgir), else by
its launch (ncu: block size = num_warps x 32 and dynamic shared memory = the metadata's `shared`),
else by its name when one compilation has it. A kernel that matches several keeps them all as
candidates: its Python-line metrics then show on each, said to be shared.

A profile that cannot be read (a hand-joined JSON, a report without the ncu-report package, one
over the size cap) is named in a warning and kept as an input record; the rest of the upload ingests.
"""

from __future__ import annotations

import csv
import os
import posixpath
import tempfile
from typing import BinaryIO

from sqlalchemy import select

from app.ingest.file_streams import drain
from app.ingest.state import IngestState
from app.store.models import Compilation, Profile, ProfileKernel
from parsers.profiles import ncu, ncu_rep, proton
from parsers.profiles.profile_records import Kernel, ProfileError, leave_out_unusable
from parsers.profiles.profile_records import Profile as ParsedProfile

__all__ = ["ProfileCollector"]


class ProfileCollector:
    def __init__(self, state: IngestState, max_bytes: int) -> None:
        self.state = state
        self.max_bytes = max_bytes
        self.profiles: list[tuple[str, ParsedProfile]] = []
        self.launches: dict[str, list[dict]] = {}  # folder -> ncu raw-page rows, in kernel order

    def read(self, path: str, role: str, stream: BinaryIO) -> tuple[int, str]:
        """Read one profile file; (bytes read, the note for its input record)."""
        if path.endswith(".ncu-rep"):
            return self._read_report(path, stream)
        data = stream.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            size = len(data) + drain(stream)[0]
            return size, self._refuse(path, f"larger than the profile size cap ({self.max_bytes:,} bytes, "
                                      "setting max_profile_bytes)")
        try:
            if role == "profile-launches":
                self.launches[posixpath.dirname(path)] = ncu.parse_raw_csv(data)
                return len(data), "Nsight Compute launches (raw page)"
            if ncu.is_source_csv(path, data[:8192]):
                profile = ncu.parse_source_csv(data)
            else:
                profile = proton.parse_hatchet(data)
        except ProfileError as error:
            return len(data), self._refuse(path, str(error))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError,
                csv.Error) as error:
            # a hostile file the parser did not foresee: this file is refused, never the upload
            return len(data), self._refuse(path, f"could not be read ({type(error).__name__}: {str(error)[:200]})")
        return len(data), self._keep(path, profile)

    def _read_report(self, path: str, stream: BinaryIO) -> tuple[int, str]:
        # ncu-report reads files, not streams: spooled to a temporary file, as far as the cap allows.
        size = 0
        with tempfile.NamedTemporaryFile(suffix=".ncu-rep", delete=False) as spool:
            try:
                while block := stream.read(1 << 20):
                    size += len(block)
                    if size > self.max_bytes:
                        size += drain(stream)[0]
                        return size, self._refuse(path, f"larger than the profile size cap ({self.max_bytes:,} bytes)")
                    spool.write(block)
                spool.flush()
                if not _starts_like_report(spool.name):
                    return size, self._refuse(path, "not an Nsight Compute report: it does not start as one "
                                              "(NVR), whatever its .ncu-rep name says")
                if not ncu_rep.available():
                    return size, self._refuse(path, "an Nsight Compute report, not read: the optional ncu-report "
                                              "package is not installed (pip install 'irlens[ncu]'); upload its "
                                              "source page as CSV instead (--page source --csv --print-source cuda,sass)")
                profile = ncu_rep.parse_report(spool.name)
            except ProfileError as error:
                return size, self._refuse(path, str(error))
            finally:
                spool.close()
                os.unlink(spool.name)
        return size, self._keep(path, profile)

    def _keep(self, path: str, profile: ParsedProfile) -> str:
        """Store a parsed profile, its numbers checked; every note about what was left out is a warning."""
        leave_out_unusable(profile)
        for note in profile.notes:
            self.state.problem("warning", f"profile: {note}", path=path)
        if not profile.kernels:
            self.state.problem("warning", "profile holds no kernel: nothing of it joins a compilation", path=path)
        self.profiles.append((path, profile))
        return _summary(profile)

    def _refuse(self, path: str, reason: str) -> str:
        self.state.problem("warning", f"profile not read: {reason}", path=path)
        return f"profile not read: {reason}"

    # -- after the compilations are written ----------------------------------------
    def write(self) -> None:
        if not self.profiles:
            return
        session, run = self.state.session, self.state.run
        compilations = list(session.scalars(select(Compilation).where(Compilation.run_id == run.id)))
        for path, parsed in self.profiles:
            self._apply_launches(path, parsed)
            row = Profile(run_id=run.id, path=path, tool=parsed.tool, mode=parsed.mode, metrics=parsed.metrics,
                          devices=parsed.devices or None, notes=parsed.notes)
            session.add(row)
            session.flush()
            nearby = _same_folder(path, compilations)
            for kernel in parsed.kernels:
                compilation, candidates, joined_by = _join(kernel, nearby)
                session.add(ProfileKernel(
                    profile_pk=row.pk, run_id=run.id, name=kernel.name[:1000], base=kernel.base[:500],
                    count=kernel.count, time_ns=kernel.time_ns, compilation_pk=compilation,
                    candidates=candidates, joined_by=joined_by, totals=kernel.totals, data=_data(kernel),
                ))
        session.flush()

    def _apply_launches(self, path: str, parsed: ParsedProfile) -> None:
        """An ncu source-page CSV with the raw page beside it: the kernels come in the same order."""
        rows = self.launches.get(posixpath.dirname(path))
        if parsed.tool != "ncu" or not rows or len(rows) != len(parsed.kernels):
            return
        if any(row["name"] != kernel.base for row, kernel in zip(rows, parsed.kernels, strict=True)):
            parsed.notes.append("the raw page beside it lists other kernels: launches not joined")
            return
        for row, kernel in zip(rows, parsed.kernels, strict=True):
            kernel.launch.update({key: row[key] for key in ("block_size", "registers", "shared_dynamic") if key in row})
            if "time_ns" in row:
                kernel.time_ns = row["time_ns"]
                kernel.count = 1


def _starts_like_report(path: str) -> bool:
    with open(path, "rb") as spooled:
        return spooled.read(4) == b"NVR\x00"


def _summary(profile: ParsedProfile) -> str:
    return f"{profile.tool} profile ({profile.mode}): {len(profile.kernels)} kernels, {len(profile.metrics)} metrics"


def _same_folder(path: str, compilations: list[Compilation]) -> list[Compilation]:
    """The compilations whose cache folder lies beside the profile (a capture folder holding several
    sessions, each with its own cache and profile), else all of them."""
    folder = posixpath.dirname(path)
    while folder:
        near = [c for c in compilations if c.cache_key and c.cache_key.startswith(folder + "/")]
        if near:
            return near
        folder = posixpath.dirname(folder) if "/" in folder else ""
    return compilations


def _join(kernel: Kernel, compilations: list[Compilation]) -> tuple[int | None, list[int], str | None]:
    """(the compilation, every candidate, how it was told apart)."""
    if kernel.hashes:
        hashed = [c for c in compilations if c.cache_key and any(h in c.cache_key for h in kernel.hashes)]
        if hashed:
            pks = [c.pk for c in hashed]
            return (pks[0] if len(pks) == 1 else None), pks, "hash"
    named = [c for c in compilations if c.kernel == kernel.base]
    if len(named) > 1 and kernel.launch:
        fitting = [c for c in named if _launch_fits(c, kernel.launch)]
        if len(fitting) == 1:
            return fitting[0].pk, [fitting[0].pk], "launch"
    pks = [c.pk for c in named]
    if len(pks) == 1:
        return pks[0], pks, "name"
    return None, pks, None


def _launch_fits(compilation: Compilation, launch: dict) -> bool:
    block = launch.get("block_size")
    if block is not None and compilation.num_warps is not None and compilation.num_warps * 32 != block:
        return False
    shared = launch.get("shared_dynamic")
    return shared is None or compilation.shared is None or compilation.shared == shared


def _data(kernel: Kernel) -> dict:
    return {
        "lines": [[kind, file, line, metrics] for (kind, file, line), metrics in kernel.lines.items()],
        "sass": [[row.offset, row.address, row.text, row.file, row.line, row.metrics] for row in kernel.sass],
        "regions": kernel.regions,
        "unattributed": kernel.unattributed,
        "launch": kernel.launch,
        "scopes": sorted(kernel.scopes_seen),
    }
