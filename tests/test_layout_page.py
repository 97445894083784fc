"""/-/layout and /-/layout.json: the inspector answers Triton's mapping, refuses what Triton refuses."""

from __future__ import annotations

import base64
import gzip
import html
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.urls import Urls
from app.web.app import create_app
from tests.conftest import FIXTURES, fresh_db_url

BLOCKED = "#ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [4, 8], warpsPerCTA = [2, 2], order = [1, 0]}>"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layout-page")
    app = create_app(Settings(db_url=fresh_db_url(tmp), data_dir=tmp, load_demo=False))
    with TestClient(app) as c:
        yield c


def fixtures():
    with gzip.open(FIXTURES / "layouts" / "triton39_layouts.json.gz", "rt") as f:
        return json.load(f)["fixtures"]


def test_json_owners_are_tritons(client):
    """Every distributed fixture with Triton's printout: the endpoint's owners are that printout."""
    import re
    checked = 0
    for fx in fixtures():
        if "tensor_view" not in fx or checked >= 60:
            continue
        r = client.get(Urls().layout(fx["attr"], fx["shape"]).replace("/-/layout", "/-/layout.json"))
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["kind"] == "distributed" and body["shape"] == fx["shape"]
        cells = [c for c in re.split(r"[\[\],]", fx["tensor_view"]) if c.strip()]
        want = [sorted([int(t), int(g)] for t, g in re.findall(r"T(\d+):(\d+)", c)) for c in cells]
        assert [sorted(o) for o in body["owners"]] == want
        checked += 1
    assert checked == 60


def test_shared_offsets_follow_the_swizzle(client):
    attr = "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>"
    body = client.get("/-/layout.json", params={"attr": attr, "shape": "8x64"}).json()
    assert body["kind"] == "shared"
    offsets = body["offsets"]
    assert sorted(offsets) == list(range(512))
    # Row 1 of a 128-byte swizzle: its first 16-byte chunk sits in the second chunk of the row.
    assert offsets[64:72] == list(range(72, 80)) and body["banks"][64] == 4


def test_padded_offsets_skip_the_padding(client):
    attr = "#ttg.padded_shared<[2:+1, 4:+2] {order = [0], shape = [8]}>"
    body = client.get("/-/layout.json", params={"attr": attr, "shape": "8"}).json()
    assert body["offsets"] == [0, 1, 3, 4, 8, 9, 11, 12]  # the example in Triton's PaddedSharedLayout docs


@pytest.mark.parametrize("shape,reason", [("48x64", "not a power of two"), ("64", "rank"),
                                          ("64xq", "not like 64x128")])
def test_undrawable_shape_is_400_with_reason(client, shape, reason):
    r = client.get("/-/layout.json", params={"attr": BLOCKED, "shape": shape})
    assert r.status_code == 400
    assert reason in r.json()["error"]


def test_triton_refusals_are_refused(client):
    refused = [fx for fx in fixtures() if "error" in fx and "padded" not in fx]
    assert refused
    for fx in refused:
        r = client.get("/-/layout.json", params={"attr": fx["attr"], "shape": "x".join(map(str, fx["shape"]))})
        assert r.status_code == 400, (fx["attr"], fx["shape"])


def _page_data(page: str) -> dict:
    start = page.index('<script type="application/json" id="layout-data">') + len('<script type="application/json" id="layout-data">')
    return json.loads(page[start:page.index("</script>", start)])


def _owners_from_tables(data: dict) -> list[list[list[int]]]:
    """What static/layout.js reads from the page's tables: each element's [thread, register] owners,
    in the order the JSON lists them (block, warp, lane, register)."""
    t = data["tables"]
    owners: list[list[list[int]]] = [[] for _ in range(data["rows"] * data["cols"])]
    for bv in t["block"]:
        for w, wv in enumerate(t["warp"]):
            for lane, lv in enumerate(t["lane"]):
                for r, rv in enumerate(t["register"]):
                    i = (bv ^ wv ^ lv ^ rv) - data["base"]
                    if 0 <= i < len(owners):
                        owners[i].append([w * data["tpw"] + lane, r])
    return owners


