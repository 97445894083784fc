"""irlens's shared-memory bank conflicts equal Triton 3.9's own ``bank_conflicts`` on every pair.

The fixture (tests/layout_cases/triton39_bank_conflicts.json.gz) was made by
tests/layout_cases/make_bank_conflicts.py under Triton 3.9.0 (see tests/layout_cases/README.md): the
(distributed, shared) pairs the compiler chose in the NVIDIA corpus and in kernels compiled for
cuda:80/90/100, every other pair of the same shape and element type, and a sweep over Gluon's layout
classes. A live test asks an installed Triton 3.9 again on a sample (skipped without it).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from app.layouts.smem_costs import pair_conflicts, primitive_bits, smem_accesses

CASES = Path(__file__).parent / "layout_cases"
FIXTURE = CASES / "triton39_bank_conflicts.json.gz"
T39 = Path(os.environ.get("IRLENS_TRITON39_PYTHON", "/work/venvs/t39/bin/python"))


def load() -> list[dict]:
    with gzip.open(FIXTURE, "rt") as f:
        return json.load(f)["fixtures"]


def ours(fx: dict) -> int | None:
    result = pair_conflicts(fx["dist"], fx["shared"], tuple(fx["shape"]), primitive_bits(fx["elem"]))
    return None if result is None else result["bank_conflicts"]


def test_fixture_covers_chosen_same_shape_and_sweep_pairs():
    fixtures = load()
    sources = Counter(fx["source"] for fx in fixtures)
    assert sources["chosen"] >= 20 and sources["same_shape"] >= 50 and sources["sweep"] >= 500
    answered = [fx for fx in fixtures if "bank_conflicts" in fx]
    # the sweep is there to find conflicts: most chosen pairs have none
    assert sum(1 for fx in answered if fx["bank_conflicts"] > 0) >= 100
    assert {fx["elem"] for fx in answered} >= {"f16", "bf16", "f32", "i8", "f64"}
    kinds = {fx["shared"].split("<")[0] for fx in answered}
    assert kinds >= {"#ttg.swizzled_shared", "#ttg.nvmma_shared", "#ttg.shared_linear"}


def test_every_pair_triton_answers_equals_ours():
    wrong = []
    answered = 0
    for fx in load():
        if "bank_conflicts" not in fx:
            continue
        answered += 1
        got = ours(fx)
        if got != fx["bank_conflicts"]:
            wrong.append((fx["source"], fx["dist"], fx["shared"], fx["shape"], fx["elem"], got, fx["bank_conflicts"]))
    assert answered >= 1000
    assert not wrong, f"{len(wrong)} of {answered} differ, e.g. {wrong[:3]}"


def test_pairs_triton_cannot_count():
    """Triton 3.9 aborts on every padded_shared pair (its bank_conflicts has no padding rule): irlens
    gives no number for them either, rather than one that ignores the padding. It also aborts on a
    tensor smaller than one vectorised wavefront's reach (its reshape gets a segment of size 0): such
    an access has no second word in any bank, and irlens says 0."""
    refused = [fx for fx in load() if "error" in fx]
    padded = [fx for fx in refused if "padded_shared" in fx["shared"]]
    tiny = [fx for fx in refused if fx not in padded]
    assert len(padded) >= 50 and [fx for fx in padded if ours(fx) is not None] == []
    for fx in tiny:
        result = pair_conflicts(fx["dist"], fx["shared"], tuple(fx["shape"]), primitive_bits(fx["elem"]))
        elements = 1
        for n in fx["shape"]:
            elements *= n
        assert elements * result["element_bits"] < 32 * 32 * result["vector"], fx
        assert result["bank_conflicts"] == 0


def test_transposed_read_of_a_row_major_tile_conflicts():
    # 32 lanes down the rows of a 64-wide f32 row-major tile, each holding 4 consecutive elements of
    # its row (128-bit accesses: 8 lanes per wavefront): the 8 rows hit the same 4 banks, 7 extra
    # passes; a swizzle that moves each row to other banks removes them.
    dist = "#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [0, 1]}>"
    plain = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>"
    swizzled = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 32, order = [1, 0]}>"
    plain_result = pair_conflicts(dist, plain, (128, 64), 32)
    assert (plain_result["bank_conflicts"], plain_result["vector"], plain_result["lanes_per_wavefront"]) == (7, 4, 8)
    assert pair_conflicts(dist, swizzled, (128, 64), 32)["bank_conflicts"] == 0


def test_accesses_of_a_real_capture_have_their_lines_and_notes():
    text = CASES / "smem_ops_sm90.ttgir"
    lines = text.read_text().splitlines()
    found = smem_accesses(lines)
    assert {a["op"] for a in found} >= {"local_load", "async_copy_global_to_local", "local_alloc"}
    for a in found:
        assert lines[a["line"] - 1].find("ttg." + a["op"]) >= 0
        assert a["bank_conflicts"] is not None and a["note"].startswith("▦")
    amd = smem_accesses([line.replace('"cuda:90"', '"hip:gfx942"') for line in lines])
    assert amd and all(a["bank_conflicts"] is None and "AMD" in a["unsupported"] for a in amd)


@pytest.mark.skipif(not T39.exists(), reason="no Triton 3.9 venv (set IRLENS_TRITON39_PYTHON)")
def test_live_triton39_agrees_on_a_sample():
    """Ask the installed Triton 3.9 again (the generator's worker), on every 40th answered pair."""
    sample = [fx for fx in load() if "bank_conflicts" in fx][::40]
    script = CASES / "make_bank_conflicts.py"
    items = "".join(json.dumps(dict(fx, triton_dist=fx["dist"], triton_shared=fx["shared"])) + "\n" for fx in sample)
    probe = subprocess.run([str(T39), "-c", "import triton"], check=False, capture_output=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip("the Triton 3.9 venv cannot import triton")
    out = subprocess.run([str(T39), str(script), "--worker"], check=False, input=items, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": ""})
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(answers) == len(sample), out.stderr[-2000:]
    for fx, answer in zip(sample, answers):
        assert answer.get("bank_conflicts") == fx["bank_conflicts"] == ours(fx), (fx, answer)


if __name__ == "__main__":  # pragma: no cover -- a quick tally while developing
    wrong = [fx for fx in load() if "bank_conflicts" in fx and ours(fx) != fx["bank_conflicts"]]
    print(len(wrong), file=sys.stderr)


# -- the layout inspector: /-/layout.json?attr=DISTRIBUTED&shape=MxN&elem=f16&to=SHARED ----------------

@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app
    from tests.conftest import fresh_db_url

    tmp = tmp_path_factory.mktemp("bank-conflicts")
    app = create_app(Settings(db_url=fresh_db_url(tmp), data_dir=tmp, load_demo=False))
    with TestClient(app) as c:
        yield c


def test_layout_json_gives_tritons_bank_conflicts(client):
    from app.urls import Urls
    urls = Urls("")
    sample = [fx for fx in load() if "bank_conflicts" in fx][::97]
    assert len(sample) >= 40 and any(fx["bank_conflicts"] for fx in sample)
    for fx in sample:
        url = urls.layout(fx["dist"], fx["shape"], elem=fx["elem"], to=fx["shared"]).replace("/-/layout?", "/-/layout.json?")
        r = client.get(url)
        assert r.status_code == 200, r.text
        assert r.json()["bank_conflicts"] == fx["bank_conflicts"], fx
        # the other way round (the shared layout drawn, the distributed one as `to`) answers the same
        back = urls.layout(fx["shared"], fx["shape"], elem=fx["elem"], to=fx["dist"]).replace("/-/layout?", "/-/layout.json?")
        assert client.get(back).json()["bank_conflicts"] == fx["bank_conflicts"]


def test_inspector_draws_the_wavefronts(client):
    from app.urls import Urls
    fx = next(f for f in load() if f.get("bank_conflicts") == 7 and f["elem"] == "f16")
    r = client.get(Urls("").layout(fx["dist"], fx["shape"], elem=fx["elem"], to=fx["shared"]))
    assert r.status_code == 200
    assert "7 bank conflicts" in r.text and 'class="bank-grid"' in r.text and "bank-extra" in r.text


def test_inspector_says_what_it_cannot_count(client):
    from app.urls import Urls
    dist = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    shared = "#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"
    amd = client.get(Urls("").layout(dist, [64, 64], elem="f16", to=shared, target="hip:gfx942")
                     .replace("/-/layout?", "/-/layout.json?")).json()
    assert amd["bank_conflicts"] is None and "AMD" in amd["shared_access"]["unsupported"]
    padded = "#ttg.padded_shared<[64:+4] {order = [1, 0], shape = [64, 64]}>"
    r = client.get(Urls("").layout(dist, [64, 64], elem="f16", to=padded).replace("/-/layout?", "/-/layout.json?"))
    assert r.status_code == 400 and "padded_shared" in r.json()["detail"]
    r = client.get(Urls("").layout(dist, [64, 64], to=shared).replace("/-/layout?", "/-/layout.json?"))
    assert r.status_code == 400 and "element type" in r.json()["detail"]


# -- at the op: a real capture (bank_demo.py compiled by Triton 3.9 with MLIR_ENABLE_DUMP=1) ---------------

DEMO_LOG = CASES / "staged_transpose_sm90_triton39.log.xz"


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory):
    import lzma
    import shutil

    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.store.db import Database
    from app.web.app import create_app
    from tests.conftest import fresh_db_url, ingest_paths

    tmp = tmp_path_factory.mktemp("bank-demo")
    folder = tmp / "capture"
    folder.mkdir()
    with lzma.open(DEMO_LOG, "rb") as f:
        (folder / "dump.log").write_bytes(f.read())
    shutil.copy(CASES / "bank_demo.py", folder / "bank_demo.py")
    url = fresh_db_url(tmp)
    database = Database(url)
    try:
        run = ingest_paths(database, [folder])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp))) as c:
        yield c, run


