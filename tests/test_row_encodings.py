"""How rows are encoded (app/store/models.py): a snapshot's stage and scope kind are stored as one character
when known, as themselves otherwise; snapshots and pack slices name their blob by id and read its
hash back, in every form of query."""

from __future__ import annotations

import gzip

from sqlalchemy import Column, Integer, MetaData, Table, create_engine, func, insert, select, text

from app.store.models import STAGE_NAMES, Blob, Compilation, Interned, Snapshot
from tests.conftest import FIXTURES, ingest_paths


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


ORDER = (Snapshot.compilation_pk, Snapshot.index)


def test_blob_hashes_read_through_ids_in_every_form_of_query(db, tmp_path):
    log = tmp_path / "dump.log"
    log.write_bytes(gzip.decompress((FIXTURES / "sm90_add_kernel_dump.log.gz").read_bytes()))
    run = ingest_paths(db, [log])
    with db.session() as session:
        joined = session.execute(
            select(Snapshot.index, Blob.hash).join(Blob, Blob.id == Snapshot.blob_id).order_by(*ORDER)).all()
        assert len({digest for _, digest in joined}) > 1
        # the column alone (no other mention of snapshots), with a filter, and through the entity
        assert sorted(session.scalars(select(Snapshot.blob))) == sorted(digest for _, digest in joined)
        assert session.scalars(select(Snapshot.blob).join(Compilation).where(Compilation.run_id == run["run"])
                               .order_by(*ORDER)).all() == [digest for _, digest in joined]
        assert [s.blob for s in session.scalars(select(Snapshot).order_by(*ORDER))] == [d for _, d in joined]
        distinct = session.scalar(select(func.count(func.distinct(Snapshot.blob))))
        assert distinct == session.scalar(select(func.count(func.distinct(Snapshot.blob_id))))
        # a pack slice names its pack: the pack's own hash, and the pack holds the slice's bytes
        slices = session.execute(select(Blob.hash, Blob.pack).where(Blob.pack_id.is_not(None))).all()
        assert slices and all(pack is not None and pack != digest for digest, pack in slices)
        packs = set(session.scalars(select(Blob.hash).where(Blob.id.in_(select(Blob.pack_id)))))
        assert packs == {pack for _, pack in slices}
