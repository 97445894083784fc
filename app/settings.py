"""All settings in one place. Each field's description feeds the CLI help, /-/settings.json and the README."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:  # imported when called: the CLI imports this module and must start fast
    from app.store.db import Database
    from parsers.inputs.sources import Limits


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="IRLENS_", extra="ignore")

    data_dir: Path = Field(
        Path("data"), description="Directory for the default SQLite database and temporary upload files."
    )
    db_url: str | None = Field(
        None,
        description="SQLAlchemy database URL, e.g. postgresql://user@host/irlens (needs "
        "pip install 'irlens[postgres]'; postgresql:// means psycopg 3). "
        "Default: a SQLite file irlens.db in data_dir.",
    )
    base_url: str = Field(
        "",
        description="URL path prefix when served behind a reverse proxy, e.g. /irlens. Every link carries it; "
        "requests are answered with or without it (whether the proxy strips it or not).",
    )
    load_demo: bool = Field(
        True, description="Load the bundled demo capture on start when the database holds no runs."
    )
    max_upload_bytes: int = Field(
        2 << 30, description="Largest upload accepted, in bytes (compressed size as sent)."
    )
    max_expanded_bytes: int = Field(
        8 << 30, description="Most bytes an upload may expand to once archives are unpacked (bomb guard)."
    )
    max_files: int = Field(100_000, description="Most files an upload may contain, archives included.")
    max_profile_bytes: int = Field(
        256 << 20,
        description="Largest profile file read (Proton .hatchet JSON, Nsight Compute CSV or .ncu-rep), in bytes: a "
        "profile is parsed whole, so a bigger one is kept as a file, not read, and a warning names it.",
    )
    # The two scan settings are read from the environment where they act (the log helpers start
    # before this class is imported, and parsers/ never imports app/); declared here for the docs.
    scan_workers: int = Field(
        0, description="Helper processes that scan a large plain log, each over byte ranges cut at dump banners "
        "(app/ingest/log_ranges.py). 0: one per core this process may run on, less one (the ingest's own).",
    )
    pure_scan: bool = Field(
        False, description="Scan with the pure-Python code even where the hyperscan wheel (the `fast` extra) is "
        "installed: the same results, slower; for checking the two paths against each other.",
    )
    ingest_timeout_seconds: float = Field(
        1800,
        description="Longest an upload or `irlens ingest` may spend reading its inputs, in seconds; past it "
        "the ingest stops and stores nothing. 0: no limit. On SQLite, also how long a write waits for "
        "another's lock (an ingest holds it until it commits).",
    )
    require_token: bool = Field(
        False,
        description="Require an API token (Bearer or signed-in session) to upload, edit and delete runs. "
        "Then the home page lists only listed runs and the reader's own; any run opens by its link.",
    )
    require_token_to_read: bool = Field(
        False,
        description="Require a token, a signed-in session or the trusted proxy's user header to read anything "
        "(except /-/health and the sign-in page).",
    )
    trusted_user_header: str | None = Field(
        None,
        description="Header set by a trusted reverse proxy naming the signed-in user, e.g. X-Forwarded-User. "
        "It lets that user read; uploads still need a token. The proxy must strip it from clients' requests.",
    )
    retention_days: int | None = Field(
        None,
        description="Delete runs older than this many days, and the stored texts only they used (checked "
        "on start and hourly; `irlens gc` does it on demand). Empty: keep forever.",
    )
    compact_level: int = Field(
        9,
        description="zstd level at which `irlens ingest` and `irlens capture` store their texts compacted: "
        "packs of up to 16 MB, compressed once while the log is parsed (what is still fresh after the ingest "
        "is compacted before they return). On a 232 MB GPU autotune capture that stores 67% of the bytes "
        "`--no-compact` stores, for ~0.6 s of CPU on a worker thread (bench/NOTES.md, round 11b); "
        "the server or `irlens compact` recompresses them at recompress_level later. 0 (here or in "
        "recompress_level): leave the texts as ingest compressed them (as --no-compact).",
    )
    recompress_level: int = Field(
        19,
        description="zstd level at which the server compacts stored texts in the background after ingest "
        "(`irlens compact` does it on demand): an upload's packs are merged into packs of up to 16 MB, like "
        "texts side by side, and compressed at this level (19: with a 512-byte target match length and a "
        "4-step search); packs `irlens ingest` compacted at compact_level are recompressed in place. On the "
        "corpus that stores the texts in 39% fewer bytes than ingest did, at a few MB/s of one core. 0: keep "
        "them as ingest compressed them.",
    )
    history_register_change_percent: float = Field(
        5.0,
        description="Kernel history and `irlens check`: a step between two points of a kernel is flagged when its "
        "registers change by at least this many percent (spill bytes, occupancy and op groups: any change).",
    )
    history_time_change_percent: float = Field(
        5.0,
        description="Kernel history and `irlens check`: a step is flagged when the time per launch changes by at "
        "least this many percent, where both points have a profile.",
    )
    history_points: int = Field(
        200,
        description="Most points of a kernel's history a page shows (the newest; `?limit=` asks for up to 5000).",
    )
    forwarded_allow_ips: str = Field(
        "127.0.0.1",
        description="With --proxy-headers: comma-separated proxy addresses whose X-Forwarded-* headers are "
        "trusted, or * for any.",
    )
    workers: int = Field(1, description="Number of uvicorn worker processes for `irlens serve`.")
    secret_key: str | None = Field(
        None,
        description="Key for signing session cookies. Default: generated once and kept in data_dir/secret_key. "
        "Set the same key on every host serving one database.",
    )

    sass_disassembler: str | None = Field(
        None,
        description="Path to nvdisasm or cuobjdump, which turn each uploaded cubin into SASS; `off` turns SASS "
        "off. Default: nvdisasm or cuobjdump on PATH, else the copies an installed Triton or "
        "nvidia-cuda-nvdisasm package bundles.",
    )

    replay_pythons: str | None = Field(
        None,
        description="Interpreters that replay passes (`irlens replay`, the diff page's Re-run panel), per Triton "
        "version: `3.9=/venvs/t39/bin/python,3.1.0=/venvs/t31/bin/python` (a version matches captures of it "
        "and of its patch releases). Without one, a capture replays where this interpreter's own triton "
        "(the `replay` extra) is its version; elsewhere the page shows the commands to run locally.",
    )
    replay_timeout_seconds: float = Field(
        60, description="Longest one replayed pass (or the replay process's start) may run, in seconds; past it "
        "the process is killed and the pass reported as an error.",
    )
    replay_memory_mb: int = Field(
        4096, description="Address-space limit of a replay process, in MB: past it the pass ends in an error "
        "instead of taking the host's memory (Triton 3.9 starts within 512).",
    )

    def limits(self) -> Limits:
        """The input limits of one ingest (parsers.inputs.sources), from these settings."""
        from parsers.inputs.sources import Limits

        return Limits(
            max_total_bytes=self.max_expanded_bytes,
            max_files=self.max_files,
            max_profile_bytes=self.max_profile_bytes,
            timeout_seconds=self.ingest_timeout_seconds or None,
        )

    def database(self) -> Database:
        """The configured database. A SQLite writer waits for another's write lock as long as one
        ingest may last (a day with no limit): uploads then queue instead of failing."""
        from app.store.db import Database

        return Database(self.database_url, write_wait_seconds=self.ingest_timeout_seconds or 86_400)

    @property
    def database_url(self) -> str:
        if self.db_url:
            return self.db_url
        return f"sqlite:///{(self.data_dir / 'irlens.db').resolve()}"


def settings_table() -> str:
    """The README's settings table, generated from the fields above (a test keeps them in step)."""
    rows = ["| environment variable | default | description |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default
        shown = f"`{default}`" if default not in (None, "") else "(none)"
        rows.append(f"| `IRLENS_{name.upper()}` | {shown} | {field.description} |")
    return "\n".join(rows)
