"""The config a compilation was built with: its constexprs (BLOCK_M, ...) and compile options.

Where Triton keeps the constexprs: nowhere in the cache for 3.1 to 3.9 (the metadata .json has the
options, num_warps, num_stages, shared..., but no `constants`/`constexprs` key; the `.source` file
has them inlined as constants, without their names). A tritonparse trace has them (a traced
compilation's metadata carries the autotune `config`, app/ingest/traces.py), and so do the
autotuner's printed lines (TRITON_PRINT_AUTOTUNING=1; parsers/autotuning/autotune.py), matched to the
compilation in app/insight/autotune.py. Where nothing names them, the tile shape is derived from the
IR: the operand shapes of the first `tt.dot` (MxK times KxN) give MxNxK, labelled "derived".
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app import render
from app.store.models import Artifact, Compilation, Snapshot

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_BLOCK_AXIS = re.compile(r"(?:BLOCK_?(?:SIZE_?)?|B|TILE_?)([MNK])")
_DOT = re.compile(r"\btt\.dot(?:_scaled)?\b[^\n]*?:\s*tensor<(\d+)x(\d+)x[^>]*>\s*\*\s*tensor<(\d+)x(\d+)x")


def dot_tile(text: str) -> dict[str, int] | None:
    """M, N, K of the first tt.dot of a TTIR/TTGIR text."""
    match = _DOT.search(text)
    if match is None:
        return None
    m, k, _k2, n = (int(group) for group in match.groups())
    return {"M": m, "N": n, "K": k}


_TILES: dict[str, tuple | None] = {}  # blob digest -> its tile (a blob's text never changes)
_KERNEL_FILES: dict[str, str | None] = {}  # TTIR blob digest -> the file its `#loc = loc("...")` names
_FIRST_LOC = re.compile(r'^#loc\d* = loc\("([^"]+)":\d+:\d+\)', re.MULTILINE)


def _tile_of_blob(digest: str, loader) -> tuple | None:
    if digest not in _TILES:
        if len(_TILES) > 8192:
            _TILES.clear()
            _KERNEL_FILES.clear()
        text = loader() or ""
        tile = dot_tile(text)
        _TILES[digest] = tuple(tile.items()) if tile else None
        found = _FIRST_LOC.search(text[:65536])
        _KERNEL_FILES[digest] = found.group(1) if found else None
    return _TILES[digest]


# (run, compilation pk) -> (cached .ttir, last TTIR dump, first TTGIR dump) digests: stored rows never
# change, and a run's id is never reused, so this holds across requests.
_DIGESTS: dict[tuple[str, int], tuple[str | None, str | None, str | None]] = {}
_CONFIGS: dict[tuple[str, int], dict[str, Any]] = {}


def prefetch(session: Session, compilations: list[Compilation]) -> None:
    """Read the IR digests the configs need for many compilations in two queries, not two each."""
    missing = [c.pk for c in compilations if (c.run_id, c.pk) not in _DIGESTS and c.derived is None]
    if not missing:
        return
    if len(_DIGESTS) > 65536:
        _DIGESTS.clear()
    runs = {c.pk: c.run_id for c in compilations}
    for start in range(0, len(missing), 500):
        chunk = missing[start:start + 500]
        cached = dict(session.execute(select(Artifact.compilation_pk, Artifact.blob).where(
            Artifact.compilation_pk.in_(chunk), Artifact.kind == "ttir")).all())
        last_ttir: dict[int, tuple[int, str]] = {}
        first_ttgir: dict[int, tuple[int, str]] = {}
        for pk, index, stage, blob in session.execute(select(
                Snapshot.compilation_pk, Snapshot.index, Snapshot.stage, Snapshot.blob).where(
                Snapshot.compilation_pk.in_(chunk), Snapshot.stage.in_(("ttir", "ttgir")))):
            if stage == "ttir" and index >= last_ttir.get(pk, (-1, ""))[0]:
                last_ttir[pk] = (index, blob)
            elif stage == "ttgir" and index < first_ttgir.get(pk, (1 << 30, ""))[0]:
                first_ttgir[pk] = (index, blob)
        for pk in chunk:
            _DIGESTS[(runs[pk], pk)] = (cached.get(pk), last_ttir.get(pk, (0, None))[1], first_ttgir.get(pk, (0, None))[1])


def _digests(session: Session, compilation: Compilation) -> tuple[str | None, str | None, str | None]:
    prefetch(session, [compilation])
    return _DIGESTS[(compilation.run_id, compilation.pk)]


def _ttir_digests(session: Session, compilation: Compilation) -> list[str | None]:
    return list(_digests(session, compilation)[:2])


def derived_tile(session: Session, compilation: Compilation) -> dict[str, int] | None:
    """The tile shape of the compilation's TTIR (cache file, else its first TTIR dump)."""
    for digest in _ttir_digests(session, compilation):
        if digest is not None:
            found = _tile_of_blob(digest, lambda digest=digest: render.blob_reader.text(session, digest))
            if found:
                return dict(found)
    return None


