"""Profiles (issue 27): the real Proton and Nsight Compute captures of tests/fixtures/gpu_runs ingest,
and the metrics the pages show add up to the totals read straight from the files, here, with a few
lines of JSON and CSV walking of their own."""

from __future__ import annotations

import csv
import io
import json
import tarfile

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from parsers.profiles import ncu, proton
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

GPU = FIXTURES / "gpu_runs"


def _member(archive: str, name: str) -> bytes:
    with tarfile.open(GPU / archive) as tar:
        return tar.extractfile(name).read()


def _hatchet_totals(data: bytes, metric: str) -> dict[str, float]:
    """Kernel frame name -> the metric summed over its subtree, every scope together."""
    tree = json.loads(data)[0]
    totals: dict[str, float] = {}

    def subtree(node) -> float:
        return node.get("metrics", {}).get(metric, 0) + sum(subtree(child) for child in node.get("children", []))

    for scope in tree["children"]:
        for kernel in scope["children"]:
            totals[kernel["frame"]["name"]] = totals.get(kernel["frame"]["name"], 0) + subtree(kernel)
    return totals


def _scope_totals(data: bytes, metric: str) -> dict[tuple[str, str], float]:
    """(scope, kernel frame name) -> the metric summed over its subtree: scopes kept apart."""
    tree = json.loads(data)[0]

    def subtree(node) -> float:
        return node.get("metrics", {}).get(metric, 0) + sum(subtree(child) for child in node.get("children", []))

    return {(scope["frame"]["name"], kernel["frame"]["name"]): subtree(kernel)
            for scope in tree["children"] for kernel in scope["children"]}


@pytest.mark.parametrize("mode", ["pcsampling", "pcsampling_ttgir", "timing"])
def test_proton_totals_match_the_tree(mode):
    data = _member("proton.tar.xz", f"proton/{mode}/profile.hatchet")
    profile = proton.parse_hatchet(data)
    metric = "time (ns)" if mode == "timing" else "num_samples"
    expected = _scope_totals(data, metric)
    got = {(",".join(kernel.scopes_seen), kernel.name): kernel.totals.get(metric, 0) for kernel in profile.kernels}
    assert got == expected  # one entry per scope: an autotuning scope is never added to a steady one
    if mode == "timing":
        assert len({name for _, name in got}) < len(got)  # matmul_kernel ran under two scopes
    for kernel in profile.kernels:  # lines + what no line holds = the total, for every metric
        for name, total in kernel.totals.items():
            lines = sum(metrics.get(name, 0) for metrics in kernel.lines.values())
            assert lines + kernel.unattributed.get(name, 0) == pytest.approx(total)


def test_ncu_source_csv_totals_and_lines():
    data = _member("ncu.tar.xz", "ncu/source_sass.csv")
    expected = []
    for row in csv.reader(io.StringIO(data.decode())):
        if row[:1] == ["Kernel Name"]:
            expected.append([row[1], 0])
        elif row and row[0].startswith("0x"):
            expected[-1][1] += int(row[2])  # "Warp Stall Sampling (All Samples)"
    parsed = ncu.parse_source_csv(data)
    assert [[k.name, k.totals["Warp Stall Sampling (All Samples)"]] for k in parsed.kernels] == expected
    by_line = ncu.parse_source_csv(_member("ncu.tar.xz", "ncu/source_cuda_sass.csv"))
    for kernel, (_name, total) in zip(by_line.kernels, expected, strict=True):
        assert sum(m.get("Warp Stall Sampling (All Samples)", 0) for m in kernel.lines.values()) == total


@pytest.fixture(scope="module")
def proton_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profiles")
    url = fresh_db_url(tmp)
    from app.store.db import Database

    database = Database(url)
    broken = tmp / "joined.hatchet"  # two profiles pasted together: not one JSON document
    broken.write_bytes(b'[{"frame": {"name": "ROOT"}}]\n[{"frame": {"name": "ROOT"}}]')
    run = ingest_paths(database, [GPU / "proton.tar.xz", broken])
    database.dispose()
    client = TestClient(create_app(Settings(db_url=url, load_demo=False), background=False))
    return client, run


def test_unreadable_profile_is_named_and_the_rest_ingests(proton_site):
    client, run = proton_site
    page = client.get(run["url"] + ".json").json()
    paths = [profile["path"] for profile in page["profiles"]]
    assert not any(path.endswith("joined.hatchet") for path in paths) and len(paths) == 5
    warnings = [p for p in page["warnings"] if (p.get("path") or "").endswith("joined.hatchet")]
    assert warnings and "not valid JSON" in warnings[0]["message"]


