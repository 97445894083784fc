"""The data behind comparing compilations: a compare page's two sides and summary, the variants
of a kernel in one run, and the compilations a compilation page offers to compare with.

The alignment itself is :func:`app.insight.pass_alignment.align` (pure); this module reads what it needs from
the database and the blob texts, and turns it into the plain dicts the templates and the .json
twins share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, true
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app import render
from app.highlight.hwops import GROUPS
from app.insight import blob_facts
from app.insight.compilation_data import compilation_data
from app.insight.kernel_config import options, recorded_constexprs
from app.insight.page_data import iso_time
from app.insight.pass_alignment import Pair, PassStep, align, first_divergence
from app.insight.resources import resource_counts
from app.store.models import Artifact, Banner, Compilation, Run, Snapshot
from app.urls import Urls, compilation_id, parse_compilation_id, snapshot_id

# Compile options shown first when two compilations differ, in this order; other metadata keys
# that differ follow, sorted. `hash` and `name` differ whenever anything does, so they are left out.
OPTION_KEYS = ("target", "triton_version", "num_warps", "num_stages", "num_ctas", "maxnreg", "shared", "constants")
SKIPPED_METADATA = frozenset({"hash", "name"})
# The final stages compared: the cache file kind, or failing it the last snapshot of a dump stage.
FINAL_STAGES = (
    ("ttgir", "TTGIR", ("ttgir",), "ttgir"),
    ("llir", "LLVM IR", ("llir",), "llvm-ir"),
    ("asm", "PTX / AMDGCN", ("ptx", "amdgcn"), None),
    ("sass", "SASS", ("sass",), None),
)
CANDIDATES_FROM_OTHER_RUNS = 20


class CompareNotFound(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Side:
    """One compilation being compared, with its snapshots in order."""

    id: str
    compilation: Compilation
    run: Run
    snapshots: list[Snapshot]

    @property
    def steps(self) -> list[PassStep]:
        return [PassStep(s.pass_arg, s.pass_name, s.when, s.blob) for s in self.snapshots]


def load_side(session: Session, public_id: str) -> Side:
    parsed = parse_compilation_id(public_id)
    if parsed is None:
        raise CompareNotFound(f"not a compilation id: {public_id!r} (expected RUN-COMPILATION)")
    run_id, ordinal = parsed
    row = session.execute(
        select(Compilation, Run)
        .join(Run, Compilation.run_id == Run.id)
        .where(Compilation.run_id == run_id, Compilation.ordinal == ordinal)
    ).first()
    if row is None:
        raise CompareNotFound(f"no compilation {public_id}: its run or compilation does not exist")
    compilation, run = row
    snapshots = list(
        session.scalars(select(Snapshot).where(Snapshot.compilation_pk == compilation.pk).order_by(Snapshot.index))
    )
    return Side(public_id, compilation, run, snapshots)


def side_info(session: Session, side: Side, urls: Urls) -> dict[str, Any]:
    """The compilation as its own page's JSON has it (snapshots, files, metadata...), plus its
    public id and where it comes from."""
    compilation = side.compilation
    data = compilation_data(session, compilation, urls)
    data.update(
        {
            "compilation": compilation_id(compilation.run_id, compilation.ordinal),
            "run_title": side.run.title or compilation.run_id,
            "created_at": iso_time(side.run.created_at),
            "passes": len(side.snapshots),
        }
    )
    return data


def pair_dicts(a: Side, b: Side, pairs: list[Pair], urls: Urls, query: str = "") -> list[dict[str, Any]]:
    """The `pairs` of the JSON: one row per aligned step, with the cross-compilation diff's URL."""
    rows = []
    a_run, a_ord = a.compilation.run_id, a.compilation.ordinal
    b_run, b_ord = b.compilation.run_id, b.compilation.ordinal
    for pair in pairs:
        left = a.snapshots[pair.a] if pair.a is not None else None
        right = b.snapshots[pair.b] if pair.b is not None else None
        shown = left or right
        assert shown is not None
        diff_url = None
        if left is not None and right is not None:
            diff_url = urls.diff(snapshot_id(a_run, a_ord, left.index), snapshot_id(b_run, b_ord, right.index)) + query
        rows.append(
            {
                "a": left.index if left is not None else None,
                "b": right.index if right is not None else None,
                "pass": shown.pass_name,
                "pass_arg": shown.pass_arg,
                "when": shown.when,
                "identical": pair.identical,
                "diff_url": diff_url,
            }
        )
    return rows