_SOURCE_FACTS: dict[tuple[str, str], dict[str, Any]] = {}  # (run, source path) -> what it names
_SOURCES: dict[str, dict[str, str]] = {}  # run -> its uploaded sources' paths and blobs
_CONSTEXPR = re.compile(r"^\s+([A-Z][A-Z0-9_]*)\s*:\s*tl\.constexpr\s*=\s*([\w.']+)\s*$", re.MULTILINE)
_SIZE = re.compile(r"^\s+([MNK]|stride_\w+)\s*=\s*(\d+)\s*$", re.MULTILINE)
_OPTION = re.compile(r"^(num_stages|num_warps)=(\d+),\s*$", re.MULTILINE)


def source_facts(session: Session, compilation: Compilation) -> dict[str, Any]:
    """What a generated kernel module (an Inductor template's benchmark or output module, uploaded
    with the run) states about the compilation: constexprs set in its body (`BLOCK_M : tl.constexpr =
    64`), the problem size (`M = 1024`, `stride_am = 512`) and num_stages / num_warps of its
    decorator. The module is the file the TTIR's first `#loc` names. Empty when it was not uploaded."""
    from app.store.models import Source
    from parsers.locations.loc import match_source

    file = None
    for digest in _ttir_digests(session, compilation):
        if digest is not None:
            _tile_of_blob(digest, lambda digest=digest: render.blob_reader.text(session, digest))
            file = _KERNEL_FILES.get(digest)
            if file:
                break
    if not file or not file.endswith(".py"):
        return {}
    key = (compilation.run_id, file)
    if key not in _SOURCE_FACTS:
        if len(_SOURCE_FACTS) > 4096:
            _SOURCE_FACTS.clear()
        if compilation.run_id not in _SOURCES:
            if len(_SOURCES) > 256:
                _SOURCES.clear()
            _SOURCES[compilation.run_id] = dict(session.execute(
                select(Source.path, Source.blob).where(Source.run_id == compilation.run_id)).all())
        rows = _SOURCES[compilation.run_id]
        path = match_source(file, rows)
        text = render.blob_reader.text(session, rows[path]) if path else None
        facts: dict[str, Any] = {}
        if text:
            facts["constexprs"] = {name: _literal(value) for name, value in _CONSTEXPR.findall(text)}
            facts["problem"] = {name: int(value) for name, value in _SIZE.findall(text)}
            facts["options"] = {name: int(value) for name, value in _OPTION.findall(text)}
            facts["path"] = path
        _SOURCE_FACTS[key] = facts
    return _SOURCE_FACTS[key]


def _literal(text: str) -> Any:
    text = text.strip("'")
    return int(text) if text.isdigit() else {"True": True, "False": False}.get(text, text)


def recorded_constexprs(compilation: Compilation) -> dict[str, Any]:
    """Constexprs named in what was stored: a trace's autotune config, a metadata `constants` /
    `constexprs` dict, block sizes as keys of their own."""
    metadata = compilation.metadata_json or {}
    found: dict[str, Any] = {}
    for source in (metadata.get("config"), metadata.get("constants"), metadata.get("constexprs")):
        if isinstance(source, dict):
            for name, value in source.items():
                if name not in LAUNCH_OPTIONS and isinstance(name, str):
                    found.setdefault(name, value)
    for name, value in metadata.items():
        if isinstance(name, str) and name.upper().startswith("BLOCK"):
            found.setdefault(name, value)
    return found


def options(compilation: Compilation) -> dict[str, Any]:
    metadata = compilation.metadata_json or {}
    out: dict[str, Any] = {}
    for key in LAUNCH_OPTIONS:
        value = getattr(compilation, key, None)
        if value is None:
            value = metadata.get(key)
        if value is None and isinstance(metadata.get("config"), dict):
            value = metadata["config"].get(key)
        if value is not None:
            out[key] = value
    return out


