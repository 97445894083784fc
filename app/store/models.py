"""Database schema. Texts live in `blobs`, addressed by content hash (32 bytes in the database, a
64-character hex string in Python: `HexHash`). Most rows refer to a blob by that hash; the two kinds
that come by the thousand, snapshots and pack slices, by the blob's integer `id` (a few bytes instead
of 32, in the row and in its index) and read the hash through a subquery (`Snapshot.blob`, `Blob.pack`).

Every change here needs an Alembic migration in migrations/versions (tests/test_migrations.py checks
that the migrations and these models agree)."""

from __future__ import annotations

import json
import zlib
from datetime import UTC, datetime

from sqlalchemy import (
    DDL,
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    case,
    event,
    false,
    func,
    select,
    text,
    type_coerce,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column, relationship

from app.store import json_values


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class HexHash(TypeDecorator):
    """A sha256 stored as its 32 bytes, half its hex text (it is stored in a key, its index and every
    row referring to it: 0.8 MB of the corpus database). Python code sees lowercase hex strings."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return to_db_hash(value)

    def process_result_value(self, value, dialect):
        return None if value is None else bytes(value).hex()


class ZippedJSON(TypeDecorator):
    """JSON stored zlib-compressed: a cache folder's metadata repeats its keys in every compilation
    (1.2 KB of text, half that compressed). Never filtered on in SQL."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else zlib.compress(json_values.dumps(value, separators=(",", ":")).encode(), 9)

    def process_result_value(self, value, dialect):
        return None if value is None else json.loads(zlib.decompress(value))


class Interned(TypeDecorator):
    """A short name from a known set, stored as one control character (its place in `known`, from
    \\x01): snapshot stages and scope kinds repeat in every row. Other names are stored as they are
    (no name is a single control character)."""

    impl = String
    cache_ok = True

    def __init__(self, known: tuple[str, ...], length: int = 16) -> None:
        super().__init__(length)
        self.known = known

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        try:
            return chr(1 + self.known.index(value))
        except ValueError:
            return value

    def process_result_value(self, value, dialect):
        if value is not None and len(value) == 1 and 0 < ord(value) <= len(self.known):
            return self.known[ord(value) - 1]
        return value


# Interned names, in a fixed order: stored rows depend on it, so only append
# (parsers/logs/compilations.py STAGES and GENERIC_MLIR_STAGE; parsers/logs/scopes.py).
STAGE_NAMES = ("ttir", "ttgir", "llvm-dialect", "llvm-ir", "mlir")
SCOPE_KIND_NAMES = ("module", "function", "loop", "region", "machine", "op")


def to_db_hash(value: str | None) -> bytes | None:
    """A hex hash as stored; text that is not hex (a mistyped URL) becomes bytes no hash equals."""
    if value is None or isinstance(value, bytes):
        return value
    try:
        return bytes.fromhex(value)
    except ValueError:
        return b"?" + value.encode("utf-8", "replace")


_RECOMPRESS_PENDING = "codec IN ('zstd', 'zstdm')"  # fresh, and quick-compacted (migration 0020_i32)


class Blob(Base):
    """A stored text or binary, zstd-compressed, stored once however many runs refer to it."""

    __tablename__ = "blobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # SQLite: the rowid itself
    hash: Mapped[str] = mapped_column(HexHash, unique=True)  # sha256 of the raw bytes
    size: Mapped[int] = mapped_column(Integer)
    codec: Mapped[str] = mapped_column(String(8))  # "zstd" | "zstdx" | "zstdm" | "none" | "zpack" (see app/store/blobs.py)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    # For "zpack" rows: the pack blob holding this text, which must live while this row does
    # (its hash: `Blob.pack`, below).
    pack_id: Mapped[int | None] = mapped_column(ForeignKey("blobs.id"), index=True)
    # Only the frames that await recompression (app/store/recompress.py): a handful, however big the table.
    __table_args__ = (
        Index("ix_blobs_to_recompress", "hash", sqlite_where=text(_RECOMPRESS_PENDING)),
    )


def _hash_of(blob_id, blobs=Blob.__table__):
    """The hash of the blob `blob_id` names, as a column of the row holding `blob_id`. The CASE names
    that row's table outside the subquery too, so a SELECT of this column alone reads from that
    table (a bare correlated subquery would leave its FROM empty and read one arbitrary row)."""
    found = select(blobs.c.hash).where(blobs.c.id == blob_id).scalar_subquery()
    return case((blob_id.is_not(None), found))


# A pack slice's pack, by hash: what readers cache packs by (app/store/blobs.py), whatever the database.
Blob.pack = column_property(_hash_of(Blob.pack_id, Blob.__table__.alias("pack_blob")))


def add_postgresql_options() -> None:
    """PostgreSQL's part of the schema (the partial index's condition), added when a PostgreSQL engine
    is made: naming it in the model would load that dialect on every import (~50 ms of each CLI
    command, SQLite ones included)."""
    for index in Blob.__table__.indexes:
        if index.name == "ix_blobs_to_recompress":
            index.dialect_kwargs["postgresql_where"] = text(_RECOMPRESS_PENDING)


class LineIndex(Base):
    """A blob's Python-line index for the map page, stored once per blob and reading context, and
    deleted with the blob (app/store/retention.py).

    ``context`` is ``facts`` (an LLVM text's flags only), a snapshot kind (the index from the
    text's own locations) or ``llvm@<metadata blob>`` (an LLVM dump counted per ``!dbg`` node,
    read against that metadata table; empty after ``@`` when none). The index itself is bytes
    ``start`` to ``start + size`` of the ``line_index_packs`` row ``pack`` (None: no index)."""

    __tablename__ = "line_indexes"
    blob_id: Mapped[int] = mapped_column(ForeignKey("blobs.id"), primary_key=True)
    context: Mapped[str] = mapped_column(String(80), primary_key=True)
    flags: Mapped[int] = mapped_column(Integer, default=0)
    pack: Mapped[int | None] = mapped_column(Integer)
    start: Mapped[int] = mapped_column(Integer, default=0)
    size: Mapped[int] = mapped_column(Integer, default=0)
    # SQLite: the key is the table (no rowid, no second copy of the key in an index).
    __table_args__ = ({"sqlite_with_rowid": False},)


class LineIndexPack(Base):
    """The line indexes computed together (one compilation's new ones), as one zstd frame: the
    indexes of successive passes are near copies, which one frame stores once (app/insight/line_index.py)."""

    __tablename__ = "line_index_packs"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class AdjacentDiff(Base):
    """The default-options diff of two adjacent snapshots' blobs, as packed segments
    (app/insight/adjacent_diffs.py): stored in the background for large pairs, so their first visit
    needs no alignment. ``version`` names the diff code that made it; other versions are ignored."""

    __tablename__ = "adjacent_diffs"
    a_blob: Mapped[str] = mapped_column(HexHash, primary_key=True)
    b_blob: Mapped[str] = mapped_column(HexHash, primary_key=True)
    version: Mapped[str] = mapped_column(String(16))
    segments: Mapped[bytes] = mapped_column(LargeBinary)


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # 128 random bits: the link is the capability
    title: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    owner: Mapped[str | None] = mapped_column(String(200), index=True)  # the uploading token's name
    # Unlisted runs are reachable by link only; listed ones show on everyone's home page and in search.
    listed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    tags: Mapped[list] = mapped_column(JSON, default=list)
    input_bytes: Mapped[int] = mapped_column(Integer, default=0)
    damaged: Mapped[int] = mapped_column(Integer, default=0)
    stats: Mapped[dict] = mapped_column(JSON, default=dict)
    # Autotuning tables and sessions the run's logs printed (parsers/autotuning/autotune.py); None: none seen.
    autotune: Mapped[list | None] = mapped_column(JSON, nullable=True)
    # {"triton": "3.7.1", "commit": "abc123", ...}: what the run was made with (app/store/labels.py);
    # kernel history orders and filters runs by them. None: a run stored before labels existed.
    labels: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # The version of the kernel history points written for this run (app/insight/kernel_points.py
    # VERSION); None: not yet (they are written after ingest, in the background or when first read).
    points_version: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    compilations: Mapped[list[Compilation]] = relationship(
        back_populates="run", order_by="Compilation.ordinal", cascade="all, delete-orphan"
    )
    __table_args__ = (Index("ix_runs_created_at", "created_at"),)


class Compilation(Base):
    __tablename__ = "compilations"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    ordinal: Mapped[int] = mapped_column(Integer)  # 1-based, in log order; cache-only ones last
    kernel: Mapped[str | None] = mapped_column(String(500))
    origin: Mapped[str] = mapped_column(String(16))  # "log" | "cache" | "diagnostic"
    log_name: Mapped[str | None] = mapped_column(String(1000))
    first_line: Mapped[int | None] = mapped_column(Integer)
    target: Mapped[str | None] = mapped_column(String(100))
    triton_version: Mapped[str | None] = mapped_column(String(50))
    status: Mapped[str] = mapped_column(String(16), default="ok")
    status_reason: Mapped[str | None] = mapped_column(Text)
    # The pass whose "IR Dump After X Failed" ended a failed compile (its last snapshot is that IR).
    failed_pass: Mapped[str | None] = mapped_column(String(500))
    num_warps: Mapped[int | None] = mapped_column(Integer)
    num_stages: Mapped[int | None] = mapped_column(Integer)
    num_ctas: Mapped[int | None] = mapped_column(Integer)
    shared: Mapped[int | None] = mapped_column(Integer)
    cache_key: Mapped[str | None] = mapped_column(String(1000))  # the cache folder it was linked to
    cache_match: Mapped[str | None] = mapped_column(String(16))  # "ttgir" | "ttir" | "name"
    compile_seconds: Mapped[float | None] = mapped_column(Float)
    counts: Mapped[dict] = mapped_column(JSON, default=dict)  # {"mlir": N, "internal": N, "llvm": N}
    changed: Mapped[int] = mapped_column(Integer, default=0)
    metadata_json: Mapped[dict | None] = mapped_column(ZippedJSON)
    # What its cubin or AMDGCN says (registers, stack, static shared...), read at ingest: the binary
    # itself is not kept (app/insight/resources.py turns it into what the pages show).
    resources: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    # What its IR says of its config, read once by the background preparation (app/insight/precompute.py)
    # so a run page matches autotune configs without reading texts: {"tile", "num_warps", "module"}
    derived: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    run: Mapped[Run] = relationship(back_populates="compilations")
    snapshots: Mapped[list[Snapshot]] = relationship(order_by="Snapshot.index", cascade="all, delete-orphan")
    artifacts: Mapped[list[Artifact]] = relationship(order_by="Artifact.pk", cascade="all, delete-orphan")
    timings: Mapped[list[Timing]] = relationship(order_by="Timing.pk", cascade="all, delete-orphan")
    launches: Mapped[list[Launch]] = relationship(order_by="Launch.index", cascade="all, delete-orphan")
    __table_args__ = (Index("ix_compilation_run_ordinal", "run_id", "ordinal", unique=True),)


class Snapshot(Base):
    """One IR dump. What its banner says (pass, before/after, kind, scope, failed) is on the banner's
    row, shared by every snapshot that printed the same banner (read as `snapshot.pass_name` etc.)."""

    __tablename__ = "snapshots"
    # Keyed by (compilation, index), the order every page reads them in (SQLite: WITHOUT ROWID, the key
    # is the table: no rowid column and no second index for that lookup).
    compilation_pk: Mapped[int] = mapped_column(ForeignKey("compilations.pk", ondelete="CASCADE"), primary_key=True)
    index: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)  # 0-based within the compilation
    # The unit the body holds where the banner's scope does not name it (a legacy LLVM banner says
    # "[module]" for every dump); None: the banner's scope is the snapshot's.
    unit: Mapped[str | None] = mapped_column(Text)
    stage: Mapped[str] = mapped_column(Interned(STAGE_NAMES))
    changed: Mapped[bool] = mapped_column(Boolean)
    line: Mapped[int] = mapped_column(Integer)  # banner's line in the log
    size: Mapped[int] = mapped_column(Integer)
    line_count: Mapped[int] = mapped_column(Integer)
    blob_id: Mapped[int] = mapped_column(ForeignKey("blobs.id"), index=True)
    # The body's hash, read with the row (an indexed lookup by id); SQL filters use `blob_id`.
    blob: Mapped[str] = column_property(_hash_of(blob_id))
    # The banner line as printed and what it says, interned: a few hundred distinct banners serve
    # thousands of snapshots. Loaded with the snapshot (one join): pages read its pass fields.
    banner_pk: Mapped[int] = mapped_column(ForeignKey("banners.pk"))
    banner: Mapped[Banner] = relationship(lazy="joined", innerjoin=True)
    # What the body holds (parsers/logs/scopes.py): "module", "function", "loop", "region", "machine", "op".
    scope_kind: Mapped[str | None] = mapped_column(Interned(SCOPE_KIND_NAMES))
    # Index of the previous snapshot of the same scope: the one this is compared (and diffed) with.
    base_index: Mapped[int | None] = mapped_column(Integer)
    # JSON list: passes LLVM's pass manager ran since the previous dump without printing one.
    trace: Mapped[str | None] = mapped_column(Text)
    __table_args__ = ({"sqlite_with_rowid": False},)

    @property
    def header(self) -> str:
        return self.banner.text

    @property
    def kind(self) -> str:  # "mlir" | "internal" | "llvm"
        return self.banner.kind

    @property
    def when(self) -> str:
        return self.banner.when

    @property
    def pass_name(self) -> str:
        return self.banner.pass_name

    @property
    def pass_arg(self) -> str | None:
        return self.banner.pass_arg

    @property
    def pass_options(self) -> str | None:
        return self.banner.pass_options

    @property
    def failed(self) -> bool:
        return self.banner.failed

    @property
    def scope(self) -> str | None:
        return self.unit if self.unit is not None else self.banner.scope


