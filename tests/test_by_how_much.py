"""Compare states by how much (issue 33): its first sentence is B's time over A's, with the source of
each number, checked against Nsight Compute's own `gpu__time_duration.sum` (raw.csv of
tests/fixtures/gpu_runs/ncu.tar.xz, read here): config 0 ran 10,528 ns, the spilling config 2 91,552 ns.
And the run page's profiles give the mean per launch and the achieved rates of Proton's timing."""

from __future__ import annotations

import csv
import io
import json
import re
import tarfile

import pytest

from tests.conftest import FIXTURES
from tests.test_snapshot_pages import make_site

NCU = FIXTURES / "gpu_runs" / "ncu.tar.xz"
PROTON = FIXTURES / "gpu_runs_i33" / "proton.tar.xz"


def ncu_durations() -> list[tuple[str, float]]:
    with tarfile.open(NCU) as tar:
        rows = list(csv.reader(io.StringIO(tar.extractfile("ncu/raw.csv").read().decode())))  # type: ignore[union-attr]
    name, time = rows[0].index("Kernel Name"), rows[0].index("gpu__time_duration.sum")
    assert rows[1][time] == "us"
    return [(row[name], float(row[time]) * 1000) for row in rows[2:]]


def test_compare_first_sentence_is_the_ratio_of_measured_times(tmp_path):
    client, run = make_site(tmp_path, [NCU])
    (a_ns, _), (b_ns, _) = [(ns, name) for name, ns in ncu_durations() if name == "matmul_kernel"]
    with client:
        data = client.get(run["url"] + ".json").json()
        mm = [c for c in data["compilations"] if c["kernel"] == "matmul_kernel" and c["num_warps"]]
        assert len(mm) == 2
        spec = "..".join(c["url"].split("/")[2] + "-" + str(c["id"]) for c in mm)
        why = client.get(f"/compare/{spec}.json").json()["why"]
        first = why["sentences"][0]
        times = sorted([why["times"]["a_used"]["ns_per_launch"], why["times"]["b_used"]["ns_per_launch"]])
        assert times == pytest.approx(sorted([a_ns, b_ns]))
        ratio = why["times"]["ratio_b_over_a"]
        assert max(ratio, 1 / ratio) == pytest.approx(b_ns / a_ns, rel=1e-3)  # 8.70
        assert f"{b_ns / a_ns:.2f}×" in first and "ncu" in first and f"{a_ns:,.0f} ns" in first
        html = client.get(f"/compare/{spec}").text
        assert f"{b_ns / a_ns:.2f}×" in html


def hatchet(member: str) -> list:
    with tarfile.open(PROTON) as tar:
        return json.loads(tar.extractfile(member).read())  # type: ignore[union-attr]


def test_profiles_give_the_mean_per_launch_and_achieved_rates(tmp_path):
    client, run = make_site(tmp_path, [PROTON])
    tree = hatchet("proton/timing/profile.hatchet")[0]
    expected = {}
    for scope in tree["children"]:
        for kernel in scope["children"]:
            m = kernel["metrics"]
            if "flops16" in m:
                expected[scope["frame"]["name"]] = (m["time (ns)"] / m["count"], m["flops16"] / m["time (ns)"] / 1e3,
                                                    m["bytes"] / m["time (ns)"])
    with client:
        data = client.get(run["url"] + ".json").json()
        html = client.get(run["url"]).text
    (profile,) = [p for p in data["profiles"] if p["path"].endswith("timing/profile.hatchet")]
    got = {k["scope"]: (k["mean_ns"], k["tflops"], k["gbps"]) for k in profile["kernels"] if k["tflops"]}
    assert set(got) == set(expected) == {"autotune", "steady"}
    for scope, values in expected.items():
        assert got[scope] == pytest.approx(values)
    steady = expected["steady"]
    assert f"{steady[0]:,.0f} ns" in html and f"{steady[1]:.1f}" in html and "achieved TFLOP/s" in html
    assert re.search(r"<td class=\"mono small\">steady</td>", html)
