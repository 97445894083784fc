"""Where a hot Python line's IR is in one pass: the pass a page looks at (chosen, else the last TTGIR
snapshot with located lines), and per Python line its IR lines there with a link to the snapshot
page at them (`#L<first>`, or `#L<first>-L<last>` when they are one run of lines)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy.orm import Session

from app import render
from app.insight.source_map import pass_indexes
from app.store.models import Compilation, Snapshot
from app.urls import Urls
from parsers.locations.loc import match_source

__all__ = ["PassLinks", "pass_links", "same_file"]


def same_file(recorded: str, wanted: str) -> bool:
    """``wanted`` names the recorded path: equal, or a path suffix of it (at least the file name)."""
    if recorded == wanted:
        return True
    return match_source(wanted, [recorded]) is not None and render.basename(recorded) == render.basename(wanted)


def default_pass(snapshots: list[Snapshot], located: list[int]) -> int | None:
    """Position of the last TTGIR snapshot with located lines, else the one with the most. TTGIR
    passes with under half the most located lines of any TTGIR pass are passed over: after
    USE_IR_LOC=ttgir rewrote the locations, the last dumps name the cached .ttgir's lines and keep
    few Python ones."""
    if not any(located):
        return None
    stage = [located[k] for k, snapshot in enumerate(snapshots) if snapshot.stage == "ttgir"]
    enough = max(max(stage, default=0) / 2, 1)
    ttgir = [k for k, snapshot in enumerate(snapshots) if snapshot.stage == "ttgir" and located[k] >= enough]
    return ttgir[-1] if ttgir else max(range(len(snapshots)), key=lambda k: (located[k], k))


class PassLinks:
    """One snapshot's IR lines per Python line, and links to them."""

    def __init__(self, compilation: Compilation, snapshot: Snapshot | None, index, urls: Urls) -> None:
        self.compilation, self.snapshot, self.index, self.urls = compilation, snapshot, index, urls

    def describe(self) -> dict[str, Any] | None:
        if self.snapshot is None:
            return None
        s = self.snapshot
        return {"index": s.index, "pass": s.pass_name, "stage": s.stage,
                "url": self.urls.snapshot(self.compilation.run_id, self.compilation.ordinal, s.index)}

    def ir_lines(self, file: str, line: int) -> list[int]:
        if self.index is None:
            return []
        found: set[int] = set()
        for recorded in self.index.files:
            if same_file(recorded, file):
                found.update(self.index.lines(recorded, line))
        return sorted(found)

    def link(self, file: str, line: int) -> tuple[str | None, list[int]]:
        """(the snapshot URL at this Python line's IR lines, or None when it has none; the lines)."""
        lines = self.ir_lines(file, line)
        if not lines or self.snapshot is None:
            return None, lines
        url = self.urls.snapshot(self.compilation.run_id, self.compilation.ordinal, self.snapshot.index)
        contiguous = lines[-1] - lines[0] == len(lines) - 1
        return url + (f"#L{lines[0]}-L{lines[-1]}" if contiguous and len(lines) > 1 else f"#L{lines[0]}"), lines


def pass_links(session: Session, compilation: Compilation, urls: Urls, at: int | None,
               files: Iterable[str] = ()) -> PassLinks:
    """The links into snapshot ``at`` (an index), else into the default pass for ``files`` (the
    Python files of the hot lines; all located lines when empty)."""
    snapshots = list(compilation.snapshots)
    chosen = next((k for k, snapshot in enumerate(snapshots) if snapshot.index == at), None)
    if chosen is None:
        indexes = pass_indexes(session, snapshots)
        wanted = list(files)
        located = [sum(count for name, count in index.files.items()
                       if not wanted or any(same_file(name, file) for file in wanted)) for index in indexes]
        chosen = default_pass(snapshots, located)
        index = indexes[chosen] if chosen is not None else None
    else:
        (index,) = pass_indexes(session, [snapshots[chosen]])
    return PassLinks(compilation, snapshots[chosen] if chosen is not None else None, index, urls)
