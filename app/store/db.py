"""Engine, sessions and the schema. The engine is built per app (or per CLI call), never at import time.

The schema's history is in migrations/ (Alembic). Opening a database brings it to the newest
revision: an empty database gets the tables straight from the models and is stamped (the fast path
tests rely on; tests/test_migrations.py proves the two roads give the same schema), an older one is
upgraded by the migrations, and one made by irlens before it had migrations counts as revision 0001.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, event, inspect, make_url, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.store import json_values
from app.store.models import Base, add_postgresql_options

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger("irlens")

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS_DIR = ROOT / "migrations"
INITIAL_REVISION = "0001"  # the schema create_all made before irlens had migrations
SCHEMA_REVISION = "0021_i33b"  # the newest file in migrations/versions (a test keeps the two in step)
_PG_MIGRATION_LOCK = 0x6972_6C65  # any constant: one pg_advisory lock id for "irlens schema change"


# A request must not wait for a pooled connection while the server has a thread for it: the
# threadpool runs up to 40 requests at once (anyio's default), each with its own session, and an upload
# holds its connection for its whole ingest. SQLAlchemy's default pool (5, overflow 10) would make
# the 16th concurrent request wait, and fail with a 500 after 30 s if 15 long ingests held theirs.
POOL_OPTIONS = {"pool_size": 5, "max_overflow": 40}


POSTGRES_EXTRA = "pip install 'irlens[postgres]'"


class DriverMissing(RuntimeError):
    """The database URL needs a driver that is not installed (a one-line message for the CLI)."""


def database_url(url: str) -> str:
    """``postgresql://`` (and ``postgres://``) without a driver mean psycopg 3, the driver the
    ``postgres`` extra installs; SQLAlchemy would pick psycopg2, which irlens does not install."""
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg://" + url[len(bare):]
    return url


def _missing_driver(url: str, module: str) -> str:
    message = f"the database driver for {make_url(database_url(url)).drivername} is not installed (no module {module!r})"
    if module.split(".")[0] == "psycopg":
        return f"{message}: {POSTGRES_EXTRA}"
    if make_url(database_url(url)).get_backend_name() == "postgresql":
        return f"{message}: install it, or use postgresql+psycopg:// after {POSTGRES_EXTRA}"
    return message


SQLITE_PAGE_SIZE = 2048  # bytes, for new SQLite files


def make_engine(url: str, write_wait_seconds: float = 60) -> Engine:
    """`write_wait_seconds`: how long a SQLite writer waits for another's write lock before it fails
    with "database is locked". An ingest holds that lock until it commits, so the app passes its
    ingest timeout: uploads queue behind each other instead of failing after a minute."""
    if url.startswith("sqlite"):
        path = make_url(url).database
        in_memory = not path or path == ":memory:"
        if not in_memory:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": write_wait_seconds}, json_serializer=json_values.dumps,
            **({} if in_memory else POOL_OPTIONS)
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            # A new file gets 2 KB pages (first, before WAL writes its header; an existing file keeps
            # its own): a small capture's database is ~5% smaller (each of ~45 tables and indexes
            # ends in a part-filled page) and cold text reads cost the same (bench/NOTES.md).
            cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
            # WAL lets readers browse while an ingest writes; NORMAL sync is safe with WAL.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

    else:
        if make_url(database_url(url)).get_backend_name() == "postgresql":
            add_postgresql_options()
        try:
            engine = create_engine(database_url(url), pool_pre_ping=True, json_serializer=json_values.dumps, **POOL_OPTIONS)
        except ModuleNotFoundError as error:  # SQLAlchemy imports the driver here
            raise DriverMissing(_missing_driver(url, error.name or "?")) from None
    return engine


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's config for migrations/, with our connection (so env.py makes no engine of its own)."""
    from alembic.config import Config

    config = Config(str(ROOT / "alembic.ini")) if (ROOT / "alembic.ini").exists() else Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def current_revision(connection: Connection) -> str | None:
    """The revision stamped in alembic_version (read directly: importing Alembic costs a tenth of a second)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.scalar(text("SELECT version_num FROM alembic_version"))


def _stamp(connection: Connection, revision: str) -> None:
    """What `alembic stamp` writes, without loading the migration scripts."""
    connection.execute(
        text(
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
        )
    )
    connection.execute(
        text("INSERT INTO alembic_version (version_num) VALUES (:revision)"), {"revision": revision}
    )


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[None]:
    """One schema change at a time when several workers start together on one SQLite file."""
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if not path or path == ":memory:":
        yield
        return
    try:
        import fcntl
    except ImportError:  # Windows: no advisory file locks; workers there are rare
        yield
        return
    with open(f"{path}.migrate-lock", "a") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


@contextmanager
def migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction, for changing the schema: one schema change at a time.

    On SQLite, foreign keys are off meanwhile: Alembic's batch mode rebuilds a table by copying it,
    and dropping the old table would otherwise cascade-delete every row that refers to it.
    """
    with _migration_lock(engine), engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:  # must happen outside a transaction to take effect
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    connection.execute(
                        text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK}
                    )
                yield connection
        finally:
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