def test_hot_lines_conserve_the_profile_total(proton_site):
    client, run = proton_site
    data = _member("proton.tar.xz", "proton/pcsampling_ttgir/profile.hatchet")
    expected = _hatchet_totals(data, "num_samples")
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith("pcsampling_ttgir/profile.hatchet")]
    joined = [k for k in profile["kernels"] if k["candidates"]]
    assert {k["name"] for k in joined} == {n for n in expected if n.startswith(("matmul", "attn"))}
    seen = 0
    for kernel in joined:
        parts = 0
        for url in kernel["candidates"]:
            hot = client.get(url + ".json?metric=num_samples").json()["hot_lines"]
            assert hot["kernel_total"] == expected[kernel["name"]]
            lines = sum(row["value"] for row in hot["lines"]) + hot["other_lines"]["value"]
            # shares are of the compilation's own total: its lines and what no line holds
            assert lines + hot["unattributed"] == pytest.approx(hot["total"])
            assert hot["total"] + hot["other_compilations"] == pytest.approx(hot["kernel_total"])
            parts += lines + hot["unattributed"]
            seen += 1
        # the kernel frame holds no samples of its own, so the compilations of one kernel (split by
        # the cache hash of its TTGIR lines) share its samples out exactly
        assert parts == pytest.approx(expected[kernel["name"]])
    assert seen == 4  # attn_fwd_tma, matmul_tma_devdesc, matmul_kernel's two configs


def test_metrics_reach_every_pass_and_the_ttgir_file(proton_site):
    client, run = proton_site
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith("pcsampling_ttgir/profile.hatchet")]
    url = next(k for k in profile["kernels"] if k["name"] == "matmul_tma_devdesc")["compilation"]
    compilation = client.get(url + ".json").json()
    stages = set()
    for snapshot in compilation["snapshots"]:
        metrics = client.get(snapshot["url"] + ".json").json()["metrics"]
        if metrics["lines"]:
            stages.add(snapshot["stage"])
    assert {"ttir", "ttgir"} <= stages
    html = client.get(compilation["snapshots"][-1]["url"]).text
    assert 'id="ir-heat"' in html and "heat.js" in html


def test_compare_shows_where_the_faster_config_saves_samples(proton_site):
    """pcsampling_ttgir launched matmul_kernel config 0 (128x64, the faster in the autotuner's own
    timings) and config 2 (128x256, spills) under one name; their TTGIR lines' cache hashes tell
    them apart. The compare page shows both sides per Python line, from the hatchet file's lines."""
    client, run = proton_site
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith("pcsampling_ttgir/profile.hatchet")]
    urls = next(k for k in profile["kernels"] if k["name"].startswith("matmul_kernel"))["candidates"]
    shared = [client.get(url + ".json").json()["shared"] for url in urls]  # BLOCK_N via shared memory
    small, large = (urls if shared[0] < shared[1] else urls[::-1])
    spec = f"{small.split('/')[2]}-{small.rsplit('/', 1)[-1]}..{large.split('/')[2]}-{large.rsplit('/', 1)[-1]}"
    hot = client.get(f"/compare/{spec}.json?metric=num_samples").json()["hot_lines"]
    data = json.loads(_member("proton.tar.xz", "proton/pcsampling_ttgir/profile.hatchet"))
    per_hash: dict[str, int] = {}
    for scope in data[0]["children"]:
        for kernel in scope["children"]:
            for line in kernel.get("children", []):
                folder = line["frame"]["name"].split("/")[-2]
                per_hash[folder] = per_hash.get(folder, 0) + line["metrics"].get("num_samples", 0)
    a_hash = client.get(small + ".json").json()["cache"].rstrip("/").rsplit("/", 1)[-1]
    b_hash = client.get(large + ".json").json()["cache"].rstrip("/").rsplit("/", 1)[-1]
    # each side's Python lines plus its TTGIR lines without a loc (its unattributed part: the
    # kernel frame holds no samples) are the samples of its cache hash's lines
    lost = [client.get(url + ".json?metric=num_samples").json()["hot_lines"]["unattributed"] for url in (small, large)]
    assert (hot["a_total"] + lost[0], hot["b_total"] + lost[1]) == (per_hash[a_hash], per_hash[b_hash])
    assert hot["b_total"] > hot["a_total"] and hot["lines"][0]["diff"] > 0
    assert "Hot lines" in client.get(f"/compare/{spec}").text


