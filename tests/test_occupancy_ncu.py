"""The occupancy limiter against Nsight Compute's own Block Limit values (tests/fixtures/occupancy_ncu:
nine Triton 3.6 kernels on an H100, each limited by something else: shared memory, registers, warps
or blocks per SM). Each kernel's cache entry (cubin + metadata) is ingested for real, and what the
compilation's JSON and page say is compared with ncu's Occupancy section of the same launch."""

from __future__ import annotations

import csv
import io
import json
import tarfile

import pytest
from fastapi.testclient import TestClient

from app.insight.resources import nvidia_occupancy
from app.settings import Settings
from app.store.db import Database
from app.web.app import create_app
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

HERE = FIXTURES / "occupancy_ncu"
NCU_LIMITS = {"Block Limit Registers": "registers", "Block Limit Shared Mem": "shared",
              "Block Limit Warps": "warps", "Block Limit SM": "blocks"}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _ncu() -> list[dict]:
    """The Triton kernels' launches in launch order, each with its Occupancy and Launch Statistics."""
    launches: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO((HERE / "ncu_occupancy.csv").read_text())):
        launches.setdefault(row["ID"], {})[row["Metric Name"]] = row["Metric Value"]
    return [launches[key] for key in sorted(launches, key=int)]


def _cases() -> list[tuple[str, str]]:
    """(case name, Triton's hash of it) in launch order, from the program's stdout."""
    return [(line.split()[1], line.split()[3]) for line in (HERE / "cases.txt").read_text().splitlines()]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("occupancy")
    with tarfile.open(HERE / "cache.tar.xz") as archive:
        archive.extractall(tmp / "cache", filter="data")
    url = fresh_db_url(tmp)
    database = Database(url)
    try:
        run = ingest_paths(database, [tmp / "cache"])
    finally:
        database.dispose()
    hashes = {json.loads(path.read_text())["hash"]: path.parent.name for path in (tmp / "cache").glob("*/*.json")}
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp))) as client:
        yield client, run, hashes


def test_fixture_is_whole():
    assert len(_cases()) == len(_ncu()) == 9


def test_limiter_and_blocks_per_sm_equal_ncu(site):
    client, run, hashes = site
    by_folder = {c["cache"].rsplit("/", 1)[-1]: c for c in run["compilations"]}
    seen_limiters = set()
    for (name, digest), ncu in zip(_cases(), _ncu(), strict=True):
        compilation = by_folder[hashes[digest]]
        url = f"/runs/{run['run']}/c/{compilation['id']}"
        resources = client.get(url + ".json").json()["resources"]
        detail, limiter = resources["occupancy_detail"], resources["limiter"]
        assert resources["registers"] == int(_number(ncu["Registers Per Thread"])), name
        assert resources["shared_dynamic"] == int(_number(ncu["Dynamic Shared Memory Per Block"])), name
        ncu_bounds = {key: int(_number(ncu[metric])) for metric, key in NCU_LIMITS.items()}
        ncu_blocks = min(ncu_bounds.values())
        assert detail["blocks_per_sm"] == ncu_blocks, name
        assert resources["occupancy"] == int(_number(ncu["Theoretical Active Warps per SM"])), name
        # registers, warps and blocks bounds are ncu's own; shared memory against the carve-out the
        # driver chose for this launch (ncu's "Shared Memory Configuration Size")
        config = int(_number(ncu["Shared Memory Configuration Size"]))
        with_config = nvidia_occupancy(90, resources["registers"], resources["shared_bytes"],
                                       compilation["num_warps"], shared_config=config)
        assert with_config["bounds"] == ncu_bounds, name
        assert set(with_config["limited_by"]) == {key for key, value in ncu_bounds.items() if value == ncu_blocks}
        # what irlens names is one of ncu's limits (the driver may size its carve-out to tie with it)
        assert limiter["by"] and set(limiter["by"]) <= {k for k, v in ncu_bounds.items() if v == ncu_blocks}, name
        if config == detail["shared_per_sm"]:  # Triton asked for the largest carve-out (shared > 48 KB)
            assert detail["bounds"] == ncu_bounds, name
        html = client.get(url).text
        assert limiter["why"].split(" (")[0] in html and limiter["result"] in html
        seen_limiters.update(limiter["by"])
    assert seen_limiters == {"registers", "shared", "warps", "blocks"}


def test_register_bound_is_per_sub_partition():
    # 104 registers, one warp a block: 3,328 registers a warp; 4 warps fit each 16,384-register
    # sub-partition (16 a SM), not 65,536 / 3,328 = 19 (ncu: Block Limit Registers 16)
    assert nvidia_occupancy(90, 104, 8192, 1)["bounds"]["registers"] == 16
    assert nvidia_occupancy(90, 40, 0, 1)["bounds"]["registers"] == 48


def test_compare_names_each_sides_own_limiter(site):
    """Compare's "why they differ" says what each compilation's own page says limits it."""
    client, run, hashes = site
    by_case = {}
    by_folder = {c["cache"].rsplit("/", 1)[-1]: c for c in run["compilations"]}
    for name, digest in _cases():
        by_case[name] = by_folder[hashes[digest]]
    for left, right in (("mm_128x128x64_w8_s4", "mm_64x256x32_w4_s2"), ("poly_w32", "poly_w1")):
        a, b = by_case[left], by_case[right]
        limiters = [client.get(c["url"] + ".json").json()["resources"]["limiter"] for c in (a, b)]
        why = client.get(f"/compare/{run['run']}-{a['id']}..{run['run']}-{b['id']}.json").json()["why"]
        sentence = f"A: {limiters[0]['why']} → {limiters[0]['result']}; B: {limiters[1]['why']} → {limiters[1]['result']}"
        assert sentence in why["sentences"], why["sentences"]
    assert limiters[0]["by"] == ["registers", "warps"] and limiters[1]["by"] == ["blocks"]