def test_page_sends_the_whole_mapping_as_compact_data(client):
    """A 128x256 layout is drawn whole (no windows), from a few KB of tables that give every element
    the owners the JSON twin lists (which tests/test_layouts_triton.py checks against Triton)."""
    params = {"attr": BLOCKED, "shape": "128x256"}
    r = client.get("/-/layout", params=params, headers={"accept": "text/html"})
    assert r.status_code == 200 and len(r.content) < 20_000
    page = r.text
    data = _page_data(page)
    assert (data["rows"], data["cols"], data["base"]) == (128, 256, 0)
    assert _owners_from_tables(data) == client.get("/-/layout.json", params=params).json()["owners"]
    assert "warp 3" in page and len(data["palette"]) == 4
    assert html.escape(BLOCKED, quote=False) in page


def test_page_shows_broadcast_and_shared_banks(client):
    r = client.get("/-/layout", params={"attr": BLOCKED, "shape": "4x4"}, headers={"accept": "text/html"})
    assert "held by 16 threads" in r.text  # 128 threads, 16 elements, 2 registers each
    attr = "#ttg.swizzled_shared<{vec = 2, perPhase = 1, maxPhase = 4, order = [1, 0]}>"
    r = client.get("/-/layout", params={"attr": attr, "shape": "4x8"}, headers={"accept": "text/html"})
    data = _page_data(r.text)
    assert data["offsets"]["type"] == "u8" and data["banks"]["type"] == "u8"
    offsets, banks = (list(base64.b64decode(data[key]["data"])) for key in ("offsets", "banks"))
    body = client.get("/-/layout.json", params={"attr": attr, "shape": "4x8"}).json()
    assert offsets == body["offsets"] and banks == body["banks"]


def test_the_element_type_is_shown_and_sizes_the_banks(client):
    """A link from a pointer tensor passes its element type as the IR writes it; banks are 8 bytes wide."""
    attr = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>"
    r = client.get("/-/layout", params={"attr": attr, "shape": "4x8", "elem": "!tt.ptr<f16>"},
                   headers={"accept": "text/html"})
    assert "!tt.ptr&lt;f16&gt;" in r.text and "(i64 wide)" in r.text
    banks = list(base64.b64decode(_page_data(r.text)["banks"]["data"]))
    assert banks[:3] == [0, 2, 4]  # 8-byte elements: two 4-byte banks each


def test_a_drawn_page_comes_from_the_page_cache(client, monkeypatch):
    from app.web.views import layout as view

    params = {"attr": BLOCKED, "shape": "64x64", "elem": "f16"}
    first = client.get("/-/layout", params=params, headers={"accept": "text/html"})
    monkeypatch.setattr(view, "describe", lambda *a, **k: pytest.fail("drawn again"))
    again = client.get("/-/layout", params=params, headers={"accept": "text/html"})
    assert again.status_code == 200 and again.content == first.content


def test_page_reports_refusal_as_400(client):
    r = client.get("/-/layout", params={"attr": "#ttg.blocked<{oops}>", "shape": "4x4"},
                   headers={"accept": "text/html"})
    assert r.status_code == 400 and "not drawable" in r.text


def test_json_requires_attr_and_shape(client):
    assert client.get("/-/layout.json").status_code == 400
    assert client.get("/-/layout", headers={"accept": "text/html"}).status_code == 200


def test_fixture_note_exists():
    assert Path(FIXTURES / "layouts" / "triton39_layouts.json.gz.note").read_text().startswith("triton39")


def test_a_linear_layout_that_xors_coordinates_is_refused_as_triton_does(client):
    """Triton 3.9 refuses this #ttg.linear when parsing it ("LinearEncodingAttr requires a permutation
    matrix layout after removing broadcast bases": checked with triton._C.libtriton.ir.parse_mlir_module);
    the same layout with register basis [0, 1] in place of [1, 1] is accepted, and drawn here."""
    lanes = "lane = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warp = [[4, 0], [8, 0]], block = []}>"
    xor = "#ttg.linear<{register = [[1, 1], [0, 2], [0, 4], [16, 0], [32, 0]], " + lanes
    r = client.get("/-/layout.json", params={"attr": xor, "shape": "64x64"})
    assert r.status_code == 400 and "permutation matrix" in r.json()["error"]
    ok = xor.replace("[[1, 1], [0, 2]", "[[0, 1], [0, 2]")
    assert client.get("/-/layout.json", params={"attr": ok, "shape": "64x64"}).status_code == 200