def test_capture_profile_boot_starts_proton_and_the_profile_is_ingested(tmp_path):
    """`irlens capture --profile`: the child imports the boot sitecustomize (checked without a GPU
    through a stand-in triton.profiler that records its calls), and the hatchet it leaves is kept."""
    import os
    import subprocess
    import sys

    from app.ingest.profile_boot import profile_environment

    fake = tmp_path / "fake" / "triton" / "profiler"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text(
        "import sys\ndef start(path, hook=None, mode=None):\n"
        "    if mode: raise RuntimeError('no CUPTI PC sampling here')\n"
        "    open(path + '.hatchet', 'w').write('[{\"frame\": {\"name\": \"ROOT\"}, \"metrics\": {}, \"children\": []}, {}]')\n"
        "def finalize(): pass\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"))
    hatchet = profile_environment(env, tmp_path)
    done = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True, check=True)
    assert "Proton, default (kernel times; PC sampling unavailable: no CUPTI PC sampling here) mode" in done.stderr
    assert hatchet.is_file() and proton.parse_hatchet(hatchet.read_bytes()).kernels == []


@pytest.mark.parametrize("mode", ["pcsampling", "pcsampling_ttgir"])
def test_map_page_python_lines_conserve_the_hatchet_totals(proton_site, mode):
    """The map page's per-Python-line metric (its JSON's `metrics`) plus its unattributed and other
    compilations' parts is each kernel's num_samples summed straight from the hatchet file."""
    client, run = proton_site
    expected = _hatchet_totals(_member("proton.tar.xz", f"proton/{mode}/profile.hatchet"), "num_samples")
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith(f"/{mode}/profile.hatchet")]
    seen = 0
    for kernel in profile["kernels"]:
        for url in kernel["candidates"]:
            metrics = client.get(url + "/map.json?metric=num_samples").json()["metrics"]
            assert metrics["metric"]["name"] == "num_samples" and "unit" in metrics["metric"]
            assert metrics["kernel"] == kernel["name"] and metrics["total"] == expected[kernel["name"]]
            lines = sum(item["value"] for item in metrics["lines"])
            assert lines > 0 and all(item["value"] > 0 for item in metrics["lines"])
            assert lines + metrics["unattributed"] + metrics["other_compilations"] == expected[kernel["name"]]
            seen += 1
    assert seen == 4
    # the page: a column of the metric beside each Python line, the chooser, the sum
    url = next(k for k in profile["kernels"] if k["name"].startswith("attn_fwd_tma"))["candidates"][0]
    html = client.get(url + "/map?metric=num_samples").text
    assert 'name="metric"' in html and 'class="heat-bar"' in html and "in the profile." in html
    overview = client.get(url + "/map.json?metric=num_samples").json()
    shown = {row["line"]: row["value"] for row in overview["overview"]["lines"] if row.get("value")}
    from_json = {item["line"]: item["value"] for item in overview["metrics"]["lines"]
                 if item["file"].endswith(overview["overview"]["file"].rsplit("/", 1)[-1])}
    assert shown == from_json and shown


def _loc_text(ir: str):
    """IR line (1-based) -> its text with every #loc alias spelled out (a reading of the IR's own
    text, apart from the app's loc resolver; a block's line holds its arguments' locs)."""
    import re

    aliases = dict(re.findall(r"^(#loc\d*) = (loc\(.*\))\s*$", ir, re.MULTILINE))

    def expand(text: str, depth: int = 0) -> str:
        if depth > 20:
            return text
        return re.sub(r"#loc\d*\b", lambda m: expand(aliases.get(m.group(0), ""), depth + 1), text)

    lines = ir.split("\n")
    return lambda number: expand(lines[number - 1])


