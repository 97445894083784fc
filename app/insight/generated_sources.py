"""Generated sources: Python a tool wrote from the user's code, with comments naming the user's lines
(Helion's `# src[file:line]`, parsers/helion/generated.py). The IR's `loc()` entries name lines of the
generated file; through its comments they reach the user's file, so the map page and the source panes
show the Helion kernel, not only the code generated from it.

The Helion file is named by its base name in the comments: it is the run's uploaded source of that name
whose lines read as the comments quote them (the most such lines wins), else the base name alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from app import render
from app.insight.source_map import PassIndex
from parsers.helion.generated import GeneratedCode, holds_origins, matches_source, parse
from parsers.locations.loc import match_source

_CODE = render.SizedLRU(max_bytes=32 << 20, max_items=256)  # source blob -> GeneratedCode | False


@dataclass
class Generated:
    """One generated file of a run: its code, and its lines grouped by the user's line they came from."""

    path: str  # the run's source holding it
    code: GeneratedCode
    by_line: dict[tuple[str, int], list[int]]  # (user's file as resolved, line) -> generated lines


class GeneratedSources:
    """The generated files among a run's sources, found from the files a compilation's IR names."""

    def __init__(self, session: Session, sources: dict[str, str]) -> None:
        self.session = session
        self.sources = sources  # path -> blob hash
        self._found: dict[str, Generated | None] = {}  # loc file -> its generated file, if it is one
        self.reached: dict[str, str] = {}  # a user's file reached through a generated one -> that one's loc file

    def of(self, loc_file: str) -> Generated | None:
        """The generated file that ``loc_file`` (as the IR records it) names, if it was uploaded."""
        if loc_file not in self._found:
            path = match_source(loc_file, list(self.sources)) if self.sources else None
            code = self._code(self.sources[path]) if path is not None else None
            self._found[loc_file] = Generated(path, code, self._by_line(code)) if path and code else None
        return self._found[loc_file]

    def _code(self, digest: str) -> GeneratedCode | None:
        cached = _CODE.get((digest,))
        if cached is None:
            text = self._text(digest)
            cached = parse(text) if holds_origins(text.encode("utf-8", "replace")) else False
            if cached is not False and not cached.origins:
                cached = False
            _CODE.put((digest,), cached, len(text) // 4 + 64)
        return cached or None

    def _text(self, digest: str) -> str:
        return render.blob_reader.text(self.session, digest) or ""

    def _by_line(self, code: GeneratedCode | None) -> dict[tuple[str, int], list[int]]:
        if code is None:
            return {}
        resolved = {name: self.resolve(code, name) for name in code.files}
        by_line: dict[tuple[str, int], list[int]] = {}
        for line, origin in code.origins.items():
            if origin.file is not None:
                by_line.setdefault((resolved[origin.file], origin.start), []).append(line)
        return by_line

    def resolve(self, code: GeneratedCode, name: str) -> str:
        """The uploaded source that the comments' base name ``name`` stands for, else the name."""
        best, best_count = name, 0
        for path, digest in self.sources.items():
            if render.basename(path) != name:
                continue
            count = matches_source(code, name, self._text(digest))
            if count > best_count:
                best, best_count = path, count
        return best


def chained(index: PassIndex, generated: GeneratedSources) -> PassIndex:
    """``index`` with the user's files reached through generated ones: each of their lines holds the IR
    lines located at the generated lines that came from it. Listed before the generated files (a tie in
    counts goes to the user's file)."""
    extra: dict[str, int] = {}
    lines_of: dict[tuple[str, int], tuple[str, list[int]]] = {}
    for loc_file in index.files:
        found = generated.of(loc_file)
        if found is None:
            continue
        for (file, line), generated_lines in found.by_line.items():
            count = sum(len(index.lines(loc_file, number)) for number in generated_lines)
            if count:
                extra[file] = extra.get(file, 0) + count
                generated.reached.setdefault(file, loc_file)
                lines_of[(file, line)] = (loc_file, generated_lines)
    if not extra:
        return index
    base_lines = index.lines

    def lines(file: str, line: int) -> list[int]:
        via = lines_of.get((file, line))
        if via is None:
            return base_lines(file, line)
        loc_file, generated_lines = via
        return sorted({number for g in generated_lines for number in base_lines(loc_file, g)})

    return PassIndex({**extra, **index.files}, lines, index.text)


def chained_by_source(by_source: dict[tuple[str, int], list[int]], generated: GeneratedSources
                      ) -> dict[str, dict[int, list[int]]]:
    """One rendered snapshot's IR lines per (user's file, line), through its generated files:
    file -> line -> IR lines."""
    found: dict[str, dict[int, set[int]]] = {}
    origin_of: dict[str, Callable[[int], tuple[str, int] | None]] = {}
    for (loc_file, line), ir_lines in by_source.items():
        if loc_file not in origin_of:
            item = generated.of(loc_file)
            origin_of[loc_file] = _origin_lookup(item)
        origin = origin_of[loc_file](line)
        if origin is not None:
            found.setdefault(origin[0], {}).setdefault(origin[1], set()).update(ir_lines)
    return {file: {line: sorted(ir) for line, ir in lines.items()} for file, lines in found.items()}


def _origin_lookup(item: Generated | None) -> Callable[[int], tuple[str, int] | None]:
    if item is None:
        return lambda line: None
    where = {g: key for key, lines in item.by_line.items() for g in lines}
    return where.get


def clear() -> None:
    with _CODE.lock:
        _CODE.items.clear()
        _CODE.bytes = 0
