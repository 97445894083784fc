"""Autotuning results read from logs (parsers/autotuning/autotune.py) and shown on the run page, the Variants
table and the compare page: on the corpus gpu_autotune capture (its program prints
`kernel.best_config` for two problem sizes) and on lines in the exact formats Triton's autotuner and
torch inductor's select_algorithm print, interleaved with dump text as max-autotune logs are."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.store.db import Database
from app.web.app import create_app
from parsers.autotuning.autotune import AutotuneScanner
from tests.conftest import corpus_archive, fresh_db_url, ingest_paths


def scan(text: str) -> list[dict]:
    scanner = AutotuneScanner()
    for number, line in enumerate(text.split("\n"), start=1):
        scanner.feed(number, line)
    return scanner.entries


def test_triton_print_autotuning_both_formats():
    config = "BLOCK_M: 128, BLOCK_N: 256, BLOCK_K: 64, num_warps: 8, num_ctas: 1, num_stages: 3, maxnreg: None"
    old = f"Triton autotuning for function matmul_kernel finished after 1.23s; best config selected: {config};"
    new = (f"Autotuning kernel matmul_kernel with config {config}\n"
           f"Triton autotuning for function matmul_kernel,\nwith key as (1024, 1024, 1024),\n"
           f"finished after 0.87s,\nbest config selected: {config};")
    for text, seconds in ((old, 1.23), (new, 0.87)):
        (entry,) = scan(text)
        assert entry["kernel"] == "matmul_kernel" and entry["seconds"] == seconds
        assert entry["best_config"] == {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8,
                                        "num_ctas": 1, "num_stages": 3, "maxnreg": None}
    assert scan(new)[0]["key"] == "(1024, 1024, 1024)" and len(scan(new)[0]["choices"]) == 1


def test_inductor_table_with_interleaved_dump_text():
    log = ("AUTOTUNE mm(1024x512, 512x512)\nstrides: [512, 1], [512, 1]\n"
           "  triton_mm_71 0.0189 ms 100.0% BLOCK_K=128, BLOCK_M=64, BLOCK_N=64, num_stages=4, num_warps=4\n"
           "    %12 = tt.load %ptr : tensor<64x!tt.ptr<f16>>  triton_mm_3 0.0252 ms 75.0% BLOCK_K=32, BLOCK_M=128, "
           "BLOCK_N=128, num_stages=2, num_warps=8\n"
           "  mm 0.0300 ms 63.0% \n"
           "SingleProcess AUTOTUNE benchmarking takes 1.2345 seconds and 0.5000 seconds precompiling for 3 choices\n")
    (table,) = scan(log)
    assert (table["op"], table["shapes"], table["seconds"]) == ("mm", "1024x512, 512x512", 1.2345)
    names = [(c["name"], c["time_ms"], c["percent"]) for c in table["choices"]]
    assert names == [("triton_mm_71", 0.0189, 100.0), ("triton_mm_3", 0.0252, 75.0), ("mm", 0.03, 63.0)]
    assert table["choices"][1]["config"]["BLOCK_M"] == 128 and table["choices"][1]["config"]["num_warps"] == 8


@pytest.fixture(scope="module")
def autotune_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("autotune")
    url = fresh_db_url(tmp)
    database = Database(url)
    try:
        run = ingest_paths(database, [corpus_archive("gpu_autotune")])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp))) as client:
        yield client, run


def test_gpu_autotune_variants_differ_and_the_printed_best_configs_are_marked(autotune_site, unpacked_corpus):
    client, run = autotune_site
    data = client.get(f"/runs/{run['run']}.json").json()
    (group,) = data["variants"]
    configs = [tuple(sorted(v["config"].items())) for v in group["variants"]]
    assert len(set(configs)) == len(configs)  # no two variants look identical
    # the program's own stdout names the best config per problem size
    stdout = (unpacked_corpus / "gpu_autotune" / "stdout.txt").read_text()
    printed = re.findall(r"BLOCK_M: (\d+), BLOCK_N: (\d+), BLOCK_K: (\d+), num_warps: (\d+)", stdout)
    assert len(printed) == 2 and len(data["autotune"]) == 2
    picked = {v["id"]: v for v in group["variants"] if v["autotune_won"]}
    assert len(picked) == 2
    for m, n, k, warps in printed:
        (winner,) = [v for v in picked.values() if v["tile"] == {"M": int(m), "N": int(n), "K": int(k)}]
        assert winner["config"]["num_warps"] == int(warps)
    html = client.get(f"/runs/{run['run']}").text
    assert html.count('class="badge ok winner"') == 2


def test_compare_answers_why(autotune_site):
    client, run = autotune_site
    rid = run["run"]
    data = client.get(f"/compare/{rid}-1..{rid}-2.json").json()
    why = data["why"]
    a, b = why["resources"]["a"], why["resources"]["b"]
    assert a["registers"] != b["registers"]
    asm = next(f for f in data["summary"]["final_stages"] if f["stage"] == "asm")
    assert asm["a"]["registers"]["registers"] == a["registers"] and asm["b"]["registers"]["registers"] == b["registers"]
    sentence = next(s for s in why["sentences"] if s.startswith("A: "))
    # each side's own limiter, as its compilation page says it (issue 33)
    own = [client.get(f"/runs/{rid}/c/{n}.json").json()["resources"]["limiter"] for n in (1, 2)]
    assert sentence == f"A: {own[0]['why']} → {own[0]['result']}; B: {own[1]['why']} → {own[1]['result']}"
    assert f"{a['registers']}/thread" in sentence and f"{b['registers']}/thread" in sentence
    html = client.get(f"/compare/{rid}-1..{rid}-2").text
    assert "Why they differ" in html and f"{b['registers']} regs" in html
