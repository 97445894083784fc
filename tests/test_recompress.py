"""Background recompression (app/store/recompress.py): smaller frames, the same texts, idempotent."""

from __future__ import annotations

import subprocess
import sys
import time

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.settings import Settings
from app.store import blobs
from app.store.blobs import CODEC_STRONG, CODEC_ZSTD, BlobReader
from app.store.models import Artifact, Blob, InputRecord, Snapshot
from app.store.recompress import recompress_pending
from app.web.app import create_app
from app.web.views.runs import _log_lines
from tests.conftest import REPO, corpus_archive, ingest_paths


def every_text(db) -> dict[str, bytes]:
    """Each stored text any row refers to, read cold (no pack or text cached)."""
    blobs.PACKS.packs.clear()
    blobs.PACKS.size = 0
    reader = BlobReader(capacity=1)
    with db.session() as session:
        hashes = set(session.scalars(select(Snapshot.blob)))
        hashes |= set(session.scalars(select(Artifact.blob).where(Artifact.blob.is_not(None))))
        hashes |= set(session.scalars(select(InputRecord.log_blob).where(InputRecord.log_blob.is_not(None))))
        return {digest: reader.get(session, digest) for digest in hashes}


def codecs(db) -> dict[str, int]:
    with db.session() as session:
        return dict(session.execute(select(Blob.codec, func.count()).group_by(Blob.codec)).all())


def frame_bytes(db) -> int:
    with db.session() as session:
        return session.scalar(select(func.sum(func.length(Blob.data))).where(Blob.codec.in_(blobs.ZSTD_CODECS)))


def test_recompression_keeps_every_text_and_shrinks_the_frames(db):
    ingest_paths(db, [corpus_archive("sm90_llvm")])
    before, stored = every_text(db), frame_bytes(db)
    frames = codecs(db)[CODEC_ZSTD]
    assert frames > 1 and CODEC_STRONG not in codecs(db)

    done = recompress_pending(db.session, level=19)

    assert done.blobs == frames
    assert done.bytes_after < done.bytes_before == stored
    assert frame_bytes(db) == done.bytes_after
    assert CODEC_ZSTD not in codecs(db) and codecs(db)[CODEC_STRONG] == frames
    assert every_text(db) == before
    # a log's text (streamed without its size at ingest) still reads line by line
    with db.session() as session:
        log_blob = session.scalars(select(Blob).join(InputRecord, InputRecord.log_blob == Blob.hash)).first()
        assert log_blob is not None and log_blob.codec == CODEC_STRONG
        assert b"".join(line + b"\n" for line in _log_lines(log_blob)) == before[log_blob.hash]
    assert recompress_pending(db.session, level=19).blobs == 0  # nothing left to do


def test_a_round_stops_between_texts_when_asked_and_level_0_does_nothing(db):
    ingest_paths(db, [corpus_archive("sm90_llvm")])
    frames = codecs(db)[CODEC_ZSTD]
    assert recompress_pending(db.session, level=0).blobs == 0
    calls = iter(range(100))
    done = recompress_pending(db.session, level=3, stop=lambda: next(calls) >= 2)
    assert done.blobs == 1
    assert codecs(db)[CODEC_ZSTD] == frames - 1


def test_compact_command(db, tmp_path):
    ingest_paths(db, [corpus_archive("sm90_llvm")])
    frames = codecs(db)[CODEC_ZSTD]
    url = db.engine.url.render_as_string(hide_password=False)
    result = subprocess.run([sys.executable, "-m", "app.cli", "compact", "--db", url, "--level", "5"],
                            capture_output=True, text=True, cwd=REPO, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"compacted {frames} stored frames at zstd level 5" in result.stdout
    assert CODEC_ZSTD not in codecs(db)


def test_the_server_recompresses_in_the_background(db, tmp_path):
    run = ingest_paths(db, [corpus_archive("sm90_llvm")])
    before = every_text(db)
    url = db.engine.url.render_as_string(hide_password=False)
    settings = Settings(db_url=url, data_dir=tmp_path, load_demo=False, recompress_level=3)
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + 60
        while CODEC_ZSTD in codecs(db) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert CODEC_ZSTD not in codecs(db)
        page = client.get(f"/runs/{run['run']}/c/1/s/0/raw")
        assert page.status_code == 200 and page.content in before.values()
    assert every_text(db) == before