_WARPS = re.compile(r'"?ttg\.num-warps"?\s*=\s*(\d+)')
_WARPS_OF: dict[str, int | None] = {}  # TTGIR blob digest -> its module's num-warps


def derived_warps(session: Session, compilation: Compilation) -> int | None:
    """num_warps from the module attribute of the compilation's first TTGIR dump (`"ttg.num-warps" = 4`),
    for a compilation known from dumps alone (no metadata .json)."""
    digest = _digests(session, compilation)[2]
    if digest is None:
        return None
    if digest not in _WARPS_OF:
        if len(_WARPS_OF) > 8192:
            _WARPS_OF.clear()
        match = _WARPS.search((render.blob_reader.text(session, digest) or "")[:65536])
        _WARPS_OF[digest] = int(match.group(1)) if match else None
    return _WARPS_OF[digest]


def compilation_config(session: Session, compilation: Compilation) -> dict[str, Any]:
    """{"constexprs": {...}, "source": "recorded" | "derived" | None, "tile": {M, N, K} | None,
    "options": {...}}: the tile is derived from the IR whether or not constexprs were recorded, and
    num_warps from the TTGIR where no metadata gave it. Read once per compilation (callers may
    `prefetch` many first); a copy is returned."""
    key = (compilation.run_id, compilation.pk)
    if key not in _CONFIGS:
        if len(_CONFIGS) > 65536:
            _CONFIGS.clear()
        _CONFIGS[key] = _read_config(session, compilation)
    found = _CONFIGS[key]
    return {**found, "constexprs": dict(found["constexprs"]), "options": dict(found["options"])}


def ir_facts(session: Session, compilation: Compilation) -> dict[str, Any]:
    """What the compilation's IR (and the generated module it names) says of its config: stored in
    `Compilation.derived` by the background preparation, else read now."""
    if compilation.derived is not None:
        return compilation.derived
    named = bool(compilation.kernel and compilation.kernel.startswith("triton_"))
    return {"tile": derived_tile(session, compilation),
            "num_warps": derived_warps(session, compilation) if compilation.num_warps is None else None,
            "module": source_facts(session, compilation) if named else {}}


def store_ir_facts(session: Session, compilations: list[Compilation]) -> int:
    """Fill `derived` for those that lack it (the background preparation); how many were read."""
    todo = [c for c in compilations if c.derived is None]
    prefetch(session, todo)
    for compilation in todo:
        compilation.derived = ir_facts(session, compilation)
    return len(todo)


def _read_config(session: Session, compilation: Compilation) -> dict[str, Any]:
    constexprs = recorded_constexprs(compilation)
    facts = ir_facts(session, compilation)
    tile = facts.get("tile")
    found = options(compilation)
    module = facts.get("module") or {}
    for name, value in (module.get("constexprs") or {}).items():
        constexprs.setdefault(name, value)
    for name, value in (module.get("options") or {}).items():
        found.setdefault(name, value)
    if "num_warps" not in found and facts.get("num_warps") is not None:
        found["num_warps"] = facts["num_warps"]
    return {"constexprs": constexprs, "source": "recorded" if constexprs else ("derived" if tile else None),
            "tile": tile, "options": found, "problem": module.get("problem") or {}}


def tile_text(tile: dict | None) -> str:
    return f"{tile['M']}x{tile['N']}x{tile['K']}" if tile else ""


def config_matches(config: dict[str, Any], compilation_options: dict[str, Any], constexprs: dict[str, Any],
                   tile: dict | None) -> bool:
    """Whether an autotune config (constexprs and options, as printed) describes this compilation: every
    option it names agrees, and its constexprs agree with the recorded ones, or else its block sizes
    with the derived tile (BLOCK_M / BM / ..._M against M, and so on)."""
    for key in LAUNCH_OPTIONS:
        if key in config and config[key] is not None and key in compilation_options \
                and str(config[key]) != str(compilation_options[key]):
            return False
    named = {key: value for key, value in config.items() if key not in LAUNCH_OPTIONS}
    if constexprs:
        shared = set(named) & set(constexprs)
        return bool(shared) and all(str(named[key]) == str(constexprs[key]) for key in shared)
    if tile is None:
        return False
    compared = 0
    for key, value in named.items():
        axis = _BLOCK_AXIS.fullmatch(key.upper())  # GROUP_M and the like are not tile sizes
        if axis is None or not (str(value).isascii() and str(value).isdigit() and len(str(value)) <= 9):
            continue
        compared += 1
        if int(value) != tile[axis.group(1)]:
            return False
    return compared > 0
