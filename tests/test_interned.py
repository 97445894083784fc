"""Interned names (app/models.py): a snapshot's stage and scope kind are stored as one character when
known, as themselves otherwise, and read back the same either way."""

from __future__ import annotations

from sqlalchemy import Column, Integer, MetaData, Table, create_engine, insert, select, text

from app.models import STAGE_NAMES, Interned


def test_known_names_take_one_character_and_others_pass_through(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'names.db'}")
    table = Table("t", MetaData(), Column("pk", Integer, primary_key=True), Column("stage", Interned(STAGE_NAMES)))
    table.metadata.create_all(engine)
    names = [*STAGE_NAMES, "iree-flow", "x", None]
    with engine.begin() as connection:
        connection.execute(insert(table), [{"pk": i, "stage": name} for i, name in enumerate(names)])
        stored = connection.scalars(text("SELECT stage FROM t ORDER BY pk")).all()
        assert stored == [chr(place) for place in range(1, len(STAGE_NAMES) + 1)] + ["iree-flow", "x", None]
        assert connection.scalars(select(table.c.stage).order_by(table.c.pk)).all() == names
        # a filter on a name compares stored codes
        assert connection.scalar(select(table.c.pk).where(table.c.stage == "llvm-dialect")) == 2
    engine.dispose()