@pytest.mark.parametrize("version,instr,ok", [
    (1, [16, 16, 16], True), (1, [16, 16, 32], False), (2, [16, 16, 32], True), (2, [16, 16, 4], False),
    (3, [16, 16, 4], True), (3, [16, 16, 128], True), (3, [16, 16, 16], False), (3, [32, 32, 16], False),
    (2, [16, 32, 16], False)])
def test_wmma_instruction_shapes_are_tritons(client, version, instr, ok):
    """Which wmma instrShapes Triton 3.9 admits, asked of it with
    gluon_ir.GluonOpBuilder.get_amd_wmma_layout + to_linear_layout (the rest fail its verifier with
    "invalid WMMA vN instruction shape"): every result tile is 16x16, K varies by version."""
    attr = (f"#ttg.amd_wmma<{{version = {version}, ctaLayout = {{warp = [[1, 0]]}}, isTranspose = false, "
            f"instrShape = {instr}}}>")
    r = client.get("/-/layout.json", params={"attr": attr, "shape": "64x64"})
    assert (r.status_code == 200) == ok, r.text
    if not ok:
        assert f"invalid WMMA v{version} instruction shape" in r.json()["error"]


def test_blackwell_and_rotating_kinds_are_drawn(client):
    """Tensor memory over two CTAs, fp4-padded nvmma_shared and amd_rotating_shared answer (their
    mappings are checked against Triton in test_layouts_triton.py) and the page draws them."""
    tmem = ("#ttng.tensor_memory_encoding<blockM = 64, blockN = 128, colStride = 1, CGALayout = [[1, 0]], "
            "twoCTAs = true>")
    body = client.get("/-/layout.json", params={"attr": tmem, "shape": "128x128"}).json()
    assert body["kind"] == "tensor_memory" and body["blocks"] == 2
    assert body["cells"][64 * 128] == [[0, 0, 1]] and body["cells"][64] == [[64, 0, 0]]
    data = _page_data(client.get("/-/layout", params={"attr": tmem, "shape": "128x128"}).text)
    t = data["tables"]  # what static/layout.js reads: each element's [lane, column, CTA] cells
    cells: list[list[list[int]]] = [[] for _ in range(128 * 128)]
    for b, bv in enumerate(t["block"]):
        for r, rv in enumerate(t["row"]):
            for c, cv in enumerate(t["col"]):
                cells[bv ^ rv ^ cv].append([r, c, b])
    assert cells == body["cells"]
    fp4 = "#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 8, fp4Padded = true}>"
    body = client.get("/-/layout.json", params={"attr": fp4, "shape": "8x64", "dtype": "i8"}).json()
    # each 16-byte group holds 8 bytes: the padding bytes are skipped
    assert body["offsets"][:9] == [0, 1, 2, 3, 4, 5, 6, 7, 16]
    rot = "#ttg.amd_rotating_shared<{vec = 4, perPhase = 1, maxPhase = 4, order = [1, 0]}>"
    body = client.get("/-/layout.json", params={"attr": rot, "shape": "64x64"}).json()
    assert body["kind"] == "shared" and sorted(body["offsets"]) == list(range(64 * 64))
    # rows 4-7 rotate their phase: row 4 starts where a plain swizzle's row 1 would
    assert body["offsets"][4 * 64 + 4] == 4 * 64
    old = "#ttng.tensor_memory_encoding<blockM = 128, blockN = 128, colStride = 1, CTASplitM = 2>"
    r = client.get("/-/layout.json", params={"attr": old, "shape": "256x128"})
    assert r.status_code == 400 and "CTASplitM" in r.json()["detail"]
