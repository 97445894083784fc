"""Issue 25 §4: a pass both compilations ran is aligned, or reported as moved, never listed as only
in A and only in B. Checked on the same kernels under Triton 3.1, 3.8 and 3.9 (corpus old_3.1_sm90,
sm90_mix; committed 3.8 captures) against counts made here from the two pass lists alone."""

from __future__ import annotations

import html
import re
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from app.insight.pass_alignment import Effect, PassStep, align, first_effect_divergence, moves
from app.settings import Settings
from app.store.db import Database
from app.web.app import create_app
from tests.conftest import CORPUS, FIXTURES, fresh_db_url, ingest_paths

CAPTURES = {
    "3.1": CORPUS / "old_3.1_sm90.tar.xz",
    "3.9": CORPUS / "sm90_mix.tar.xz",
    "3.8": FIXTURES / "triton38_fidelity.log.xz",  # vector_add_kernel for cuda:90, LLVM dumps too
    "3.8mm": FIXTURES / "triton38_matmul_llvm_cuda100.log.xz",  # matmul_kernel for cuda:100
}
# (A, its kernel, B, its kernel): one kernel's source under two Triton versions
PAIRS = [
    ("3.1", "add_kernel", "3.9", "add_kernel"),
    ("3.1", "matmul_kernel", "3.9", "matmul_kernel"),
    ("3.8", "vector_add_kernel", "3.9", "add_kernel"),
    ("3.8mm", "matmul_kernel", "3.9", "matmul_kernel"),
    ("3.1", "matmul_kernel", "3.8mm", "matmul_kernel"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not available")
    tmp_path = tmp_path_factory.mktemp("moves")
    url = fresh_db_url(tmp_path)
    database = Database(url)
    try:
        runs = {name: ingest_paths(database, [path]) for name, path in CAPTURES.items()}
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp_path))) as client:
        yield client, runs


def compilation(runs: dict, version: str, kernel: str) -> str:
    run = runs[version]
    ordinal = next(c["id"] for c in run["compilations"] if c["kernel"] == kernel and c["snapshots"]["mlir"])
    return f"{run['run']}-{ordinal}"


def get_json(client: TestClient, url: str) -> dict:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return response.json()


def key(snapshot: dict) -> tuple[str, str]:
    """What names one pass across versions: its argument where the banner has one (`inline` for 3.1's
    `Inliner (inline)` and 3.9's `InlinerPass: inline{...}`), its name otherwise; and the dump's moment."""
    return snapshot["when"], snapshot["pass_arg"] or snapshot["pass"]