def op_counts(session: Session, snapshots: list[Snapshot]) -> dict[str, dict[str, int]]:
    """Op-group counts per distinct blob of these snapshots (cached by hash in app.render)."""
    counts: dict[str, dict[str, int]] = {}
    blob_facts.warm(session, [snapshot.blob for snapshot in snapshots])
    for snapshot in snapshots:
        digest = snapshot.blob
        if digest not in counts:
            counts[digest] = render.ops_counts(digest, lambda digest=digest: render.blob_reader.text(session, digest))
    return counts


# --------------------------------------------------------------------------- the summary


def _option_values(side: Side) -> dict[str, Any]:
    compilation = side.compilation
    values: dict[str, Any] = {key: value for key, value in (compilation.metadata_json or {}).items()
                              if key not in SKIPPED_METADATA}
    for key in ("target", "triton_version", "num_warps", "num_stages", "num_ctas", "shared"):
        column = getattr(compilation, key)
        if column is not None:
            values[key] = column
    return values


def option_differences(a: Side, b: Side) -> list[dict[str, Any]]:
    """Compile options and metadata whose values differ (or that one side lacks)."""
    av, bv = _option_values(a), _option_values(b)
    keys = [key for key in OPTION_KEYS if key in av or key in bv]
    keys += sorted((set(av) | set(bv)) - set(OPTION_KEYS))
    return [
        {"key": key, "a": av.get(key), "b": bv.get(key), "option": key in OPTION_KEYS}
        for key in keys
        if av.get(key) != bv.get(key)
    ]


def final_stages(session: Session, side: Side) -> dict[str, dict[str, Any]]:
    """Lines and op groups of the last TTGIR, LLVM IR and PTX/AMDGCN, from the cache files when
    there are any, else from the last snapshot of that stage; plus registers and spills."""
    artifacts: dict[str, Artifact] = {}
    for artifact in side.compilation.artifacts:
        if artifact.blob is not None:
            artifacts.setdefault(artifact.kind, artifact)
    stages: dict[str, dict[str, Any]] = {}
    for key, label, kinds, snapshot_stage in FINAL_STAGES:
        artifact = next((artifacts[kind] for kind in kinds if kind in artifacts), None)
        entry: dict[str, Any] | None = None
        if artifact is not None:
            digest = artifact.blob
            text = render.blob_reader.text(session, digest) or ""
            count = render.sass_counts if key == "sass" else render.ops_counts
            entry = {
                "kind": artifact.kind,
                "from": "cache",
                "lines": text.count("\n") + (1 if text and not text.endswith("\n") else 0),
                "bytes": artifact.size,
                "ops": dict(count(digest, lambda text=text: text)),
                "registers": resource_counts(side.compilation, session) if key == "asm" else {},
            }
        elif snapshot_stage is not None:
            last = next((s for s in reversed(side.snapshots) if s.stage == snapshot_stage), None)
            if last is not None:
                digest = last.blob
                entry = {
                    "kind": snapshot_stage,
                    "from": f"snapshot {last.index}",
                    "lines": last.line_count,
                    "bytes": last.size,
                    "ops": dict(render.ops_counts(digest, lambda digest=digest: render.blob_reader.text(session, digest))),
                    "registers": {},
                }
        if entry is not None:
            entry["label"] = label
            stages[key] = entry
    if "asm" not in stages:
        found = resource_counts(side.compilation, session)
        if found:
            stages["asm"] = {"kind": None, "label": FINAL_STAGES[2][1], "from": "metadata", "lines": None,
                             "bytes": None, "ops": {}, "registers": found}
    return stages


