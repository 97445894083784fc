"""What a convert_layout costs equals what Triton 3.9's own lowering did, on every committed pair."""

from __future__ import annotations

import gzip
import json
import tarfile
from collections import Counter
from pathlib import Path

from app.layouts.conversion import conversion
from app.layouts.convert import to_linear_layout
from app.layouts.cvt_costs import convert_costs, summary
from tests.conftest import corpus_archive

FIXTURES = Path(__file__).parent / "fixtures" / "layouts" / "triton39_convert_layout.json.gz"


def fixtures():
    with gzip.open(FIXTURES, "rt") as f:
        return json.load(f)["fixtures"]


def test_every_conversion_kind_is_tritons():
    seen = Counter()
    wrong = []
    for fx in fixtures():
        assert "error" not in fx
        triton = "shared" if fx["shared_access"] else "shuffles" if fx["shuffles"] else "no movement"
        ours = conversion(fx["src"], fx["dst"], fx["shape"], fx["dtype"], fx["target"])
        kind = "no movement" if ours["kind"] in ("none", "registers") else ours["kind"]
        seen[kind] += 1
        seen[fx["target"]] += 1
        seen["gfx950 permlane swaps"] += bool(fx.get("permlane_swap")) and kind == "shuffles"
        if kind != triton:
            wrong.append((fx["src"], fx["dst"], fx["shape"], fx["target"], triton, ours["kind"]))
        if ours["kind"] == "shared":
            assert fx["scratch_bytes"] <= ours["scratch_bytes_at_most"]
            assert ours["scratch_bytes"] == fx["scratch_bytes"], fx  # every pair sized, exactly Triton's
            seen["multi-CTA scratch"] += fx.get("num_ctas", 1) > 1
            seen["across CTAs"] += "block" in ours["crosses"]
            seen[fx["target"].split(":")[0] + " scratch"] += 1
            broadcast = any(not any(v) for ll in (fx["src"], fx["dst"]) for v in _lanes_and_warps(ll, fx["shape"]))
            seen["broadcast scratch"] += broadcast
        else:
            assert ours["scratch_bytes"] == fx["scratch_bytes"] == 0
    assert not wrong, wrong[:5]
    assert seen["shared"] > 400 and seen["shuffles"] >= 10 and seen["no movement"] > 50
    assert seen["hip scratch"] > 90 and seen["cuda scratch"] > 400 and seen["broadcast scratch"] >= 100
    assert seen["multi-CTA scratch"] >= 190 and seen["across CTAs"] >= 100
    # gfx950 swaps register and lane bits 4/5 with v_permlane16/32_swap: still shuffles, no scratch
    assert seen["hip:gfx950"] >= 100 and seen["gfx950 permlane swaps"] >= 10


def _lanes_and_warps(attr: str, shape: list[int]):
    ll = to_linear_layout(attr, shape)
    return ll.in_bases("lane") + ll.in_bases("warp")


def test_identical_layouts_need_nothing_and_a_register_permutation_stays_in_registers():
    b = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    assert conversion(b, b, [64, 64], "f16")["kind"] == "none"
    lin = ("#ttg.linear<{register = [[0, 2], [0, 1], [32, 0]], lane = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], "
           "warp = [[4, 0], [8, 0]], block = []}>")
    lin2 = ("#ttg.linear<{register = [[0, 1], [0, 2], [32, 0]], lane = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], "
            "warp = [[4, 0], [8, 0]], block = []}>")
    assert conversion(lin, lin2, [64, 32], "f16")["kind"] == "registers"


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
    # The module's ttg.target sizes scratch, and the sizes are Triton's (the corpus pairs are fixtures).
    triton = {(f["src"], f["dst"], tuple(f["shape"]), f["dtype"], f["target"]): f["scratch_bytes"] for f in fixtures()}
    shared = [c for c in costs if c["kind"] == "shared"]
    assert shared and all(c["target"] == "cuda:90" for c in costs)
    checked = [c for c in shared if (c["src"], c["dst"], tuple(c["shape"]), c["dtype"], c["target"]) in triton]
    assert checked
    for c in checked:
        assert c["scratch_bytes"] == triton[(c["src"], c["dst"], tuple(c["shape"]), c["dtype"], c["target"])]
    # With no ttg.target on the module, the compilation's target (passed in) stands in; with neither, unsized.
    bare = [line.replace('ttg.target = "cuda:90"', "") for line in text.splitlines()]
    assert [c["scratch_bytes"] for c in convert_costs(bare, "cuda:90")] == [c["scratch_bytes"] for c in costs]
    assert all(c["scratch_bytes"] is None for c in convert_costs(bare) if c["kind"] == "shared")


