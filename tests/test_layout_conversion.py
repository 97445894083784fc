"""What a convert_layout costs equals what Triton 3.9's own lowering did, on every committed pair."""

from __future__ import annotations

import gzip
import json
import tarfile
from collections import Counter
from pathlib import Path

from app.layouts.conversion import conversion
from app.layouts.cvt_costs import convert_costs, summary
from app.layouts.mapping import DTYPE_BITS
from tests.conftest import corpus_archive

FIXTURES = Path(__file__).parent / "fixtures" / "layouts" / "triton39_convert_layout.json.gz"


def fixtures():
    with gzip.open(FIXTURES, "rt") as f:
        return json.load(f)["fixtures"]


def bits(dtype: str) -> int:
    return 64 if dtype.startswith("!tt.ptr") else DTYPE_BITS[dtype]


def test_every_conversion_kind_is_tritons():
    seen = Counter()
    wrong = []
    for fx in fixtures():
        assert "error" not in fx
        triton = "shared" if fx["shared_access"] else "shuffles" if fx["shuffles"] else "no movement"
        ours = conversion(fx["src"], fx["dst"], fx["shape"], bits(fx["dtype"]))
        kind = "no movement" if ours["kind"] in ("none", "registers") else ours["kind"]
        seen[kind] += 1
        if kind != triton:
            wrong.append((fx["src"], fx["dst"], fx["shape"], fx["target"], triton, ours["kind"]))
        if ours["kind"] == "shared":
            assert fx["scratch_bytes"] <= ours["scratch_bytes_at_most"]
        else:
            assert ours["scratch_bytes"] == fx["scratch_bytes"] == 0
    assert not wrong, wrong[:5]
    assert seen["shared"] > 400 and seen["shuffles"] >= 10 and seen["no movement"] > 50


def test_identical_layouts_need_nothing_and_a_register_permutation_stays_in_registers():
    b = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    assert conversion(b, b, [64, 64], 16)["kind"] == "none"
    lin = ("#ttg.linear<{register = [[0, 2], [0, 1], [32, 0]], lane = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], "
           "warp = [[4, 0], [8, 0]], block = []}>")
    lin2 = ("#ttg.linear<{register = [[0, 1], [0, 2], [32, 0]], lane = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], "
            "warp = [[4, 0], [8, 0]], block = []}>")
    assert conversion(lin, lin2, [64, 32], 16)["kind"] == "registers"


def test_a_snapshot_lists_its_conversions_with_their_costs():
    archive = corpus_archive("sm90_mix")
    with tarfile.open(archive, "r:xz") as tar:
        member = next(m for m in tar if m.name.endswith("attention_fwd_kernel.ttgir"))
        text = tar.extractfile(member).read().decode()
    costs = convert_costs(text.splitlines())
    assert costs and all(text.splitlines()[c["line"] - 1].count("convert_layout") for c in costs)
    assert {c["kind"] for c in costs} <= {"none", "registers", "shuffles", "shared"}
    counts = summary(costs)
    assert sum(c["count"] for c in counts) == len(costs)


def test_layout_json_answers_the_conversion():
    import tempfile

    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings
    from tests.conftest import fresh_db_url

    fx = next(f for f in fixtures() if f["shuffles"])
    with tempfile.TemporaryDirectory() as tmp, TestClient(
            create_app(Settings(db_url=fresh_db_url(Path(tmp)), data_dir=Path(tmp), load_demo=False))) as client:
        r = client.get("/-/layout.json", params={"attr": fx["src"], "shape": "x".join(map(str, fx["shape"])),
                                                 "to": fx["dst"], "dtype": fx["dtype"], "target": fx["target"]})
        assert r.status_code == 200, r.text
        assert r.json()["conversion"]["kind"] == "shuffles"
        assert r.json()["conversion"]["scratch_bytes"] == 0
