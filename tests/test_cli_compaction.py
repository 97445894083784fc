"""`irlens ingest` compacts what it stored unless --no-compact (issues 29 and 32): on a real corpus
capture, at the quick level (compact_level): its packs written compacted, then what is left fresh, leaving no fast frame;
`irlens compact` afterwards leaves the database `irlens ingest --no-compact` then `irlens compact`
leaves; every text reads the same, and --no-compact leaves the packs as ingest wrote them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import exists, select
from sqlalchemy.orm import aliased

from app.store.blobs import CODEC_PACKED, CODEC_QUICK, CODEC_STRONG, BlobReader
from app.store.db import Database
from app.store.models import Blob
from tests.conftest import REPO, corpus_archive, fresh_db_url, stored_blobs

IRLENS = [sys.executable, "-m", "app.cli"]


def irlens(*args: str, level: int = 19) -> subprocess.CompletedProcess:
    # The suite turns compaction off (tests/conftest.py); on here, at the setting's default level.
    env = {**os.environ, "IRLENS_RECOMPRESS_LEVEL": str(level)}
    done = subprocess.run([*IRLENS, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def frame_codecs(db_url: str) -> set[str]:
    database = Database(db_url)
    try:
        with database.session() as session:
            return set(session.scalars(select(Blob.codec).where(Blob.codec != CODEC_PACKED)))
    finally:
        database.dispose()


def texts(db_url: str) -> dict[str, bytes]:
    """Every text stored, by hash, read back through the store (packs themselves left out: how texts
    are grouped into packs may differ)."""
    database = Database(db_url)
    slices = aliased(Blob)
    try:
        with database.session() as session:
            alone = select(Blob.hash).where(Blob.codec != CODEC_PACKED, ~exists().where(slices.pack_id == Blob.id))
            hashes = session.scalars(alone.union(select(Blob.hash).where(Blob.codec == CODEC_PACKED))).all()
            reader = BlobReader()
            return {digest: reader.get(session, digest) for digest in hashes}
    finally:
        database.dispose()


def test_ingest_compacts_quickly_and_irlens_compact_finishes_as_it_would_have(tmp_path: Path):
    archive = str(corpus_archive("gfx942_mix"))
    (tmp_path / "default").mkdir()
    (tmp_path / "later").mkdir()
    default_db, later_db = fresh_db_url(tmp_path / "default"), fresh_db_url(tmp_path / "later")

    summary = json.loads(irlens("ingest", "--db", default_db, "--json", "--quiet", archive).stdout)
    compaction = summary["compaction"]
    compacted_bytes, fresh = stored_blobs(default_db)
    assert fresh == 0, "a frame as ingest compressed it is left"
    assert frame_codecs(default_db) == {CODEC_QUICK}  # all to be recompressed at the strong level later
    # the ingest wrote its packs compacted: what is left to compact after it is the log's texts stored alone
    assert compaction["level"] == 9 and compaction["written_frames"] > 0 and compaction["seconds"] > 0
    assert compaction["bytes_after"] <= compaction["bytes_before"] < 0.05 * compaction["written_bytes"]

    plain = json.loads(irlens("ingest", "--db", later_db, "--json", "--quiet", "--no-compact", archive).stdout)
    assert plain["compaction"] is None
    ingested_bytes, fresh = stored_blobs(later_db)
    assert fresh > 0, "--no-compact compacted"
    # written once at the quick level in 16 MB packs: about what the sorted merge of the ingest's packs
    # stored (round 11), well under the fast packs
    assert compacted_bytes < 0.85 * ingested_bytes
    # the strong round: merged from the ingest's fast packs, or the quick ones recompressed, the same
    # bytes within 0.5%
    irlens("compact", "--db", later_db)
    irlens("compact", "--db", default_db)
    later_bytes, fresh = stored_blobs(later_db)
    strong_bytes, _ = stored_blobs(default_db)
    assert fresh == 0 and frame_codecs(later_db) == frame_codecs(default_db) == {CODEC_STRONG}
    assert strong_bytes < compacted_bytes
    assert abs(later_bytes - strong_bytes) <= 0.005 * later_bytes, (strong_bytes, later_bytes)
    assert texts(default_db) == texts(later_db)


def test_the_human_output_says_what_compaction_did(tmp_path: Path):
    archive = str(corpus_archive("sm90_llvm"))
    for name in "abc":
        (tmp_path / name).mkdir()
    lines = irlens("ingest", "--db", fresh_db_url(tmp_path / "a"), "--quiet", archive).stdout.splitlines()
    assert lines[-1].startswith("run ")
    assert lines[-2].startswith("compacted ") and " bytes in " in lines[-2] and "zstd level 9" in lines[-2]
    lines = irlens("ingest", "--db", fresh_db_url(tmp_path / "b"), "--quiet", "--no-compact", archive).stdout
    assert "not compacted (--no-compact)" in lines
    done = irlens("ingest", "--db", fresh_db_url(tmp_path / "c"), "--quiet", "--json", archive, level=0)
    assert json.loads(done.stdout)["compaction"] is None