def final_stage_differences(a_stages: dict, b_stages: dict) -> list[dict[str, Any]]:
    rows = []
    for key, label, _kinds, _stage in FINAL_STAGES:
        left, right = a_stages.get(key), b_stages.get(key)
        if left is None and right is None:
            continue
        groups = [g.key for g in GROUPS if (left or {}).get("ops", {}).get(g.key) or (right or {}).get("ops", {}).get(g.key)]
        register_keys = sorted(set((left or {}).get("registers", {})) | set((right or {}).get("registers", {})))
        rows.append(
            {
                "stage": key,
                "label": label,
                "a": left,
                "b": right,
                "groups": groups,
                "registers": register_keys,
                "differs": (left or {}).get("lines") != (right or {}).get("lines")
                or any((left or {}).get("ops", {}).get(g) != (right or {}).get("ops", {}).get(g) for g in groups)
                or (left or {}).get("registers") != (right or {}).get("registers"),
            }
        )
    return rows


# --------------------------------------------------------------------------- variants of a run


def _config(compilation: Compilation) -> dict[str, Any]:
    """What sets one autotune variant apart: the constexprs (block sizes...) where the metadata has
    them, then the launch options (app/insight/kernel_config.py reads both)."""
    return recorded_constexprs(compilation) | options(compilation)


def _autotune(compilation: Compilation) -> dict[str, Any] | None:
    """Whether the autotuner picked this config, where a traced compilation says (app/ingest/traces.py)."""
    autotune = (compilation.metadata_json or {}).get("autotune")
    if not isinstance(autotune, dict):
        return None
    return {key: autotune[key] for key in ("winner", "best") if key in autotune} or None