def test_layout_json_answers_the_conversion():
    import tempfile

    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app
    from tests.conftest import fresh_db_url

    fx = next(f for f in fixtures() if f["shuffles"])
    with tempfile.TemporaryDirectory() as tmp, TestClient(
            create_app(Settings(db_url=fresh_db_url(Path(tmp)), data_dir=Path(tmp), load_demo=False))) as client:
        r = client.get("/-/layout.json", params={"attr": fx["src"], "shape": "x".join(map(str, fx["shape"])),
                                                 "to": fx["dst"], "dtype": fx["dtype"], "target": fx["target"]})
        assert r.status_code == 200, r.text
        assert r.json()["conversion"]["kind"] == "shuffles"
        assert r.json()["conversion"]["scratch_bytes"] == 0


def test_compilation_and_snapshot_pages_count_conversions(tmp_path):
    """A real capture: the timeline counts each pass's conversions through shared memory, and the
    snapshot lists each convert_layout with its cost and a link that draws it."""
    from fastapi.testclient import TestClient

    from app.settings import Settings
    from app.web.app import create_app
    from tests.conftest import form_token, fresh_db_url

    archive = corpus_archive("sm90_mix")
    app = create_app(Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False))
    with TestClient(app) as client:
        r = client.post("/runs", files=[("file", (archive.name, archive.read_bytes(), "application/octet-stream"))],
                        data={"csrf_token": form_token(client)}, headers={"accept": "application/json"})
        assert r.status_code == 201, r.text
        compilation = next(c for c in r.json()["compilations"] if c["kernel"] == "attention_fwd_kernel")
        detail = client.get(compilation["url"] + ".json").json()
        with_shared = [s for s in detail["snapshots"] if s["conversions"].get("shared")]
        assert with_shared, "no pass of the attention kernel converts through shared memory"
        page = client.get(compilation["url"], headers={"accept": "text/html"}).text
        n = with_shared[0]["conversions"]["shared"]
        assert f"{n} conversion{'s' if n != 1 else ''} through shared memory" in page
        snap = client.get(with_shared[0]["url"] + ".json").json()
        assert sum(1 for c in snap["conversions"] if c["kind"] == "shared") == n
        html_page = client.get(with_shared[0]["url"], headers={"accept": "text/html"}).text
        assert 'data-cvt-kind="shared"' in html_page and "/-/layout?attr=" in html_page and "&amp;to=" in html_page


def test_a_conversion_split_over_ctas():
    """Triton's scratch for a tensor split over CTAs is the whole tensor's tile divided by the source's
    split; across CTAs the destination reads without ldmatrix (the multi-CTA fixtures check both).
    AMD cannot lower a conversion across CTAs: no size there, only the bound."""
    one = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
    other = "#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 4], order = [0, 1]}>"
    alike = ", CGALayout = [[1, 0]]}>"
    halves = conversion(one.replace("}>", alike), other.replace("}>", alike), [64, 64], "f16", "cuda:90")
    assert halves["scratch_bytes"] == 2048  # Triton 3.9 compiled with num_ctas=2: 2048 (a committed fixture)
    across = (one.replace("}>", alike), other.replace("}>", ", CGALayout = [[0, 1]]}>"), [64, 64], "f16")
    assert conversion(*across, "cuda:90")["scratch_bytes"] == 4096  # likewise compiled
    cost = conversion(*across, "hip:gfx1250")
    assert cost["kind"] == "shared" and cost["scratch_bytes"] is None and cost["scratch_bytes_at_most"] == 8192


def test_per_pass_counts_match_the_full_costs():
    """counts_by_kind (the compilation page's per-pass counts) skips sizing the scratch but must
    count the same kinds as the conversion list, on every TTGIR of two corpus captures."""
    from app.layouts.cvt_costs import counts_by_kind

    checked = 0
    for name in ("sm90_mix", "gfx942_mix"):
        with tarfile.open(corpus_archive(name), "r:xz") as tar:
            for member in tar:
                if not member.name.endswith(".ttgir"):
                    continue
                text = tar.extractfile(member).read().decode()
                expected = {item["kind"]: item["count"] for item in summary(convert_costs(text.splitlines()))}
                assert counts_by_kind(f"test:{name}:{member.name}", lambda text=text: text) == expected
                checked += bool(expected)
    assert checked
