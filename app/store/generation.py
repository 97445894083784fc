"""The kernel history's generation (`history_generation`, one row): bumped in the transaction that
changes what the list of kernels shows (a run's points written or deleted, a run listed or
unlisted), read before the list is served from a worker's memory (app/insight/kernel_history.py).
The bump takes the row's lock until its transaction ends, so concurrent changes count one each."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.store.blobs import insert_rows
from app.store.models import HistoryGeneration


def bump_history(session: Session) -> None:
    table = HistoryGeneration.__table__
    done = session.execute(update(table).where(table.c.id == 1).values(value=table.c.value + 1)).rowcount
    if not done:  # a database whose row went missing
        insert_rows(session, table, ("id", "value"), [(1, 1)], ignore_conflict_on="id")


def history_generation(session: Session) -> int:
    return session.scalar(select(HistoryGeneration.value).where(HistoryGeneration.id == 1)) or 0
