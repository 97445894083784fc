"""Compaction (app/store/compaction.py): fresh packs merged, like texts side by side, every text as it was."""

from __future__ import annotations

from sqlalchemy import select

from app.store import blobs, compaction
from app.store.blobs import CODEC_PACKED, CODEC_QUICK, CODEC_STRONG, CODEC_ZSTD, BlobReader
from app.store.compaction import _chunks, _Member, _sort_keys, compact_pending
from app.store.models import Blob, Compilation
from app.store.retention import collect_all_blobs, delete_run
from tests.conftest import corpus_archive, ingest_paths
from tests.test_recompress import codecs, every_text


def pack_layout(db) -> dict[int, list[tuple[int, int]]]:
    """pack id -> [(offset, size)] of its slices, in offset order."""
    with db.session() as session:
        packs: dict[int, list[tuple[int, int]]] = {}
        for pack_id, offset, size in session.execute(
                select(Blob.pack_id, Blob.data, Blob.size).where(Blob.codec == CODEC_PACKED)):
            packs.setdefault(pack_id, []).append((int(offset), size))
        return {pack: sorted(slices) for pack, slices in packs.items()}


def test_compaction_merges_fresh_packs_and_keeps_every_text(db):
    ingest_paths(db, [corpus_archive("sm90_mix")])
    ingest_paths(db, [corpus_archive("sm90_filter")])
    before = every_text(db)
    fresh = len(pack_layout(db))
    frames = codecs(db)[CODEC_ZSTD]

    done = compact_pending(db.session, level=19)

    assert done.blobs == frames and done.bytes_after < done.bytes_before
    assert CODEC_ZSTD not in codecs(db)
    layout = pack_layout(db)
    assert 0 < len(layout) < fresh  # fewer, larger packs
    assert codecs(db)[CODEC_STRONG] == frames - (fresh - len(layout))  # the old packs are gone
    for slices in layout.values():  # each pack's slices tile it, with no gap or overlap
        assert len(slices) > 1
        assert [offset for offset, _ in slices] == [0, *(o + s for o, s in slices[:-1])]
        assert sum(size for _, size in slices) <= compaction.MERGED_BYTES + max(size for _, size in slices)
    assert every_text(db) == before
    assert compact_pending(db.session, level=19).blobs == 0  # nothing fresh is left


def test_a_quick_round_marks_its_packs_and_a_strong_one_recompresses_them_in_place(db):
    # what `irlens ingest` does before it returns, then what the server or `irlens compact` does later
    ingest_paths(db, [corpus_archive("sm90_mix")])
    before = every_text(db)
    fresh = len(pack_layout(db))

    quick = compact_pending(db.session, level=9, quick=True)

    assert set(codecs(db)) == {CODEC_PACKED, CODEC_QUICK} and quick.bytes_after < quick.bytes_before
    layout = pack_layout(db)
    assert 0 < len(layout) < fresh and slices_in_key_order(db)  # merged and sorted, as a strong round does
    assert every_text(db) == before
    assert compact_pending(db.session, level=9, quick=True).blobs == 0  # a quick round takes only fresh frames

    strong = compact_pending(db.session, level=19)

    assert set(codecs(db)) == {CODEC_PACKED, CODEC_STRONG}
    assert strong.blobs == codecs(db)[CODEC_STRONG] and strong.bytes_after < strong.bytes_before
    assert pack_layout(db) == layout  # recompressed where they were: no slice moved
    assert every_text(db) == before
    assert compact_pending(db.session, level=19).blobs == 0