def run_variants(session: Session, run: Run, urls: Urls, kernels: set[str] | None = None,
                 aligned: int | None = None) -> list[dict[str, Any]]:
    """Kernels compiled more than once in this run (those of `kernels` only, when given), each with
    one row per compilation; where each departs from the first is worked out for the first `aligned`
    rows of a kernel (all when None; the others say `departs_skipped`)."""
    by_kernel: dict[str, list[Compilation]] = {}
    for compilation in run.compilations:
        if compilation.kernel and (kernels is None or compilation.kernel in kernels):
            by_kernel.setdefault(compilation.kernel, []).append(compilation)
    groups = {kernel: members for kernel, members in by_kernel.items() if len(members) > 1}
    if not groups:
        return []
    pks = [c.pk for members in groups.values() for c in members]
    steps: dict[int, list[tuple]] = {pk: [] for pk in pks}
    for row in session.execute(
        select(
            Snapshot.compilation_pk, Snapshot.index, Banner.pass_name, Banner.pass_arg, Banner.when,
            Snapshot.blob, Snapshot.stage, Snapshot.line_count,
        )
        .join(Snapshot.banner)
        .where(Snapshot.compilation_pk.in_(pks))
        .order_by(Snapshot.compilation_pk, Snapshot.index)
    ):
        steps[row.compilation_pk].append(row)
    files: dict[int, dict[str, tuple[str, int]]] = {}  # the final stages' cache files: kind and size
    for artifact in session.scalars(
        select(Artifact).where(Artifact.compilation_pk.in_(pks), Artifact.kind.in_(("ttgir", "llir", "ptx", "amdgcn")))
    ):
        key = "asm" if artifact.kind in ("ptx", "amdgcn") else artifact.kind
        files.setdefault(artifact.compilation_pk, {}).setdefault(key, (artifact.kind, artifact.size))
    out = []
    for kernel, members in groups.items():
        first_steps = [PassStep(r.pass_arg, r.pass_name, r.when, r.blob) for r in steps[members[0].pk]]
        rows = []
        for position, compilation in enumerate(members):
            mine = steps[compilation.pk]
            departs = None
            skipped = aligned is not None and position >= aligned
            if position > 0 and not skipped:
                pairs = align(first_steps, [PassStep(r.pass_arg, r.pass_name, r.when, r.blob) for r in mine])
                k = first_divergence(pairs)
                if k is not None:
                    pair = pairs[k]
                    row = mine[pair.b] if pair.b is not None else steps[members[0].pk][pair.a]
                    departs = {"row": k, "pass": row.pass_name, "pass_arg": row.pass_arg, "when": row.when,
                               "index": pair.b, "only_in_first": pair.b is None}
            last = {stage: next((r.line_count for r in reversed(mine) if r.stage == stage), None)
                    for stage in ("ttgir", "llvm-ir")}
            mine_files = files.get(compilation.pk, {})
            cid = compilation_id(compilation.run_id, compilation.ordinal)
            rows.append(
                {
                    "compilation": cid,
                    "id": compilation.ordinal,
                    "url": urls.compilation(compilation.run_id, compilation.ordinal),
                    "status": compilation.status,
                    "config": _config(compilation),
                    "autotune": _autotune(compilation),
                    "passes": len(mine),
                    "departs": departs,
                    "identical_to_first": position > 0 and departs is None and not skipped,
                    "departs_skipped": skipped,
                    # lines of the last dump of a stage, and the size of its cache file
                    "final": {
                        "ttgir": {"lines": last["ttgir"], "bytes": mine_files.get("ttgir", (None, None))[1]},
                        "llir": {"lines": last["llvm-ir"], "bytes": mine_files.get("llir", (None, None))[1]},
                        "asm": {"lines": None, "kind": mine_files.get("asm", (None, None))[0],
                                "bytes": mine_files.get("asm", (None, None))[1]},
                    },
                    "compare_first_url": urls.compare(compilation_id(members[0].run_id, members[0].ordinal), cid)
                    if position > 0 else None,
                }
            )
        keys: list[str] = []
        for row in rows:
            keys += [key for key in row["config"] if key not in keys]
        out.append({"kernel": kernel, "count": len(members), "config_keys": keys, "variants": rows})
    return out


# --------------------------------------------------------------------------- compare with...


def compare_candidates(
    session: Session, compilation: Compilation, urls: Urls, visible: ColumnElement[bool] | None
) -> list[dict[str, Any]]:
    """Other compilations of the same kernel: this run's first, then other runs the reader may list
    (`visible` from app.web.auth.visible_runs), newest first."""
    if not compilation.kernel:
        return []
    here = compilation_id(compilation.run_id, compilation.ordinal)
    rows = session.execute(
        select(Compilation, Run)
        .join(Run, Compilation.run_id == Run.id)
        .where(Compilation.run_id == compilation.run_id, Compilation.kernel == compilation.kernel,
               Compilation.pk != compilation.pk)
        .order_by(Compilation.ordinal)
    ).all()
    rows += session.execute(
        select(Compilation, Run)
        .join(Run, Compilation.run_id == Run.id)
        .where(Compilation.run_id != compilation.run_id, Compilation.kernel == compilation.kernel,
               true() if visible is None else visible)
        .order_by(Run.created_at.desc(), Compilation.ordinal)
        .limit(CANDIDATES_FROM_OTHER_RUNS)
    ).all()
    out = []
    for other, run in rows:
        other_id = compilation_id(other.run_id, other.ordinal)
        out.append(
            {
                "compilation": other_id,
                "same_run": other.run_id == compilation.run_id,
                "run": other.run_id,
                "run_title": run.title or other.run_id,
                "created_at": iso_time(run.created_at),
                "id": other.ordinal,
                "target": other.target,
                "triton_version": other.triton_version,
                "num_warps": other.num_warps,
                "num_stages": other.num_stages,
                "status": other.status,
                "url": urls.compilation(other.run_id, other.ordinal),
                "compare_url": urls.compare(here, other_id),
            }
        )
    return out