def test_hot_lines_link_into_the_chosen_pass(proton_site):
    """Each hot line links to the snapshot page of the pass chosen (`?s=`, by default the last TTGIR
    one) at that Python line's IR lines there: every linked IR line's loc names the line."""
    client, run = proton_site
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith("/pcsampling/profile.hatchet")]
    url = next(k for k in profile["kernels"] if k["name"].startswith("attn_fwd_tma"))["candidates"][0]
    compilation = client.get(url + ".json").json()
    ttgir = [s["index"] for s in compilation["snapshots"] if s["stage"] == "ttgir"]
    ttir = [s["index"] for s in compilation["snapshots"] if s["stage"] == "ttir"]
    assert compilation["hot_lines"]["pass"]["index"] == ttgir[-1]
    for index in (ttgir[-1], ttir[-1]):
        hot = client.get(f"{url}.json?s={index}").json()["hot_lines"]
        assert hot["pass"]["index"] == index
        snapshot = f"{url}/s/{index}"
        loc_of = _loc_text(client.get(snapshot + "/raw").text)
        linked = 0
        for row in hot["lines"]:
            if not row["ir_lines"]:
                assert row["url"] == row["map_url"]  # none in this pass: the line in every pass
                continue
            first, last = row["ir_lines"][0], row["ir_lines"][-1]
            assert row["url"] in (f"{snapshot}#L{first}", f"{snapshot}#L{first}-L{last}")
            for number in row["ir_lines"]:
                loc = loc_of(number)
                assert f'{row["name"]}":{row["line"]}:' in loc, (number, loc)
            linked += 1
        assert linked >= 3
        html = client.get(f"{url}?s={index}").text
        assert f'href="{hot["lines"][0]["url"]}"' in html and f'<option value="{index}" selected>' in html


def test_compare_hot_lines_link_into_each_sides_pass(proton_site):
    client, run = proton_site
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith("pcsampling_ttgir/profile.hatchet")]
    small, large = next(k for k in profile["kernels"] if k["name"].startswith("matmul_kernel"))["candidates"]
    spec = f"{small.split('/')[2]}-{small.rsplit('/', 1)[-1]}..{large.split('/')[2]}-{large.rsplit('/', 1)[-1]}"
    hot = client.get(f"/compare/{spec}.json?metric=num_samples").json()["hot_lines"]
    sides = {"a": small, "b": large}
    for side, url in sides.items():
        chosen = hot[f"{side}_pass"]
        assert chosen["stage"] == "ttgir"
        loc_of = _loc_text(client.get(f"{url}/s/{chosen['index']}/raw").text)
        with_lines = [row for row in hot["lines"] if row[f"{side}_ir_lines"]]
        assert len(with_lines) >= 3
        for row in with_lines:
            assert row[f"{side}_url"].startswith(f"{url}/s/{chosen['index']}#L{row[f'{side}_ir_lines'][0]}")
            assert all(f'{row["name"]}":{row["line"]}:' in loc_of(n) for n in row[f"{side}_ir_lines"])
    html = client.get(f"/compare/{spec}?metric=num_samples").text
    assert f'href="{hot["lines"][0]["a_url"]}"' in html


def test_shared_kernel_hot_lines_say_so_and_name_the_candidates(proton_site):
    """pcsampling launched matmul_kernel's configs 0 and 2 under one name with no cache hash in
    its line frames: the hot lines of either compilation are the kernel's across both."""
    client, run = proton_site
    page = client.get(run["url"] + ".json").json()
    (profile,) = [p for p in page["profiles"] if p["path"].endswith("/pcsampling/profile.hatchet")]
    (kernel,) = [k for k in profile["kernels"] if k["name"].startswith("matmul_kernel")]
    assert kernel["compilation"] is None and len(kernel["candidates"]) == 2
    expected = _hatchet_totals(_member("proton.tar.xz", "proton/pcsampling/profile.hatchet"), "num_samples")
    for url in kernel["candidates"]:
        hot = client.get(url + ".json?metric=num_samples").json()["hot_lines"]
        assert hot["shared"] and hot["total"] == expected[kernel["name"]]
        assert [c["url"] for c in hot["candidates"]] == sorted(kernel["candidates"], key=lambda u: int(u.rsplit("/", 1)[1]))
        assert [c["this"] for c in hot["candidates"]].count(True) == 1
        assert {c["num_warps"] for c in hot["candidates"]} == {4}  # configs 0 and 2: both 4 warps, 3 stages
        html = client.get(url).text
        other = next(c for c in hot["candidates"] if not c["this"])
        assert "across 2 compilations" in html and f'href="{other["url"]}"' in html
    # a kernel joined to one compilation says nothing of the kind
    attn = next(k for k in profile["kernels"] if k["name"].startswith("attn_fwd_tma"))
    assert not client.get(attn["compilation"] + ".json").json()["hot_lines"]["shared"]
    assert "across" not in client.get(attn["compilation"]).text.split('id="hot-lines"')[1].split("</section>")[0]
