"""Comparing two compilations: the alignment (maximal, checked against independent LCS oracles on
real pass lists), `/compare/A..B` and its .json twin on real corpus pairs (two autotune configs;
Triton 3.1 against 3.9), the per-row checks, the variants table and the compare-with list."""

from __future__ import annotations

import itertools
import random
import sys
from functools import cache

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.insight.pass_alignment import PassStep, align, first_divergence, fold, pairable
from app.settings import Settings
from app.store.db import Database
from app.store.models import Run
from app.web.app import create_app
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths

ARCHIVES = ("gpu_autotune", "old_3.1_sm90", "sm90_mix", "sm90_nodump")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The corpus archives a comparison needs, one run each, the autotune one twice, plus the
    recompile fixture (its second compilation failed before any pass)."""
    paths = {name: corpus_archive(name) for name in ARCHIVES}
    tmp_path = tmp_path_factory.mktemp("compare")
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        runs = {name: ingest_paths(database, [path]) for name, path in paths.items()}
        runs["gpu_autotune_again"] = ingest_paths(database, [paths["gpu_autotune"]])
        runs["recompile"] = ingest_paths(database, [FIXTURES / "recompile_add_kernel_triton39.log.gz"])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        yield client, runs


def cid(run: dict, ordinal: int) -> str:
    return f"{run['run']}-{ordinal}"


def by_kernel(run: dict, kernel: str) -> int:
    return next(c["id"] for c in run["compilations"] if c["kernel"] == kernel)


def get_json(client: TestClient, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


def steps_of(client: TestClient, run: dict, ordinal: int) -> tuple[list[PassStep], list[dict]]:
    """A compilation's snapshots, from its own page's JSON."""
    snapshots = get_json(client, f"/runs/{run['run']}/c/{ordinal}.json")["snapshots"]
    return [PassStep(s["pass_arg"], s["pass"], s["when"], s["blob"]) for s in snapshots], snapshots


# --------------------------------------------------------------------------- oracles


def lcs_length(a: list[PassStep], b: list[PassStep]) -> int:
    """The longest common subsequence's length by plain recursion over (i, j), memoized: written
    independently of app.insight.pass_alignment (no prefix/suffix trimming, no identical-pair weights)."""

    @cache
    def best(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return 0
        skip = max(best(i + 1, j), best(i, j + 1))
        return max(skip, 1 + best(i + 1, j + 1)) if pairable(a[i], b[j]) else skip

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * (len(a) + len(b)) + 100))
    try:
        return best(0, 0)
    finally:
        best.cache_clear()
        sys.setrecursionlimit(limit)


def embeds(chosen: tuple[PassStep, ...], b: list[PassStep]) -> bool:
    """Whether `chosen` pairs, in order, with a subsequence of `b` (earliest match is enough)."""
    j = 0
    for step in chosen:
        while j < len(b) and not pairable(step, b[j]):
            j += 1
        if j == len(b):
            return False
        j += 1
    return True


def brute_force_lcs(a: list[PassStep], b: list[PassStep]) -> int:
    """Every subsequence of `a`, longest first: the first that embeds in `b` is the LCS."""
    for size in range(len(a), -1, -1):
        if any(embeds(chosen, b) for chosen in itertools.combinations(a, size)):
            return size
    return 0


def check_alignment(a: list[PassStep], b: list[PassStep]) -> list:
    pairs = align(a, b)
    # every step of each side exactly once, in order on both sides
    assert [p.a for p in pairs if p.a is not None] == list(range(len(a)))
    assert [p.b for p in pairs if p.b is not None] == list(range(len(b)))
    for pair in pairs:
        if pair.a is not None and pair.b is not None:
            assert pairable(a[pair.a], b[pair.b])
            assert pair.identical == (a[pair.a].blob == b[pair.b].blob)
        else:
            assert not pair.identical
    return pairs


# --------------------------------------------------------------------------- the alignment


def test_alignment_is_maximal_on_real_pass_lists(site):
    client, runs = site
    old, mix, tune = runs["old_3.1_sm90"], runs["sm90_mix"], runs["gpu_autotune"]
    cases = [
        (steps_of(client, old, by_kernel(old, "add_kernel"))[0], steps_of(client, mix, by_kernel(mix, "add_kernel"))[0]),
        (steps_of(client, old, by_kernel(old, "matmul_kernel"))[0], steps_of(client, mix, by_kernel(mix, "matmul_kernel"))[0]),
        (steps_of(client, tune, 1)[0], steps_of(client, tune, 3)[0]),
        (steps_of(client, mix, by_kernel(mix, "matmul_kernel"))[0], steps_of(client, tune, 2)[0]),
        (steps_of(client, mix, by_kernel(mix, "softmax_kernel"))[0], steps_of(client, mix, by_kernel(mix, "attention_fwd_kernel"))[0]),
    ]
    rng = random.Random(12)
    for a, b in cases:
        pairs = check_alignment(a, b)
        paired = sum(1 for p in pairs if p.a is not None and p.b is not None)
        assert paired == lcs_length(a, b)
        assert paired == lcs_length(b, a) == sum(1 for p in check_alignment(b, a) if p.a is not None and p.b is not None)
        # exhaustive search over windows of the real lists, where enumerating is affordable
        for _ in range(6):
            i, j = rng.randrange(len(a) - 10), rng.randrange(len(b) - 14)
            window_a, window_b = a[i:i + 10], b[j:j + 14]
            window = check_alignment(window_a, window_b)
            assert sum(1 for p in window if p.a is not None and p.b is not None) == brute_force_lcs(window_a, window_b)


def test_alignment_prefers_identical_twins_among_maximal_ones():
    # three Canonicalizer runs on A, one on B that holds the same text as A's last
    a = [PassStep("canonicalize", "Canonicalizer", "before", h) for h in ("x", "y", "z")]
    b = [PassStep("canonicalize", "CanonicalizerPass", "before", "z")]
    pairs = align(a, b)
    assert [(p.a, p.b, p.identical) for p in pairs] == [(0, None, False), (1, None, False), (2, 0, True)]
    assert first_divergence(pairs) == 0
    assert align([], b)[0].a is None and align(a, []) and align([], []) == []


def test_fold_keeps_context_around_differences():
    differs = [False] * 10 + [True] + [False] * 10
    assert fold(differs, 2) == [("fold", 0, 8), ("rows", 8, 13), ("fold", 13, 21)]
    assert fold(differs, -1) == [("rows", 0, 21)]
    assert fold([False, True, False], 0) == [("rows", 0, 3)]  # a fold of one row is not worth its line
    assert fold([False] * 5, 2) == [("fold", 0, 5)]


# --------------------------------------------------------------------------- the JSON twin


def test_two_autotune_configs(site):
    client, runs = site
    run = runs["gpu_autotune"]
    a_steps, a_snaps = steps_of(client, run, 1)
    b_steps, b_snaps = steps_of(client, run, 3)
    data = get_json(client, f"/compare/{cid(run, 1)}..{cid(run, 3)}.json")
    for side, ordinal in ((data["a"], 1), (data["b"], 3)):
        own = get_json(client, f"/runs/{run['run']}/c/{ordinal}.json")
        for offer in ("compare_with", "reproduce_failure"):  # the page's own offers, not the compilation's
            own.pop(offer)
        assert {key: side[key] for key in own} == own
        assert side["passes"] == len(own["snapshots"])
    pairs = data["pairs"]
    assert len(pairs) >= max(len(a_snaps), len(b_snaps))
    assert sum(1 for p in pairs if p["a"] is not None and p["b"] is not None) == lcs_length(a_steps, b_steps)
    for row in pairs:
        a_blob = a_snaps[row["a"]]["blob"] if row["a"] is not None else None
        b_blob = b_snaps[row["b"]]["blob"] if row["b"] is not None else None
        assert row["identical"] == (a_blob is not None and a_blob == b_blob)
        assert (row["diff_url"] is not None) == (a_blob is not None and b_blob is not None)
    expected_first = next((k for k, row in enumerate(pairs) if not row["identical"]), None)
    assert data["first_divergence"] == expected_first
    # the configs differ in num_warps/num_stages: the summary says so, with both values
    own_a = get_json(client, f"/runs/{run['run']}/c/1.json")
    own_b = get_json(client, f"/runs/{run['run']}/c/3.json")
    differing = {o["key"]: (o["a"], o["b"]) for o in data["summary"]["options"]}
    for key in ("num_warps", "num_stages", "shared"):
        if own_a[key] != own_b[key]:
            assert differing[key] == (own_a[key], own_b[key])
        else:
            assert key not in differing
    assert "num_warps" in differing  # 8 warps against 4 in this capture
    stages = {f["stage"]: f for f in data["summary"]["final_stages"]}
    assert {"ttgir", "llir", "asm"} <= set(stages) and stages["asm"]["a"]["kind"] == "ptx"
    # a diff link opens, and its own verdict agrees with `identical`
    row = pairs[expected_first]
    diff = get_json(client, row["diff_url"].split("?")[0] + ".json")
    assert diff["identical"] is False and diff["a"]["blob"] != diff["b"]["blob"]


def test_triton_31_against_39_aligns_renamed_passes(site):
    client, runs = site
    old, mix = runs["old_3.1_sm90"], runs["sm90_mix"]
    a_ord, b_ord = by_kernel(old, "add_kernel"), by_kernel(mix, "add_kernel")
    a_steps, a_snaps = steps_of(client, old, a_ord)
    b_steps, b_snaps = steps_of(client, mix, b_ord)
    data = get_json(client, f"/compare/{cid(old, a_ord)}..{cid(mix, b_ord)}.json")
    pairs = data["pairs"]
    paired = [p for p in pairs if p["a"] is not None and p["b"] is not None]
    assert len(paired) == lcs_length(a_steps, b_steps)
    # pass classes were renamed (Inliner -> InlinerPass), their arguments were not: still paired
    renamed = [p for p in paired if a_snaps[p["a"]]["pass"] != b_snaps[p["b"]]["pass"]]
    assert renamed, "expected passes renamed between Triton 3.1 and 3.9 to pair by argument"
    first = paired[0]
    assert (a_snaps[first["a"]]["pass"], b_snaps[first["b"]]["pass"]) == ("Inliner", "InlinerPass")
    assert all(a_snaps[p["a"]]["pass_arg"] == b_snaps[p["b"]]["pass_arg"] for p in renamed)
    # one-side-only passes are listed in the summary, and only there; those the other side ran
    # elsewhere are listed as moved instead (tests/test_pass_moves.py)
    only_a = [k for k, p in enumerate(pairs) if p["b"] is None and p["moved_to"] is None]
    only_b = [k for k, p in enumerate(pairs) if p["a"] is None and p["moved_to"] is None]
    assert [o["row"] for o in data["summary"]["only_a"]] == only_a and only_a
    assert [o["row"] for o in data["summary"]["only_b"]] == only_b and only_b
    differing = {o["key"]: (o["a"], o["b"]) for o in data["summary"]["options"]}
    assert differing["triton_version"][1] == "3.9.0"
    for row in paired:
        assert row["identical"] == (a_snaps[row["a"]]["blob"] == b_snaps[row["b"]]["blob"])
    # and across runs the page itself renders, with both kernels' runs named
    page = client.get(f"/compare/{cid(old, a_ord)}..{cid(mix, b_ord)}")
    assert page.status_code == 200 and "from different runs" in page.text
    assert 'rel="alternate"; type="application/json"' in page.headers["link"]


def test_identical_means_the_same_stored_blob(site):
    client, runs = site
    first, again = runs["gpu_autotune"], runs["gpu_autotune_again"]
    data = get_json(client, f"/compare/{cid(first, 2)}..{cid(again, 2)}.json")
    assert data["pairs"] and all(p["identical"] for p in data["pairs"])
    assert data["first_divergence"] is None and data["summary"]["first_divergence"] is None
    page = client.get(f"/compare/{cid(first, 2)}..{cid(again, 2)}").text
    assert "No divergence" in page and 'class="fold"' in page  # all rows folded away
    itself = get_json(client, f"/compare/{cid(first, 1)}..{cid(first, 1)}.json")
    assert all(p["identical"] for p in itself["pairs"])


def test_a_row_is_checked_on_demand_with_the_ignore_options(site):
    client, runs = site
    run = runs["gpu_autotune"]
    base = f"/compare/{cid(run, 3)}..{cid(run, 4)}"
    data = get_json(client, base + ".json?ssa=1&loc=1&alias=1")
    assert all("?" in p["diff_url"] and "ssa=1" in p["diff_url"] for p in data["pairs"] if p["diff_url"])
    for k, row in enumerate(data["pairs"][:12]):
        if row["diff_url"] is None:
            continue
        verdict = get_json(client, f"{base}/rows/{k}.json?ssa=1&loc=1&alias=1")
        diff_path, _, query = row["diff_url"].partition("?")
        diff = get_json(client, f"{diff_path}.json?{query}")
        assert verdict["identical"] == row["identical"]
        assert verdict["equivalent"] == diff["identical"]
        assert (verdict["added"], verdict["removed"]) == (diff["stats"]["added"], diff["stats"]["removed"])
    status = client.get(f"{base}/rows/1?ssa=1", headers={"HX-Request": "true"})
    assert status.status_code == 200 and "row-status" in status.text
    preview = client.get(f"{base}/rows/1?preview=1", headers={"HX-Request": "true"})
    assert preview.status_code == 200 and 'class="diff-table split"' in preview.text
    assert client.get(f"{base}/rows/100000.json").status_code == 404


def test_empty_states_and_bad_ids(site):
    client, runs = site
    recompile = runs["recompile"]
    assert [c["snapshots"]["mlir"] for c in recompile["compilations"]] == [76, 0]
    data = get_json(client, f"/compare/{cid(recompile, 1)}..{cid(recompile, 2)}.json")
    assert data["b"]["passes"] == 0 and all(p["b"] is None for p in data["pairs"])
    assert data["first_divergence"] == 0
    page = client.get(f"/compare/{cid(recompile, 1)}..{cid(recompile, 2)}").text
    assert "Only one side has pass dumps" in page
    nodump = runs["sm90_nodump"]
    both_empty = client.get(f"/compare/{cid(nodump, 1)}..{cid(nodump, 1)}")
    assert both_empty.status_code == 200 and "No passes to compare" in both_empty.text
    assert client.get(f"/compare/{cid(nodump, 1)}..{cid(nodump, 1)}.json").json()["pairs"] == []
    assert client.get(f"/compare/{recompile['run']}-9..{cid(recompile, 1)}.json").status_code == 404
    assert client.get("/compare/nonsense.json").json()["error"].startswith("not a comparison")
    assert client.get("/compare/a-b-c..d.json").status_code == 404
    picked = client.get(f"/compare?a={cid(recompile, 1)}&b={cid(recompile, 2)}", follow_redirects=False)
    assert picked.status_code == 303 and picked.headers["location"].endswith(f"/compare/{cid(recompile, 1)}..{cid(recompile, 2)}")
    assert client.get("/compare?a=x").status_code == 400
    assert client.get(f"/compare?a={cid(recompile, 1)}&b=//elsewhere.example/x", follow_redirects=False).status_code == 400


# --------------------------------------------------------------------------- picking


def test_variants_table_lists_every_autotune_config(site):
    client, runs = site
    run = runs["gpu_autotune"]
    data = get_json(client, f"/runs/{run['run']}.json")
    groups = {g["kernel"]: g for g in data["variants"]}
    kernels = [c["kernel"] for c in run["compilations"]]
    assert set(groups) == {k for k in kernels if kernels.count(k) > 1}
    variants = groups["matmul_kernel"]["variants"]
    assert [v["id"] for v in variants] == [c["id"] for c in run["compilations"] if c["kernel"] == "matmul_kernel"]
    for v, c in zip(variants, (c for c in run["compilations"] if c["kernel"] == "matmul_kernel"), strict=True):
        assert v["config"]["num_warps"] == c["num_warps"] and v["config"]["num_stages"] == c["num_stages"]
        assert v["passes"] == sum(c["snapshots"].values())
    for v in variants[1:]:
        compared = get_json(client, v["compare_first_url"] + ".json")
        assert v["departs"]["row"] == compared["first_divergence"]
    page = client.get(f"/runs/{run['run']}").text
    assert 'id="variants"' in page and page.count('name="a"') == len(variants)
    # a run whose kernels are each compiled once has no variants
    assert get_json(client, f"/runs/{runs['sm90_mix']['run']}.json")["variants"] == []


def test_compare_with_lists_this_run_first_then_other_runs(site):
    client, runs = site
    run, again, mix = runs["gpu_autotune"], runs["gpu_autotune_again"], runs["sm90_mix"]
    data = get_json(client, f"/runs/{run['run']}/c/1.json")
    listed = [c["compilation"] for c in data["compare_with"]]
    same_run = [cid(run, c["id"]) for c in run["compilations"] if c["kernel"] == "matmul_kernel" and c["id"] != 1]
    assert listed[: len(same_run)] == same_run
    assert cid(mix, by_kernel(mix, "matmul_kernel")) in listed and cid(again, 1) in listed
    assert all(c["compare_url"].startswith(f"/compare/{cid(run, 1)}..") for c in data["compare_with"])
    assert "Compare with" in client.get(f"/runs/{run['run']}/c/1").text


def test_compare_with_respects_who_may_see_a_run(tmp_path):
    """With tokens required, other runs are offered only when listed (or the reader's own)."""
    archive = corpus_archive("gpu_autotune")
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        mine = ingest_paths(database, [archive])
        other = ingest_paths(database, [archive])
        with database.session() as session:
            session.execute(update(Run).values(listed=False))
            session.commit()
        settings = Settings(db_url=url, load_demo=False, data_dir=tmp_path, require_token=True)
        with TestClient(create_app(settings)) as client:
            offered = [c["run"] for c in get_json(client, f"/runs/{mine['run']}/c/1.json")["compare_with"]]
            assert other["run"] not in offered and mine["run"] in offered
            with database.session() as session:
                session.execute(update(Run).where(Run.id == other["run"]).values(listed=True))
                session.commit()
            offered = [c["run"] for c in get_json(client, f"/runs/{mine['run']}/c/1.json")["compare_with"]]
            assert other["run"] in offered
            # the comparison itself opens by its link, like every page of an unlisted run
            assert client.get(f"/compare/{cid(mine, 1)}..{cid(other, 1)}.json").status_code == 200
    finally:
        database.dispose()


def test_variants_of_a_traced_autotune_show_its_block_sizes(tmp_path):
    """A tritonparse trace (tests/fixtures/tritonparse, real H100 capture) stores each autotune
    config's constexprs: the variants table shows the block size beside num_warps/num_stages, and
    marks the config the autotuner picked."""
    trace = FIXTURES / "tritonparse" / "launches_h100_triton36.ndjson.gz"
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        run = ingest_paths(database, [trace])
        with database.session() as session:
            stored = {c.ordinal: c.metadata_json for c in session.get(Run, run["run"]).compilations}
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        data = get_json(client, f"/runs/{run['run']}.json")
        groups = {g["kernel"]: g for g in data["variants"]}
        axpy = groups["axpy_kernel"]
        assert axpy["config_keys"][0] == "BLOCK" and {"num_warps", "num_stages"} <= set(axpy["config_keys"])
        for v in axpy["variants"]:
            config = stored[v["id"]]["config"]
            assert v["config"]["BLOCK"] == config["BLOCK"]
            assert v["config"]["num_warps"] == config["num_warps"]
            assert v["autotune"]["winner"] == stored[v["id"]]["autotune"]["winner"]
        assert [v["autotune"]["winner"] for v in axpy["variants"]].count(True) == 1
        page = client.get(f"/runs/{run['run']}").text
        section = page[page.index('id="variants"'):]
        assert '<span class="faint">BLOCK</span>=' in section and "picked" in section


def _effect(snaps: list[dict], ops: dict[str, dict], i: int | None):
    """Oracle for one pass's effect, from the compilation page's JSON: (changed, op-group moves)."""
    if i is None:
        return None
    before, after = (i - 1, i) if snaps[i]["when"] == "after" else (i, i + 1)
    if before < 0 or after >= len(snaps):
        return None
    x, y = ops[snaps[before]["blob"]], ops[snaps[after]["blob"]]
    moves = {key: y.get(key, 0) - x.get(key, 0) for key in set(x) | set(y)}
    return snaps[before]["blob"] != snaps[after]["blob"], {key: move for key, move in moves.items() if move}


@pytest.mark.parametrize("pair", [("gpu_autotune", 1, "gpu_autotune", 3), ("old_3.1_sm90", 1, "sm90_mix", 1)])
def test_first_pass_whose_effect_differs(site, pair):
    """Real pairs differ from their first dump (constexprs, another front end), so first_divergence
    is row 0; the summary also names the first row whose pass did something else on each side."""
    client, runs = site
    a_run, a_ord, b_run, b_ord = runs[pair[0]], pair[1], runs[pair[2]], pair[3]
    if pair[0] != pair[2]:
        b_ord = next((c["id"] for c in b_run["compilations"]
                      if c["kernel"] == next(x["kernel"] for x in a_run["compilations"] if x["id"] == a_ord)), None)
        if b_ord is None:
            pytest.skip("no compilation of the same kernel")
    data = get_json(client, f"/compare/{cid(a_run, a_ord)}..{cid(b_run, b_ord)}.json")
    a_snaps, b_snaps = data["a"]["snapshots"], data["b"]["snapshots"]
    a_ops = {a_snaps[r["a"]]["blob"]: r["a_ops"] for r in data["pairs"] if r["a"] is not None}
    b_ops = {b_snaps[r["b"]]["blob"]: r["b_ops"] for r in data["pairs"] if r["b"] is not None}
    expected = None
    for k, row in enumerate(data["pairs"]):
        x, y = _effect(a_snaps, a_ops, row["a"]), _effect(b_snaps, b_ops, row["b"])
        if row["a"] is None or row["b"] is None:
            one = x or y
            if one is not None and one[0]:
                expected = (k, "only_in_a" if row["a"] is not None else "only_in_b")
                break
        elif x is not None and y is not None and (x[0] != y[0] or (x[0] and x[1] != y[1])):
            expected = (k, ("only_a" if x[0] else "only_b") if x[0] != y[0] else "ops")
            break
    found = data["summary"]["first_effect_divergence"]
    assert expected is not None and (found["row"], found["reason"]) == expected
    assert found["row"] > data["first_divergence"] == 0
    for side, change in (("a", found["a_change"]), ("b", found["b_change"])):
        if change and change["diff_url"]:
            diff = get_json(client, change["diff_url"].split("?")[0] + ".json")
            assert diff["identical"] is False and diff["a"]["index"] == change["from"] and diff["b"]["index"] == change["to"]
    page = client.get(f"/compare/{cid(a_run, a_ord)}..{cid(b_run, b_ord)}").text
    assert "First pass whose effect differs" in page and f'href="#r{found["row"]}"' in page