def compare(client: TestClient, runs: dict, pair: tuple) -> tuple[dict, list[dict], list[dict]]:
    a_id, b_id = compilation(runs, pair[0], pair[1]), compilation(runs, pair[2], pair[3])
    data = get_json(client, f"/compare/{a_id}..{b_id}.json")
    # each side's snapshots from its own compilation page, not from the comparison
    a_snaps = get_json(client, "/runs/{}/c/{}.json".format(*a_id.rsplit("-", 1)))["snapshots"]
    b_snaps = get_json(client, "/runs/{}/c/{}.json".format(*b_id.rsplit("-", 1)))["snapshots"]
    return data, a_snaps, b_snaps


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p[0]}-{p[2]}-{p[1]}" for p in PAIRS])
def test_a_pass_both_ran_is_aligned_or_moved(site, pair):
    client, runs = site
    data, a_snaps, b_snaps = compare(client, runs, pair)
    summary, rows = data["summary"], data["pairs"]
    a_keys, b_keys = [key(s) for s in a_snaps], [key(s) for s in b_snaps]
    # the name spellings really differ across these versions: keys are not just the names
    assert {s["pass"] for s in a_snaps} != {s["pass"] for s in b_snaps}

    only_a = {key(a_snaps[o["index"]]) for o in summary["only_a"]}
    only_b = {key(b_snaps[o["index"]]) for o in summary["only_b"]}
    assert not only_a & only_b
    assert not {o["pass"] for o in summary["only_a"]} & {o["pass"] for o in summary["only_b"]}

    # aligned plus moved is the multiset intersection of the two pass lists
    common = Counter(a_keys) & Counter(b_keys)
    paired = [(r["a"], r["b"]) for r in rows if r["a"] is not None and r["b"] is not None]
    moved = summary["moved"]
    assert len(paired) + len(moved) == sum(common.values())
    # ... and one-side-only is what one side ran more often than the other
    assert Counter(key(a_snaps[o["index"]]) for o in summary["only_a"]) == Counter(a_keys) - Counter(b_keys)
    assert Counter(key(b_snaps[o["index"]]) for o in summary["only_b"]) == Counter(b_keys) - Counter(a_keys)
    # every snapshot of each side exactly once: paired, moved or one-side-only
    assert sorted([a for a, _ in paired] + [m["a"] for m in moved] + [o["index"] for o in summary["only_a"]]) \
        == list(range(len(a_snaps)))
    assert sorted([b for _, b in paired] + [m["b"] for m in moved] + [o["index"] for o in summary["only_b"]]) \
        == list(range(len(b_snaps)))

    for m in moved:
        assert a_keys[m["a"]] == b_keys[m["b"]] and m["pass"] == a_snaps[m["a"]]["pass"]
        assert (rows[m["a_row"]]["a"], rows[m["a_row"]]["b"], rows[m["a_row"]]["moved_to"]) == (m["a"], None, m["b_row"])
        assert (rows[m["b_row"]]["a"], rows[m["b_row"]]["b"], rows[m["b_row"]]["moved_to"]) == (None, m["b"], m["a_row"])
        assert m["identical"] == (a_snaps[m["a"]]["blob"] == b_snaps[m["b"]]["blob"])
        # moved means out of order: pairing it would cross a pair the alignment kept (else the
        # alignment was not maximal)
        assert any((m["a"] - a) * (m["b"] - b) < 0 for a, b in paired)
    # a repeated pass's leftover occurrences go together in order: k-th with k-th on both sides
    for name in {a_keys[m["a"]] for m in moved}:
        same = [(m["a"], m["b"]) for m in moved if a_keys[m["a"]] == name]
        assert [a for a, _ in same] == sorted(a for a, _ in same) and [b for _, b in same] == sorted(b for _, b in same)


def test_the_issues_passes_are_reported_moved_with_both_positions(site):
    """Triton 3.8 checks two-CTA matmuls late in TTGIR, 3.9 right after AccelerateMatmul."""
    client, runs = site
    seen = 0
    for pair in PAIRS:
        data, a_snaps, b_snaps = compare(client, runs, pair)
        for name in ("TritonNvidiaGPUCheckMatmulTwoCTAPass", "TritonGPUGlobalScratchAllocationPass", "ConvertNVGPUToLLVM"):
            in_a = [k for k, s in enumerate(a_snaps) if s["pass"] == name]
            in_b = [k for k, s in enumerate(b_snaps) if s["pass"] == name]
            if len(in_a) != 1 or len(in_b) != 1:
                continue
            seen += 1
            paired = [r for r in data["pairs"] if (r["a"], r["b"]) == (in_a[0], in_b[0])]
            moved = [m for m in data["summary"]["moved"] if (m["a"], m["b"]) == (in_a[0], in_b[0])]
            assert len(paired) + len(moved) == 1, (pair, name)
            if moved:
                diff = get_json(client, moved[0]["diff_url"].split("?")[0] + ".json")
                assert (diff["a"]["index"], diff["b"]["index"]) == (in_a[0], in_b[0])
    assert seen >= 3