def test_a_compacted_file_that_is_mostly_free_pages_is_vacuumed(db):
    ingest_paths(db, [corpus_archive("sm90_mix")])
    compact_pending(db.session, level=9, quick=True)  # the ingest's packs dropped: their pages are free
    if db.engine.dialect.name != "sqlite":
        assert not db.release_free_pages()  # PostgreSQL: its autovacuum keeps its own free space
        return

    def pages() -> tuple[int, int]:
        with db.engine.connect() as connection:
            return (connection.exec_driver_sql("PRAGMA freelist_count").scalar(),
                    connection.exec_driver_sql("PRAGMA page_count").scalar())

    free, total = pages()
    assert free >= total * 0.25
    before = every_text(db)
    assert db.release_free_pages()
    free, smaller = pages()
    assert free == 0 and smaller <= total - (total // 4)
    assert every_text(db) == before
    assert not db.release_free_pages()  # nothing to give back: left as it is


def slices_in_key_order(db) -> bool:
    """Whether every pack holds its texts in the order compaction sorts them: kernel, stage, pass."""
    with db.session() as session:
        rows = session.execute(select(Blob.pack_id, Blob.data, Blob.id).where(Blob.codec == CODEC_PACKED)).all()
        keys = _sort_keys(session, [blob_id for *_, blob_id in rows])
    by_pack: dict[int, list[tuple[int, int]]] = {}
    for pack_id, offset, blob_id in rows:
        by_pack.setdefault(pack_id, []).append((int(offset), blob_id))
    for slices in by_pack.values():
        ordered = [(*keys.get(blob_id, ("", -1, 0, 0)), blob_id) for _, blob_id in sorted(slices)]
        if ordered != sorted(ordered):
            return False
    return True


def test_like_texts_sit_side_by_side_in_a_merged_pack(db):
    ingest_paths(db, [corpus_archive("sm90_mix")])
    assert not slices_in_key_order(db)  # an ingest stores texts in the order the log printed them
    compact_pending(db.session, level=3)
    assert slices_in_key_order(db)
    with db.session() as session:  # and the order mixes the texts of several kernels' compilations
        kernels = session.scalars(select(Compilation.kernel).distinct()).all()
    assert len(kernels) > 1


def test_deleting_a_run_after_compaction_keeps_the_other_runs_texts(db):
    first = ingest_paths(db, [corpus_archive("sm90_mix")])
    ingest_paths(db, [corpus_archive("gfx942_mix")])
    compact_pending(db.session, level=3)
    before = every_text(db)

    deleted = delete_run(db, first["run"])

    assert deleted is not None and deleted.blobs > 0
    after = every_text(db)
    assert after and all(before[digest] == text for digest, text in after.items())
    with db.session() as session:
        assert collect_all_blobs(session) == 0  # nothing unreferenced was left behind
        packs = set(session.scalars(select(Blob.pack_id).where(Blob.pack_id.is_not(None))))
        stored = set(session.scalars(select(Blob.id).where(Blob.codec == CODEC_STRONG)))
        assert packs <= stored


def test_a_reader_holding_a_texts_row_from_before_the_merge_still_reads_it(db):
    ingest_paths(db, [corpus_archive("sm90_mix")])
    before = every_text(db)
    digest = next(iter(before))
    with db.session() as reader_session:
        row = blobs.blob_row(reader_session, digest)
        assert row is not None and row.codec == CODEC_PACKED
        compact_pending(db.session, level=3)
        blobs.PACKS.packs.clear()
        blobs.PACKS.size = 0
        assert BlobReader()._raw(reader_session, row) == before[digest]


def test_a_failed_merge_leaves_the_packs_to_be_recompressed_alone(db, monkeypatch):
    ingest_paths(db, [corpus_archive("sm90_mix")])
    before = every_text(db)
    layout = pack_layout(db)

    def broken(*args, **kwargs):
        raise ValueError("damaged frame")

    monkeypatch.setattr(compaction, "merge_packs", broken)
    compact_pending(db.session, level=3)

    assert CODEC_ZSTD not in codecs(db)
    assert pack_layout(db) == layout  # recompressed where they were
    assert every_text(db) == before


def test_a_stopped_compaction_leaves_every_text_readable_and_the_next_one_finishes(db, monkeypatch):
    ingest_paths(db, [corpus_archive("sm90_mix")])
    before = every_text(db)
    fresh = len(pack_layout(db))
    monkeypatch.setattr(compaction, "MERGED_BYTES", 256 << 10)  # several merged packs per gather
    calls = iter(range(100))
    compact_pending(db.session, level=3, stop=lambda: next(calls) >= 2)  # after one merged pack

    assert codecs(db)[CODEC_STRONG] == 1
    assert len(pack_layout(db)) == fresh + 1  # the old packs keep the texts not moved yet
    assert every_text(db) == before
    compact_pending(db.session, level=3)
    assert CODEC_ZSTD not in codecs(db)
    assert every_text(db) == before
    assert compact_pending(db.session, level=0).blobs == 0


def test_a_gather_that_merges_nothing_ends_the_round_recompressed_in_place(db, monkeypatch):
    # e.g. a pack left with one text by a stopped round: it must not be gathered again and again
    ingest_paths(db, [corpus_archive("sm90_mix")])
    before, layout = every_text(db), pack_layout(db)
    monkeypatch.setattr(compaction, "_chunks", lambda members: [])
    compact_pending(db.session, level=3)
    assert CODEC_ZSTD not in codecs(db)
    assert pack_layout(db) == layout
    assert every_text(db) == before


def test_merged_packs_are_cut_by_size_and_never_hold_one_text():
    def runs(*sizes: int) -> list[list[int]]:
        return [[m.id for m in run] for run in _chunks([_Member(i, size, 0, 0) for i, size in enumerate(sizes)])]

    half = compaction.MERGED_BYTES // 2
    assert runs(half, half, half, half) == [[0, 1], [2, 3]]
    assert runs(half, half, half) == [[0, 1, 2]]  # a lone last text joins the run before it
    assert runs(10, compaction.MERGED_BYTES, 5) == [[0, 1, 2]]  # a big text does not stand alone
    assert runs(3, 4) == [[0, 1]]


def test_an_ingest_that_compacts_writes_its_packs_once_at_the_quick_level(tmp_path):
    # `irlens ingest` without --no-compact: 16 MB packs at compact_level as the texts come, marked
    # quick, so no merge is left for after the ingest; a strong round recompresses them in place
    from app.store.db import Database
    from tests.conftest import fresh_db_url
    from tests.test_recompress import frame_bytes

    (tmp_path / "fast").mkdir()
    (tmp_path / "quick").mkdir()
    fast, quick = Database(fresh_db_url(tmp_path / "fast")), Database(fresh_db_url(tmp_path / "quick"))
    try:
        archive = corpus_archive("sm90_mix")
        ingest_paths(fast, [archive])
        ingest_paths(quick, [archive], compact_level=9)

        assert every_text(quick) == every_text(fast)
        written = codecs(quick)
        assert written.get(CODEC_QUICK) and not written.get(CODEC_STRONG)
        layout = pack_layout(quick)
        assert 0 < len(layout) < len(pack_layout(fast))  # fewer, larger packs
        for slices in layout.values():  # each pack's slices tile it, up to QUICK_PACK_BYTES and one text
            assert [offset for offset, _ in slices] == [0, *(o + s for o, s in slices[:-1])]
            assert sum(size for _, size in slices) <= blobs.QUICK_PACK_BYTES + max(size for _, size in slices)
        assert frame_bytes(quick) < 0.9 * frame_bytes(fast)

        # the quick round after the ingest takes only what is left fresh (texts stored alone), no pack
        compact_pending(quick.session, level=9, quick=True)
        assert CODEC_ZSTD not in codecs(quick) and pack_layout(quick) == layout
        strong = compact_pending(quick.session, level=19)
        assert strong.bytes_after < strong.bytes_before and set(codecs(quick)) == {CODEC_PACKED, CODEC_STRONG}
        assert pack_layout(quick) == layout and every_text(quick) == every_text(fast)
    finally:
        fast.dispose()
        quick.dispose()


def test_many_small_quick_packs_keep_every_text(tmp_path, monkeypatch):
    # Small packs (8 KB fast frames, 32 KB quick packs): many quick packs of several fast frames each,
    # on committed fixtures (the sm90_mix test above needs ../shared and makes one)
    from app.store.db import Database
    from tests.conftest import FIXTURES, fresh_db_url

    logs = [FIXTURES / "recompile_add_kernel_triton39.log.gz", FIXTURES / "sm90_add_kernel_dump.log.gz"]
    (tmp_path / "fast").mkdir()
    (tmp_path / "quick").mkdir()
    fast, quick = Database(fresh_db_url(tmp_path / "fast")), Database(fresh_db_url(tmp_path / "quick"))
    monkeypatch.setattr(blobs, "PACK_BYTES", 8 << 10)
    monkeypatch.setattr(blobs, "QUICK_PACK_BYTES", 32 << 10)
    try:
        ingest_paths(fast, logs)
        ingest_paths(quick, logs, compact_level=9)
        assert every_text(quick) == every_text(fast)
        layout = pack_layout(quick)
        assert len(layout) >= 3 and codecs(quick).get(CODEC_QUICK)
        for slices in layout.values():
            assert [offset for offset, _ in slices] == [0, *(o + s for o, s in slices[:-1])]
    finally:
        fast.dispose()
        quick.dispose()
