"""Op history: from ops of every corpus compilation, the op is found again in the snapshot it was
picked from, its first appearance is marked, and the .json twin and HTML page agree."""

from __future__ import annotations

import itertools

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.insight.op_history import history, op_lines, target_from_line, target_from_value
from app.settings import Settings
from app.store.blobs import BlobReader
from app.store.models import Compilation
from app.web.app import create_app

PICKS_PER_SNAPSHOT = 4


def _follower(session, reader, ops_by_blob: dict, by_index: dict):
    """ops_of for history(): a snapshot's op lines, None for LLVM IR."""

    def ops_of(row):
        snapshot = by_index[row["index"]]
        if snapshot.kind != "mlir":
            return None
        if snapshot.blob not in ops_by_blob:
            ops_by_blob[snapshot.blob] = op_lines(reader.text(session, snapshot.blob) or "", "mlir")
        return ops_by_blob[snapshot.blob]

    return ops_of


def test_history_follows_ops_of_every_corpus_compilation(session_db, corpus_runs):
    reader = BlobReader()
    followed = 0
    ops_by_blob: dict = {}  # shared: identical snapshots of different compilations are scanned once
    with session_db.session() as session:
        for compilation in session.scalars(select(Compilation)):
            snapshots = [s for s in compilation.snapshots]
            mlir = [s for s in snapshots if s.kind == "mlir"]
            if not mlir:
                continue

            ops_of = _follower(session, reader, ops_by_blob, {s.index: s for s in snapshots})
            rows = [{"index": s.index, "pass": s.pass_name, "url": f"/s/{s.index}"} for s in snapshots]
            for picked_snapshot in (mlir[0], mlir[len(mlir) // 2]):
                ops = [item for item in ops_of({"index": picked_snapshot.index}) if item.loc]
                for item in ops[:: max(1, len(ops) // PICKS_PER_SNAPSHOT)][:PICKS_PER_SNAPSHOT]:
                    target = target_from_line(ops_of({"index": picked_snapshot.index}), item.line)
                    timeline = history(target, rows, ops_of)
                    assert len(timeline) == len(snapshots)
                    entry = timeline[picked_snapshot.index]
                    assert item.line in [op["line"] for op in entry["ops"]] or entry["count"] > len(entry["ops"])
                    first = next(e for e in timeline if e["count"])
                    assert first["event"] == "appears" and first["index"] <= picked_snapshot.index
                    for before, after in itertools.pairwise(timeline):
                        if after["event"] == "removed":
                            assert before["count"] or before.get("untracked") and not after["count"]
                    followed += 1
                    if item.results:
                        by_value = target_from_value(ops_of({"index": picked_snapshot.index}),
                                                     item.results.split(",")[0].split(":")[0])
                        value = item.results.split(",")[0].split(":")[0]
                        # SSA names are per function: the first op defining it in the module
                        assert by_value is not None and value in by_value.picked.results
    assert followed > 100


def test_history_page_and_json_twin(session_db, corpus_runs, tmp_path):
    settings = Settings(db_url=session_db.url, data_dir=tmp_path, load_demo=False)
    run = corpus_runs["sm90_mix"]
    compilation = next(c for c in run["compilations"] if c["kernel"] == "matmul_descriptor_kernel")
    with TestClient(create_app(settings)) as client:
        detail = client.get(compilation["url"] + ".json").json()
        index = next(s["index"] for s in detail["snapshots"] if s["pass"] == "TritonGPUAccelerateMatmul")
        text = client.get(f"{compilation['url']}/s/{index}/raw").text
        line = next(n for n, code in enumerate(text.split("\n"), start=1) if " = tt.dot " in code)
        data = client.get(f"{compilation['url']}/history.json", params={"s": index, "line": line}).json()
        assert data["picked"]["op"] == "tt.dot" and data["picked"]["loc"] and data["problem"] is None
        events = {e["event"] for e in data["timeline"] if e["event"]}
        assert "appears" in events
        rewrite = next(e for e in data["timeline"] if "tt.dot" in e["removed"])
        assert any(op.startswith("ttng.warp_group_dot") for op in rewrite["added"])  # wgmma on sm90
        assert rewrite["by"] == "TritonGPUAccelerateMatmul"
        page = client.get(f"{compilation['url']}/history", params={"s": index, "line": line}).text
        assert 'id="history"' in page and "TritonGPUAccelerateMatmul" in page
        python = client.get(data["picked"]["python_url"] + "&x=1").status_code
        assert python == 200
        empty = client.get(f"{compilation['url']}/history", params={"s": index, "line": 1}).text
        assert "holds no op" in empty or "no location" in empty
        assert "Pick an op" in client.get(f"{compilation['url']}/history").text
        assert client.get(f"{compilation['url']}/history", params={"s": 9999, "line": 1}).status_code == 404