def test_the_page_shows_moved_passes(site):
    client, runs = site
    a_id, b_id = compilation(runs, "3.8", "vector_add_kernel"), compilation(runs, "3.9", "add_kernel")
    data = get_json(client, f"/compare/{a_id}..{b_id}.json")
    moved = data["summary"]["moved"]
    assert moved
    page = client.get(f"/compare/{a_id}..{b_id}?context=all")
    assert page.status_code == 200
    text = page.text
    listed = re.search(r'<div class="only-list moved-list">(.*?)</div>', text, re.DOTALL)
    assert listed, "no Moved list on the page"
    for m in moved:
        chip = f'href="#r{m["a_row"]}" data-goto="{m["a_row"]}"'
        assert chip in listed.group(1)
        assert f'{html.escape(m["pass"])} <span class="faint">A #{m["a"]} · B #{m["b"]}</span>' in listed.group(1)
        assert f'href="{html.escape(m["diff_url"])}"' in listed.group(1)
        # each of its two rows points at the other
        for row, other in ((m["a_row"], m["b_row"]), (m["b_row"], m["a_row"])):
            cells = re.search(rf'<tr class="pair [^"]*" id="r{row}".*?</tr>', text, re.DOTALL)
            assert cells and f'class="only-mark moved-mark" href="#r{other}"' in cells.group(0)
    # the one-side-only chips do not name a moved pass
    chips = re.findall(r'<a class="chip only-([ab])"[^>]*>([^<]*)</a>', text)
    assert chips and not {name for _, name in chips} & {m["pass"] for m in moved}
    assert f"{len(moved)} moved" in text


# --------------------------------------------------------------------------- the pure function


def step(arg: str | None, name: str, blob: str = "x", when: str = "before") -> PassStep:
    return PassStep(arg, name, when, blob)


def test_moves_pair_leftover_occurrences_in_order():
    # A: cse, combine, canon, cse ; B: canon, combine, cse, cse, cse (3.1 -> 3.9 spellings)
    a = [step("cse", "CSE", "1"), step("triton-combine", "TritonCombineOps"), step("canonicalize", "Canonicalizer"),
         step("cse", "CSE", "2")]
    b = [step("canonicalize", "CanonicalizerPass"), step("triton-combine", "TritonCombineOps"),
         step("cse", "CSEPass", "1"), step("cse", "CSEPass", "2"), step("cse", "CSEPass", "3")]
    pairs = align(a, b)
    found = moves(a, b, pairs)
    paired = sum(1 for p in pairs if p.a is not None and p.b is not None)
    assert paired + len(found) == 4  # every pass of A was run by B too
    left_a = {p.a for p in pairs if p.b is None} - {m.a for m in found}
    left_b = {p.b for p in pairs if p.a is None} - {m.b for m in found}
    assert not left_a and [b[j].pass_arg for j in left_b] == ["cse"]  # B ran CSE once more
    for m in found:
        assert (pairs[m.a_row].a, pairs[m.a_row].b, pairs[m.b_row].a, pairs[m.b_row].b) == (m.a, None, None, m.b)
        assert m.identical == (a[m.a].blob == b[m.b].blob)
    # a pass dumped before on one side and after on the other is not the same moment
    assert moves([step("cse", "CSE")], [step("x", "X"), step("cse", "CSE", when="after")],
                 align([step("cse", "CSE")], [step("x", "X"), step("cse", "CSE", when="after")])) == []


def test_a_moved_pass_that_changed_the_ir_is_not_called_one_sided():
    a = [step("p", "P", "0"), step("q", "Q", "1"), step("r", "R", "2")]
    b = [step("q", "Q", "0"), step("r", "R", "1"), step("p", "P", "2")]
    pairs = align(a, b)
    found = moves(a, b, pairs)
    assert [(a[m.a].pass_arg, m.a, m.b) for m in found] == [("p", 0, 2)]
    rows = {m.a_row for m in found} | {m.b_row for m in found}
    changed = [Effect(True, ()), Effect(False, ()), Effect(False, ())]
    first = first_effect_divergence(pairs, changed, [Effect(False, ())] * 3, rows)
    assert first == (found[0].a_row, "moved")
    assert first_effect_divergence(pairs, changed, [Effect(False, ())] * 3) == (found[0].a_row, "only_in_a")