def upgrade_schema(engine: Engine, revision: str = "head") -> tuple[str | None, str | None]:
    """Bring the database to `revision` (default: the newest). Returns (revision before, revision after)."""
    with migration_connection(engine) as connection:
        tables = set(inspect(connection).get_table_names())
        if "alembic_version" in tables:
            before = current_revision(connection)
        elif tables & set(Base.metadata.tables):
            before = None
            _stamp(connection, INITIAL_REVISION)
            log.info("database made before migrations existed: taken as revision %s", INITIAL_REVISION)
        elif revision in ("head", SCHEMA_REVISION):
            Base.metadata.create_all(connection)
            _stamp(connection, SCHEMA_REVISION)
            log.info("created the database schema at revision %s", SCHEMA_REVISION)
            return None, SCHEMA_REVISION
        else:
            before = None
        if before is not None and revision in ("head", SCHEMA_REVISION) and before == SCHEMA_REVISION:
            return before, before
        from alembic import command

        command.upgrade(alembic_config(connection), revision)
        after = current_revision(connection)
        if after != before:
            log.info("upgraded the database schema from %s to %s", before or "nothing", after)
        return before, after


class Database:
    def __init__(self, url: str, *, upgrade: bool = True, write_wait_seconds: float = 60) -> None:
        self.url = url
        self.engine = make_engine(url, write_wait_seconds)
        if upgrade:
            upgrade_schema(self.engine)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.sessions() as session:
            yield session

    @contextmanager
    def startup_lock(self) -> Iterator[None]:
        """Serialise start-up work (loading the demo) across worker processes."""
        with _migration_lock(self.engine):
            if self.engine.dialect.name != "postgresql":
                yield
                return
            with self.engine.connect() as connection:
                key = {"key": _PG_MIGRATION_LOCK + 1}
                connection.execute(text("SELECT pg_advisory_lock(:key)"), key)
                try:
                    yield
                finally:
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), key)
                    connection.commit()

    def release_free_pages(self, min_share: float = 0.25) -> bool:
        """SQLite: VACUUM when free pages are at least `min_share` of the file, as after a compaction
        of a database that holds little but this ingest (the packs it merged are dropped, their pages
        kept), so that the file is what is stored. A database where they are a small share is left
        as it is: VACUUM rewrites the whole file, and the next ingest reuses free pages anyway.
        True when it vacuumed; False otherwise, or when another connection held the database."""
        if self.engine.dialect.name != "sqlite" or make_url(self.url).database in (None, "", ":memory:"):
            return False
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            free = connection.exec_driver_sql("PRAGMA freelist_count").scalar() or 0
            pages = connection.exec_driver_sql("PRAGMA page_count").scalar() or 0
            if not pages or free < pages * min_share:
                return False
            try:
                connection.exec_driver_sql("VACUUM")
            except OperationalError:  # a reader or writer elsewhere: the free pages stay for reuse
                return False
        return True

    def dispose(self) -> None:
        self.engine.dispose()
