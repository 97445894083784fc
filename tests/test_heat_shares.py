"""Honest heat (issue 33) on the real PC-sampling captures: tests/fixtures/gpu_runs/proton.tar.xz
(H100, Triton 3.6, two configs launched under one name) and tests/fixtures/gpu_runs_i33/proton.tar.xz
(H200, Triton 3.6, an autotuned matmul under scopes `autotune` and `steady`), each with and without
USE_IR_LOC=ttgir. The reference is the hatchet file itself, read here: per scope and kernel frame,
its samples. In every pass and cached file of every profiled compilation the gutter's values add up
to at most the compilation's stated total, which is at most its kernel's samples in one scope."""

from __future__ import annotations

import json
import tarfile

import pytest

from tests.conftest import FIXTURES
from tests.test_snapshot_pages import make_site

ARCHIVES = [FIXTURES / "gpu_runs" / "proton.tar.xz", FIXTURES / "gpu_runs_i33" / "proton.tar.xz"]
METRIC = "num_samples"


def scope_totals(archive, member: str) -> dict[tuple[str, str], float]:
    with tarfile.open(archive) as tar:
        tree = json.loads(tar.extractfile(member).read())[0]  # type: ignore[union-attr]

    def subtree(node) -> float:
        return node.get("metrics", {}).get(METRIC, 0) + sum(subtree(child) for child in node.get("children", []))

    return {(scope["frame"]["name"], kernel["frame"]["name"]): subtree(kernel)
            for scope in tree["children"] for kernel in scope["children"]}


@pytest.fixture(scope="module", params=ARCHIVES, ids=["h100_two_configs", "h200_scopes"])
def site(request, tmp_path_factory):
    client, run = make_site(tmp_path_factory.mktemp("heat"), [request.param])
    with client:
        yield request.param, client, client.get(run["url"] + ".json").json()


def profiled(client, data):
    """(profile path, compilation JSON) of every compilation a PC-sampling kernel joins."""
    seen = set()
    for profile in data["profiles"]:
        if profile["mode"] != "pcsampling":
            continue
        for kernel in profile["kernels"]:
            for url in kernel["candidates"]:
                if url not in seen:
                    seen.add(url)
                    yield profile["path"], client.get(url + f".json?metric={METRIC}").json()


def test_every_pass_sums_to_at_most_the_compilations_total(site):
    archive, client, data = site
    checked = passes = 0
    for path, compilation in profiled(client, data):
        hot = compilation["hot_lines"]
        if not hot or hot["metric"]["name"] != METRIC:
            continue
        member = path.split("/", 1)[1] if not path.startswith("proton/") else path
        reference = scope_totals(archive, member)
        # the total is one scope's: the hatchet's samples of that kernel frame, less other compilations' lines
        (kernel_total,) = [v for (scope, name), v in reference.items() if name == hot["kernel"] and scope == hot["scope"]]
        assert hot["kernel_total"] == pytest.approx(kernel_total)
        assert hot["total"] == pytest.approx(kernel_total - hot["other_compilations"])
        pages = [s["url"] for s in compilation["snapshots"]]
        pages += [a["view_url"] for a in compilation.get("files", []) if a.get("kind") in ("ttgir", "ttir") and a.get("view_url")]
        for url in pages:
            metrics = client.get(url + f".json?metric={METRIC}").json()["metrics"]
            if not metrics or not metrics["lines"]:
                continue
            shown = sum(row["value"] for row in metrics["lines"])
            assert shown <= metrics["total"] * (1 + 1e-9), (url, shown, metrics["total"])
            assert metrics["total"] == hot["total"] and metrics["scope"] == hot["scope"]
            if metrics["attribution"] == "source line":
                firsts = {row["line"] for row in metrics["lines"]}
                assert all(row["first"] in firsts for row in metrics["same_as"])
            passes += 1
        checked += 1
    assert checked >= 2 and passes >= 50


def test_scopes_are_kept_apart_and_named(site):
    archive, client, data = site
    if archive.parent.name != "gpu_runs_i33":
        pytest.skip("only the H200 capture profiles one kernel under two scopes")
    profile = next(p for p in data["profiles"] if p["path"].endswith("pcsampling/profile.hatchet"))
    reference = scope_totals(archive, "proton/pcsampling/profile.hatchet")
    mine = {(k["scope"], k["name"]): k["totals"].get(METRIC, 0) for k in profile["kernels"]}
    assert mine == reference and {scope for scope, _ in mine} == {"autotune", "steady"}
    compilation = next(compilation for _, compilation in profiled(client, data))
    hot = compilation["hot_lines"]
    assert hot["scope"] in ("autotune", "steady") and [o["scope"] for o in hot["other_scopes"]]
    html = client.get(compilation["url"] + f"?metric={METRIC}").text
    assert f"scope <span class=\"mono\">{hot['scope']}</span>" in html


def test_instrumentation_cycles_per_region(site):
    """Proton's instrumentation backend (`pl.enter_scope("load"/"store")` in scoped_add): the run page
    gives each region's cycles, as the hatchet file holds them."""
    archive, client, data = site
    if archive.parent.name != "gpu_runs":
        pytest.skip("only the H100 capture ran the instrumentation backend")
    (profile,) = [p for p in data["profiles"] if p["path"].endswith("instrumentation/profile.hatchet")]
    with tarfile.open(archive) as tar:
        tree = json.loads(tar.extractfile("proton/instrumentation/profile.hatchet").read())[0]  # type: ignore[union-attr]
    expected = {}
    for scope in tree["children"]:
        for kernel in scope["children"]:
            for region in kernel.get("children", []):
                expected[region["frame"]["name"]] = region["metrics"]["cycles"]
    (kernel,) = [k for k in profile["kernels"] if k["regions"]]
    assert {r["name"]: r["cycles"] for r in kernel["regions"]} == expected and set(expected) == {"load", "store"}
    html = client.get(data["url"]).text
    for cycles in expected.values():
        assert f"{cycles:,.0f} cycles" in html