class Banner(Base):
    """A dump banner's text and what it says (parsers/records.py: DumpHeader), stored once however
    many snapshots print it (app/ingest/banners.py). Filter snapshots by pass through a join on `banner_pk`.
    No unique index: a banner can exceed PostgreSQL's index row size, and a rare duplicate row costs
    nothing."""

    __tablename__ = "banners"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(16))  # "mlir" | "internal" | "llvm"
    when: Mapped[str] = mapped_column(String(8))
    pass_name: Mapped[str] = mapped_column(String(500))
    pass_arg: Mapped[str | None] = mapped_column(String(500))
    pass_options: Mapped[str | None] = mapped_column(Text)
    scope: Mapped[str | None] = mapped_column(Text)  # the banner's scope ("builtin.module", "tt.func @f", ...)
    failed: Mapped[bool] = mapped_column(Boolean, default=False)


class Artifact(Base):
    """A file of a cache or kernel-dump folder: a stage text, metadata, or a binary (by size and hash)."""

    __tablename__ = "artifacts"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    compilation_pk: Mapped[int] = mapped_column(ForeignKey("compilations.pk", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # "ttir", "ttgir", "ptx", "json", "cubin", ...
    # Stored without what the compilation's row repeats (`stored_artifact` makes the values): a file
    # of its cache folder by its path below it (`in_folder`), and no sha256 beside the same hash in
    # `blob`. `path` and `sha256` read them whole.
    stored_path: Mapped[str] = mapped_column("path", String(1000))
    in_folder: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    size: Mapped[int] = mapped_column(Integer)
    blob: Mapped[str | None] = mapped_column(HexHash, ForeignKey("blobs.hash"), index=True)  # None for binaries
    stored_sha256: Mapped[str | None] = mapped_column("sha256", HexHash)
    path: Mapped[str] = column_property(case(
        (in_folder,
         select(Compilation.cache_key).where(Compilation.pk == compilation_pk).scalar_subquery() + "/" + stored_path),
        else_=stored_path))
    sha256: Mapped[str] = column_property(type_coerce(func.coalesce(stored_sha256, blob), HexHash))


def stored_artifact(fields: dict, cache_key: str | None) -> dict:
    """An artifact's values for an INSERT into the `artifacts` table (whose `path` and `sha256` columns
    hold `Artifact.stored_path` and `Artifact.stored_sha256`), from its whole path and hash."""
    path, in_folder = fields["path"], False
    if cache_key and path.startswith(cache_key + "/"):
        path, in_folder = path[len(cache_key) + 1:], True
    digest = None if fields.get("blob") == fields["sha256"] else fields["sha256"]
    return {**fields, "path": path, "in_folder": in_folder, "sha256": digest}


class Timing(Base):
    __tablename__ = "timings"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    compilation_pk: Mapped[int] = mapped_column(ForeignKey("compilations.pk", ondelete="CASCADE"), index=True)
    report: Mapped[int] = mapped_column(Integer)  # which report of the compilation (one per stage)
    name: Mapped[str] = mapped_column(String(500))
    depth: Mapped[int] = mapped_column(Integer)
    wall: Mapped[float] = mapped_column(Float)
    percent: Mapped[float] = mapped_column(Float)
    analysis: Mapped[bool] = mapped_column(Boolean, default=False)


class Launch(Base):
    """One launch of a compiled kernel, from a tritonparse trace: its grid, arguments and settings."""

    __tablename__ = "launches"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    compilation_pk: Mapped[int] = mapped_column(ForeignKey("compilations.pk", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)  # 0-based, in trace order within the compilation
    line: Mapped[int | None] = mapped_column(Integer)  # the event's line in its trace
    grid: Mapped[list | None] = mapped_column(JSON)
    arguments: Mapped[dict] = mapped_column(JSON, default=dict)  # tritonparse's extracted_args
    config: Mapped[dict] = mapped_column(JSON, default=dict)  # num_warps, num_stages, ... it ran with
    benchmark: Mapped[bool] = mapped_column(Boolean, default=False)  # launched by the autotuner's benchmark
    __table_args__ = (Index("ix_launch_compilation_index", "compilation_pk", "index", unique=True),)


class Source(Base):
    """A Python file from the upload, matched to `loc` paths by path suffix."""

    __tablename__ = "sources"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(String(1000))
    blob: Mapped[str] = mapped_column(HexHash, ForeignKey("blobs.hash"), index=True)


class Diagnostic(Base):
    __tablename__ = "diagnostics"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    compilation_pk: Mapped[int | None] = mapped_column(ForeignKey("compilations.pk", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    severity: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    file: Mapped[str | None] = mapped_column(String(1000))
    line: Mapped[int | None] = mapped_column(Integer)
    col: Mapped[int | None] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    log_name: Mapped[str | None] = mapped_column(String(1000))
    log_line: Mapped[int | None] = mapped_column(Integer)


class InputRecord(Base):
    """Every file of the upload and what became of it, so nothing is silently dropped."""

    __tablename__ = "inputs"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(String(1000))
    size: Mapped[int | None] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(32))  # "log", "cache", "kernel-dump", "source", "skipped", ...
    note: Mapped[str | None] = mapped_column(Text)
    log_blob: Mapped[str | None] = mapped_column(HexHash, ForeignKey("blobs.hash"), index=True)  # a log's non-IR lines


class Problem(Base):
    """A damaged dump, a skipped input or an ingest warning, shown to the user."""

    __tablename__ = "problems"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))  # "damaged-dump" | "skipped" | "warning"
    message: Mapped[str] = mapped_column(Text)
    path: Mapped[str | None] = mapped_column(String(1000))
    line: Mapped[int | None] = mapped_column(Integer)
    header: Mapped[str | None] = mapped_column(Text)
    blob: Mapped[str | None] = mapped_column(HexHash, ForeignKey("blobs.hash"), index=True)  # a damaged dump's text


class ApiToken(Base):
    """An API token: only its sha256 is stored. `name` is who uploads with it (a run's owner)."""

    __tablename__ = "api_tokens"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class OpTerm(Base):
    """A name the op index knows: `op:tt.load`, `group:tma`, `layout:blocked` (see app/insight/op_index.py)."""

    __tablename__ = "op_terms"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(500), unique=True)


class CompilationTerm(Base):
    """The first and last snapshot index of a compilation holding a term. Keyed by term first, so
    a search reads one contiguous range (SQLite: WITHOUT ROWID, the key is the table)."""

    __tablename__ = "compilation_terms"
    term_id: Mapped[int] = mapped_column(ForeignKey("op_terms.id"), primary_key=True)
    compilation_pk: Mapped[int] = mapped_column(
        ForeignKey("compilations.pk", ondelete="CASCADE"), primary_key=True, index=True
    )
    first_index: Mapped[int] = mapped_column(Integer)
    last_index: Mapped[int] = mapped_column(Integer)
    __table_args__ = ({"sqlite_with_rowid": False},)


class Profile(Base):
    """A profiler's output file uploaded with the run (Proton Hatchet JSON, Nsight Compute report
    or source-page CSV; parsers/profiles/proton.py, parsers/profiles/ncu.py): which metrics it holds,
    and what they mean."""

    __tablename__ = "profiles"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    path: Mapped[str] = mapped_column(String(1000))
    tool: Mapped[str] = mapped_column(String(16))  # "proton" | "ncu"
    mode: Mapped[str] = mapped_column(String(32))  # proton: timing | pcsampling | instrumentation; ncu: source | report
    metrics: Mapped[list] = mapped_column(JSON, default=list)  # [{name, unit, description}]
    devices: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    notes: Mapped[list] = mapped_column(JSON, default=list)


class ProfileKernel(Base):
    """One kernel of a profile, with its totals and, compressed, its per-line and per-instruction
    metrics (`data`: {"lines": [[kind, file, line, {metric: value}]], "sass": [[offset, address,
    text, file, line, {metric: value}]], "regions": {name: {...}}, "unattributed": {...}}).
    `compilation_pk`: the one compilation it joins; `candidates`: every compilation it may be."""

    __tablename__ = "profile_kernels"
    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    profile_pk: Mapped[int] = mapped_column(ForeignKey("profiles.pk", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(1000))
    base: Mapped[str] = mapped_column(String(500))
    count: Mapped[int | None] = mapped_column(Integer)
    time_ns: Mapped[float | None] = mapped_column(Float)
    compilation_pk: Mapped[int | None] = mapped_column(ForeignKey("compilations.pk", ondelete="SET NULL"))
    candidates: Mapped[list] = mapped_column(JSON, default=list)
    joined_by: Mapped[str | None] = mapped_column(String(32))  # "hash" | "launch" | "name"
    totals: Mapped[dict] = mapped_column(JSON, default=dict)
    data: Mapped[dict] = mapped_column(ZippedJSON)


class HistoryGeneration(Base):
    """One row (id 1) whose `value` goes up with every change to what kernel history lists: a run's
    points written or deleted, a run listed or unlisted (app/store/generation.py). Every worker
    process keeps the list of kernels (a scan of all points) for as long as the value stands."""

    __tablename__ = "history_generation"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    value: Mapped[int] = mapped_column(Integer, default=0)


class KernelPoint(Base):
    """One compilation as a point of its kernel's history (app/insight/kernel_points.py): the numbers
    the history pages and `irlens check` read, summed up once at ingest so that a kernel's history
    over thousands of runs is one indexed read. A series is a kernel name, a target and a config
    (`series`: its canonical JSON, `config`: the same as a dict). Deleted with its run or compilation."""

    __tablename__ = "kernel_points"
    compilation_pk: Mapped[int] = mapped_column(ForeignKey("compilations.pk", ondelete="CASCADE"), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # the run's: points sort by it
    kernel: Mapped[str] = mapped_column(String(500))
    target: Mapped[str | None] = mapped_column(String(100))
    series: Mapped[str] = mapped_column(String(1000))
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    triton_version: Mapped[str | None] = mapped_column(String(50))
    status: Mapped[str] = mapped_column(String(16), default="ok")
    registers: Mapped[int | None] = mapped_column(Integer)
    spill_bytes: Mapped[int | None] = mapped_column(Integer)
    shared_bytes: Mapped[int | None] = mapped_column(Integer)
    occupancy: Mapped[float | None] = mapped_column(Float)
    time_ns: Mapped[float | None] = mapped_column(Float)
    autotune_ms: Mapped[float | None] = mapped_column(Float)
    picked: Mapped[bool | None] = mapped_column(Boolean)
    passes_changed: Mapped[int | None] = mapped_column(Integer)
    ir_lines: Mapped[dict] = mapped_column(JSON, default=dict)
    ops: Mapped[dict] = mapped_column(JSON, default=dict)
    # A kernel's history reads its points newest first; the list of kernels groups by name.
    __table_args__ = (Index("ix_kernel_points_kernel_created", "kernel", "created_at", "run_id"),)


# The one generation row exists from the start (a schema made from these models, or migration 0019_i34).
event.listen(HistoryGeneration.__table__, "after_create",
             DDL("INSERT INTO history_generation (id, value) VALUES (1, 0)"))
