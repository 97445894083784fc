"""Alembic environment. irlens passes its own connection (app/store/db.py); the `alembic` command builds one
from `-x db=URL` or the app's settings (IRLENS_DB_URL, IRLENS_DATA_DIR)."""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from app.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things: batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    run_with(connection)
else:
    # Run from the `alembic` command line: its logging config applies, and we make our own engine.
    if config.config_file_name is not None:
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    from app.settings import Settings
    from app.store.db import make_engine

    url = context.get_x_argument(as_dictionary=True).get("db") or Settings().database_url
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            run_with(connection)
    finally:
        engine.dispose()
