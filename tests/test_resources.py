"""Resources of each compilation (registers, local bytes, shared memory, occupancy): the cubin parser
against `cuobjdump -res-usage` (committed output for committed cubins, and the tool run live when
Triton's wheel bundles it), the AMDGCN numbers against the .amdgcn text, and what the compilation
page and its JSON say after a real ingest."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.ingest.disassembler import _bundled_tools
from app.insight.resources import nvidia_occupancy
from app.settings import Settings
from app.store.db import Database
from app.web.app import create_app
from parsers.caches.cubin import parse_res_usage, read_cubin
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths

CUBINS = FIXTURES / "cubin"


def _cubin_of(reference: Path) -> Path:
    """sm90_x.res-usage.txt is about cubin/sm90_x.cubin; sass_sm80_x.res-usage.txt about sass/sm80_x.cubin."""
    name = reference.name.removesuffix(".res-usage.txt")
    return FIXTURES / "sass" / f"{name.removeprefix('sass_')}.cubin" if name.startswith("sass_") else CUBINS / f"{name}.cubin"


REFERENCES = [(_cubin_of(path), path) for path in sorted(CUBINS.glob("*.res-usage.txt"))]
CUOBJDUMP = next((str(tool) for tool in _bundled_tools() if tool.name == "cuobjdump" and tool.is_file()),
                 shutil.which("cuobjdump"))


def _check(cubin: Path, reference: str) -> None:
    expected = parse_res_usage(reference)
    kernels, problem = read_cubin(cubin.read_bytes())
    assert problem is None and expected and set(kernels) == set(expected)
    for name, usage in expected.items():
        got = kernels[name]
        assert (got.registers, got.stack, got.local, got.shared_static) == (
            usage["REG"], usage["STACK"], usage["LOCAL"], usage["SHARED"]), name


@pytest.mark.parametrize("cubin, reference", REFERENCES, ids=[cubin.stem for cubin, _ in REFERENCES])
def test_cubin_resources_equal_committed_cuobjdump_output(cubin, reference):
    _check(cubin, reference.read_text())


def test_the_fixtures_hold_spills_and_several_targets():
    stacks = {cubin.stem: parse_res_usage(ref.read_text())["matmul_kernel"]["STACK"]
              for cubin, ref in REFERENCES}
    assert stacks["sm90_matmul_w4_spill"] > 0 and stacks["sm90_matmul_maxnreg128"] > 0 and stacks["sm90_matmul_w8"] == 0
    assert len(REFERENCES) >= 5


@pytest.mark.skipif(CUOBJDUMP is None, reason="no cuobjdump (Triton's wheel bundles one)")
def test_cubin_resources_equal_live_cuobjdump_on_corpus_and_fixtures(unpacked_corpus):
    cubins = [cubin for cubin, _ in REFERENCES]
    cubins += sorted((unpacked_corpus / "gpu_autotune").rglob("*.cubin"))
    assert len(cubins) >= 9
    for cubin in cubins:
        done = subprocess.run([CUOBJDUMP, "-res-usage", str(cubin)], capture_output=True, text=True, check=True)
        _check(cubin, done.stdout)


def test_a_damaged_cubin_gives_a_reason_not_an_exception():
    data = (CUBINS / "sm90_matmul_w8.cubin").read_bytes()
    assert read_cubin(data[:200]) == ({}, "the cubin's section table is damaged")
    assert read_cubin(b"not elf")[1] == "not an ELF file"


def test_occupancy_follows_the_cuda_calculator():
    # 205 registers: 6560 a warp, allocated as 6656 (26 units of 256); 8 warps need 53248 of 65536: 1 block
    one = nvidia_occupancy(90, 205, 147456 + 1024, 8)
    assert (one["blocks_per_sm"], one["warps_per_sm"]) == (1, 8) and "registers" in one["limited_by"]
    # 96 registers, 4 warps: 3072 a warp, 5 blocks by registers; shared 50176+1024 a block: 4 blocks of 228 KB
    four = nvidia_occupancy(90, 96, 49152 + 1024, 4)
    assert (four["blocks_per_sm"], four["warps_per_sm"], four["limited_by"]) == (4, 16, ["shared"])
    # sm86: 48 warps at most, 16 blocks
    assert nvidia_occupancy(86, 32, 0, 1)["blocks_per_sm"] == 16
    assert nvidia_occupancy(86, 32, 0, 8)["warps_per_sm"] == 48


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resources")
    cache = tmp / "cache"
    for name in ("sm90_matmul_w8", "sm90_matmul_w4_spill"):
        folder = cache / base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()[:52]  # a cache folder's name
        folder.mkdir(parents=True)
        shutil.copy(CUBINS / f"{name}.cubin", folder / "matmul_kernel.cubin")
        shutil.copy(CUBINS / f"{name}.json", folder / "matmul_kernel.json")
    url = fresh_db_url(tmp)
    database = Database(url)
    try:
        runs = {"fixtures": ingest_paths(database, [cache])}
        for name in ("gfx942_mix", "gpu_autotune"):
            runs[name] = ingest_paths(database, [corpus_archive(name)])
    finally:
        database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp))) as client:
        yield client, runs


def _pages(client, run: dict):
    for compilation in run["compilations"]:
        url = f"/runs/{run['run']}/c/{compilation['id']}"
        yield url, client.get(url + ".json").json(), client.get(url).text


def test_the_compilation_page_shows_spills_from_the_cubin(site):
    client, runs = site
    seen = {}
    for _url, data, html in _pages(client, runs["fixtures"]):
        resources = data["resources"]
        seen[data["num_warps"]] = resources
        if resources["local_bytes"]:
            assert 'class="badge warn spills"' in html and ">spills<" in html
            assert f"{resources['local_bytes']} B" in html
    w4 = parse_res_usage((CUBINS / "sm90_matmul_w4_spill.res-usage.txt").read_text())["matmul_kernel"]
    w8 = parse_res_usage((CUBINS / "sm90_matmul_w8.res-usage.txt").read_text())["matmul_kernel"]
    assert (seen[4]["registers"], seen[4]["local_bytes"], seen[4]["spills"]) == (w4["REG"], w4["STACK"], True)
    assert (seen[8]["registers"], seen[8]["local_bytes"], seen[8]["spills"]) == (w8["REG"], 0, False)
    # cuobjdump's SHARED is the driver's reserved 1 KB on sm90 (ncu: "Driver Shared Memory Per Block")
    assert seen[4]["shared_bytes"] + seen[4]["shared_reserved"] == 49152 + w4["SHARED"]
    assert seen[4]["shared_reserved"] == 1024 and seen[4]["occupancy"] is not None


def test_amd_resources_are_the_amdgcn_own_numbers(site, unpacked_corpus):
    client, runs = site
    texts = {path.parent.name: path.read_text() for path in (unpacked_corpus / "gfx942_mix").rglob("*.amdgcn")}
    checked = 0
    for _url, data, html in _pages(client, runs["gfx942_mix"]):
        text = texts[data["cache"].rsplit("/", 1)[-1]]
        resources = data["resources"]
        compiler = int(re.search(r"^; Occupancy: (\d+)$", text, re.MULTILINE).group(1))
        assert resources["compiler_occupancy"] == compiler
        # Triton's LDS is dynamic, unseen by the compiler ("LDSByteSize: 0 bytes/workgroup (compile time
        # only)"): 64 KB of a gfx942 CU hold 65536 // shared workgroups, their waves spread over 4 SIMDs
        assert "LDSByteSize: 0 bytes/workgroup (compile time only)" in text
        by_lds = -(-(65536 // data["shared"]) * data["num_warps"] // 4) if data["shared"] else compiler
        assert resources["occupancy"] == min(compiler, by_lds)
        assert resources["limiter"]["result"] == f"{resources['occupancy']} wave{'s' if resources['occupancy'] != 1 else ''}/SIMD"
        assert resources["limiter"]["why"] in html
        assert resources["vgprs"] == int(re.search(r"\.vgpr_count:\s+(\d+)", text).group(1))
        assert resources["sgprs"] == int(re.search(r"\.sgpr_count:\s+(\d+)", text).group(1))
        assert f"{resources['vgprs']} VGPRs" in html
        checked += 1
    assert checked == 4