def test_every_shared_access_of_a_snapshot_carries_tritons_count(demo_site):
    client, run = demo_site
    (compilation,) = run["compilations"]
    detail = client.get(compilation["url"] + ".json").json()
    answers = {(fx["dist"], fx["shared"], tuple(fx["shape"]), fx["elem"]): fx["bank_conflicts"]
               for fx in load() if "bank_conflicts" in fx}
    ttgir = [s for s in detail["snapshots"] if s["bank_conflicts"]]
    assert ttgir and all(s["bank_conflicts"] == {"accesses": 4, "with_conflicts": 1, "unsupported": 0} for s in ttgir)
    chart = next(c for c in detail["charts"]["series"] if c["key"] == "bank_conflicts")
    assert chart["values"] == [s["bank_conflicts"].get("with_conflicts", 0) for s in detail["snapshots"]]
    snapshot = client.get(ttgir[-1]["url"] + ".json").json()
    lines = snapshot["text"].splitlines()
    checked = 0
    for access in snapshot["shared_accesses"]:
        assert "ttg." + access["op"] in lines[access["line"] - 1]
        key = (access["dist"], access["shared"], tuple(access["shape"]), access["dtype"])
        if key in answers:  # the generator compiled this kernel too: Triton's own answer
            assert access["bank_conflicts"] == answers[key]
            checked += 1
    assert checked == len(snapshot["shared_accesses"]) == 4
    assert sorted(a["bank_conflicts"] for a in snapshot["shared_accesses"]) == [0, 0, 0, 7]
    page = client.get(ttgir[-1]["url"]).text
    conflicted = next(a for a in snapshot["shared_accesses"] if a["bank_conflicts"])
    assert f'data-bank-line="{conflicted["line"]}"' in page and 'data-bank-n="7"' in page
    assert "1 of 4 with bank conflicts" in page
