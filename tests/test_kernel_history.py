"""Kernel history across runs, flags and `irlens check`, on a real kernel compiled by two Tritons
(tests/fixtures/kernel_history: matmul_kernel for sm90 in two configs, by Triton 3.1.0 and 3.9.0).

The registers and spill bytes a user reads are checked against `cuobjdump -res-usage` of each
cubin (written beside it by make_fixture.py with the cuobjdump Triton bundles)."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.cli import main as irlens_main
from app.insight.kernel_flags import Thresholds, step_flags
from app.settings import Settings
from app.store.labels import LabelError, parse_labels, version_key
from app.store.models import Compilation, KernelPoint
from app.store.retention import delete_run
from app.web.app import create_app
from app.web.auth import create_token
from tests.conftest import FIXTURES, csrf_header, fresh_db_url

HERE = FIXTURES / "kernel_history"
T31, T39 = HERE / "triton31.tar.gz", HERE / "triton39.tar.gz"
JSON = {"Accept": "application/json"}


def cuobjdump_numbers(archive: Path) -> dict[str, tuple[int, int]]:
    """Cache folder hash -> (REG, STACK + LOCAL) from the cuobjdump -res-usage text beside each cubin."""
    found = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.name.endswith(".res-usage.txt"):
                text = tar.extractfile(member).read().decode()
                match = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", text)
                found[member.name.split("/")[-2]] = (int(match[1]), int(match[2]) + int(match[3]))
    assert len(found) == 2
    return found


def make_client(tmp_path: Path, **settings) -> TestClient:
    options = {"db_url": fresh_db_url(tmp_path), "data_dir": tmp_path / "data", "load_demo": False, **settings}
    return TestClient(create_app(Settings(**options)), follow_redirects=False)


def upload(client: TestClient, archive: Path, token: str | None = None, **fields) -> dict:
    with archive.open("rb") as handle:
        response = client.post("/runs", files=[("file", (archive.name, handle, "application/gzip"))], data=fields,
                               headers={**JSON, **({"Authorization": f"Bearer {token}"} if token else {})})
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
def client(tmp_path):
    with make_client(tmp_path) as client:
        yield client


def test_points_match_cuobjdump_and_specialisations_stay_apart(client):
    old = upload(client, T31, label="triton=3.1.0")
    new = upload(client, T39)
    assert old["labels"] == {"triton": "3.1.0"}
    assert new["labels"] == {"triton": "3.9.0"}  # filled in: every compilation of the run says 3.9.0
    history = client.get("/kernels/matmul_kernel.json").json()
    assert history["name"] == "matmul_kernel" and history["total_points"] == 4
    assert len(history["series"]) == 2  # two configs compiled in each run: never merged
    reference = cuobjdump_numbers(T31) | cuobjdump_numbers(T39)
    with client.app.state.db.session() as session:
        folders = {f"/runs/{run}/c/{ordinal}": key.rsplit("/", 1)[-1]
                   for run, ordinal, key in session.execute(select(Compilation.run_id, Compilation.ordinal,
                                                                   Compilation.cache_key))}
    configs = set()
    for series in history["series"]:
        assert series["target"] == "cuda:90"
        configs.add((series["config"]["tile"], series["config"]["num_warps"]))
        assert [point["labels"]["triton"] for point in series["points"]] == ["3.1.0", "3.9.0"]
        for point in series["points"]:
            assert (point["registers"], point["spill_bytes"]) == reference[folders[point["compilation"]]]
            assert point["status"] == "ok" and point["ir_lines"]["ttgir"] > 0 and point["ir_lines"]["sass"] > 0
            assert point["ops"].get("mma")  # the final TTGIR's tt.dot lowered to an MMA op
    assert configs == {("256x256x64", 4), ("128x128x64", 8)}


def test_the_spill_change_is_flagged_with_its_compare_link(client):
    upload(client, T39, label="triton=3.9.0")
    upload(client, T31, label="triton=3.1.0")  # uploaded later: run order goes 3.9 -> 3.1
    history = client.get("/kernels/matmul_kernel.json").json()
    for series in history["series"]:
        [spill] = [flag for flag in series["flags"] if flag["metric"] == "spills"]
        before, after = series["points"][0], series["points"][1]
        assert (spill["before"], spill["after"], spill["direction"]) == (before["spill_bytes"], after["spill_bytes"], "worse")
        assert spill["from_run"] == before["run"] and spill["to_run"] == after["run"]
        assert spill["compare"] == f"/compare/{before['compilation_id']}..{after['compilation_id']}"
        assert client.get(spill["compare"] + ".json").status_code == 200
    # In Triton version order the steps go 3.1 -> 3.9: the same change, now better.
    ordered = client.get("/kernels/matmul_kernel.json?order=label:triton").json()
    for series in ordered["series"]:
        assert [p["labels"]["triton"] for p in series["points"]] == ["3.1.0", "3.9.0"]
        assert {flag["direction"] for flag in series["flags"] if flag["metric"] == "spills"} == {"better"}
    page = client.get("/kernels/matmul_kernel").text
    assert 'class="flag-mark worse"' in page and "/compare/" in page
    listing = client.get("/kernels.json?q=matmul").json()
    assert [k["name"] for k in listing["kernels"]] == ["matmul_kernel"] and listing["kernels"][0]["runs"] == 2
    assert client.get("/kernels.json?q=nothing_like_it").json()["kernels"] == []


def test_irlens_check_exits_1_when_worse_and_0_when_better(tmp_path, capsys):
    worse_db, better_db = fresh_db_url(tmp_path / "w"), fresh_db_url(tmp_path / "b")
    (tmp_path / "w").mkdir(exist_ok=True), (tmp_path / "b").mkdir(exist_ok=True)
    assert irlens_main(["check", "--db", worse_db, str(T39)]) == 0  # nothing to compare with: all new
    capsys.readouterr()
    assert irlens_main(["check", "--db", worse_db, "--json", "--label", "triton=3.1.0", str(T31)]) == 1
    import json

    result = json.loads(capsys.readouterr().out)
    assert {flag["metric"] for flag in result["regressions"]} == {"spills"} and not result["new_kernels"]
    assert all(flag["kernel"] == "matmul_kernel" and flag["compare"].startswith("/compare/")
               and flag["config"]["tile"] for flag in result["regressions"])
    # Only register regressions fail this one: the spills are still reported, but pass.
    assert irlens_main(["check", "--db", worse_db, "--fail-on", "registers", "--baseline",
                        result["baseline"]["runs"][0]["run"], str(T31)]) == 0
    assert irlens_main(["check", "--db", better_db, str(T31)]) == 0
    assert irlens_main(["check", "--db", better_db, "--format", "markdown", str(T39)]) == 0
    text = capsys.readouterr().out
    assert "#### Improvements (2)" in text and "| spills" in text and "Regressions" not in text
    # Usage and input errors: 2.
    assert irlens_main(["check", "--db", better_db, "--baseline", "nosuchrun", str(T39)]) == 2
    assert irlens_main(["check", "--db", better_db, "--fail-on", "colour", str(T39)]) == 2
    assert irlens_main(["check", "--db", better_db, str(tmp_path / "missing")]) == 2
    assert irlens_main(["check", "--db", better_db, "--label", "no-equals", str(T39)]) == 2


def test_label_baseline_and_missing_kernels(client):
    main = upload(client, T31, label=["branch=main", "triton=3.1.0"])
    upload(client, T39, label="branch=feature")
    mine = upload(client, T39, label="branch=pr")
    check = client.get(f"/runs/{mine['run']}/check.json?baseline=label:branch=main").json()
    assert [entry["run"] for entry in check["baseline"]["runs"]] == [main["run"]]
    assert len(check["improvements"]) == 2 and not check["regressions"] and not check["failed"]
    default = client.get(f"/runs/{mine['run']}/check.json").json()  # the latest earlier run: feature, the same
    assert not default["improvements"] and not default["regressions"]
    assert client.get(f"/runs/{mine['run']}/check.json?baseline=label:branch").status_code == 422
    markdown = client.get(f"/runs/{mine['run']}/check?baseline=label:branch=main&format=markdown")
    assert markdown.headers["content-type"].startswith("text/markdown") and "[compare](http" in markdown.text


def test_labels_are_editable_and_searchable(client):
    run = upload(client, T31, label="triton=3.1.0", title="labelled")
    found = client.get("/search.json?q=label:triton=3.1.0").json()
    assert [r["run"] for r in found["runs"]] == [run["run"]]
    assert client.get("/search.json?q=label:triton=3.9.0").json()["runs"] == []
    assert [r["run"] for r in client.get("/search.json?q=label:triton").json()["runs"]] == [run["run"]]
    changed = client.patch(f"/runs/{run['run']}", json={"labels": {"triton": "3.1.0", "commit": "abc123"}},
                           headers=csrf_header(client))
    assert changed.status_code == 200 and changed.json()["labels"] == {"triton": "3.1.0", "commit": "abc123"}
    assert client.get(f"/runs/{run['run']}.json").json()["labels"]["commit"] == "abc123"
    bad = client.patch(f"/runs/{run['run']}", json={"labels": {"bad key": "x"}}, headers=csrf_header(client))
    assert bad.status_code == 422
    page = client.get(f"/runs/{run['run']}", headers={"Accept": "text/html"}).text
    assert "commit=abc123" in page and "/kernels/matmul_kernel" in page


def test_history_sees_only_what_search_sees_and_deleting_a_run_removes_its_points(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        with client.app.state.db.session() as session:
            alice, bob = create_token(session, "alice"), create_token(session, "bob")
            session.commit()
        private = upload(client, T31, alice, label="triton=3.1.0")
        listed = upload(client, T39, bob, listed="1")
        as_bob = {"Authorization": f"Bearer {bob}"}
        history = client.get("/kernels/matmul_kernel.json", headers=as_bob).json()
        assert {p["run"] for s in history["series"] for p in s["points"]} == {listed["run"]}
        assert [k["runs"] for k in client.get("/kernels.json", headers=as_bob).json()["kernels"]] == [1]
        check = client.get(f"/runs/{listed['run']}/check.json", headers=as_bob).json()
        assert len(check["new_kernels"]) == 2  # alice's unlisted run is no baseline for bob
        anonymous = client.get("/kernels.json").json()
        assert [k["runs"] for k in anonymous["kernels"]] == [1]
        assert client.get("/kernels", headers={"Accept": "text/html"}).status_code == 200  # drawn from the kept list
        assert client.get("/kernels.json").json()["cached"] is True
        unlisted = client.patch(f"/runs/{listed['run']}", json={"listed": False}, headers=as_bob)
        assert unlisted.status_code == 200, unlisted.text
        assert client.get("/kernels.json").json()["kernels"] == []  # the kept list went with the change
        assert "sparkline_svg" not in client.get("/kernels.json", headers=as_bob).json()["kernels"][0]
        assert client.patch(f"/runs/{listed['run']}", json={"listed": True}, headers=as_bob).status_code == 200
        as_alice = {"Authorization": f"Bearer {alice}"}
        assert client.get("/kernels/matmul_kernel.json", headers=as_alice).json()["total_points"] == 4
        delete_run(client.app.state.db, private["run"], "test:")
        assert client.get("/kernels/matmul_kernel.json", headers=as_alice).json()["total_points"] == 2
        with client.app.state.db.session() as session:
            assert session.scalar(select(func.count()).select_from(KernelPoint)
                                  .where(KernelPoint.run_id == private["run"])) == 0
        assert client.get("/kernels/no_such_kernel.json", headers=as_alice).status_code == 404


def test_version_order_and_label_parsing():
    versions = ["3.10.0", "3.9.1", "3.7.1", "3.7.1rc1", "3.7", None, "main"]
    assert sorted(versions, key=version_key) == ["3.7", "3.7.1rc1", "3.7.1", "3.9.1", "3.10.0", "main", None]
    assert parse_labels(["triton=3.7.1", "commit=abc, branch=main", "commit="]) == {"triton": "3.7.1", "branch": "main"}
    with pytest.raises(LabelError):
        parse_labels(["just-a-word"])


def test_step_flags_follow_the_thresholds():
    base = {"status": "ok", "registers": 100, "spill_bytes": 0, "occupancy": 16, "time_ns": 1000.0,
            "ops": {"mma": 2, "tma": 1}}
    same = step_flags(base, {**base, "registers": 104, "time_ns": 1040.0}, Thresholds())
    assert same == []  # under 5 %
    flags = {f["metric"]: f for f in step_flags(base, {**base, "registers": 105, "time_ns": 900.0, "spill_bytes": 8,
                                                         "occupancy": 8, "ops": {"mma": 2, "barrier": 1}},
                                               Thresholds())}
    assert flags["registers"]["direction"] == "worse" and flags["time"]["direction"] == "better"
    assert flags["spills"]["direction"] == "worse" and flags["occupancy"]["direction"] == "worse"
    assert [f["detail"] for f in step_flags(base, {**base, "ops": {"mma": 2}}, Thresholds())] == ["op group tma vanished"]
    assert step_flags(base, {**base, "time_ns": None}, Thresholds()) == []  # time needs both profiles
    failed = step_flags(base, {"status": "failed"}, Thresholds())
    assert [(f["metric"], f["direction"]) for f in failed] == [("status", "worse")]
    assert step_flags(base, {**base, "registers": 120}, Thresholds(registers_percent=25)) == []


def test_irlens_check_on_a_server_with_a_token(tmp_path):
    """`irlens check --server URL --token T` against a real `irlens serve` requiring tokens."""
    import json
    import subprocess
    import sys

    from bench.server import serve

    db_url = fresh_db_url(tmp_path)
    with serve(db_url, tmp_path / "data", env={"IRLENS_REQUIRE_TOKEN": "true"}) as (url, _log):
        made = subprocess.run([sys.executable, "-m", "app.cli", "token", "create", "ci", "--db", db_url],
                              capture_output=True, text=True, check=True)
        token = made.stdout.strip().splitlines()[-1]

        def check(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "app.cli", "check", "--server", url, "--token", token, *args],
                                  capture_output=True, text=True, timeout=600, check=False)

        first = check("--label", "branch=main", "--json", str(T39))
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["labels"] == {"branch": "main", "triton": "3.9.0"}
        worse = check("--baseline", "label:branch=main", "--format", "markdown", str(T31))
        assert worse.returncode == 1, worse.stderr
        assert f"[compare]({url}/compare/" in worse.stdout and "spills ❌" in worse.stdout
        refused = subprocess.run([sys.executable, "-m", "app.cli", "check", "--server", url, "--token", "irl_forged",
                                  str(T31)], capture_output=True, text=True, timeout=600, check=False)
        assert refused.returncode == 2 and "401" in refused.stderr


def test_a_compile_that_starts_failing_is_a_status_step_of_its_series(client):
    """A failed compile has no cache metadata, so its config names the tile (from its TTIR dump) but
    not the warps: it joins the one series it fits, and the step is flagged `status`."""
    from datetime import UTC, datetime

    from app.insight.kernel_points import series_key
    from app.store.models import Run

    upload(client, T31, label="triton=3.1.0")
    with client.app.state.db.session() as session:
        run = Run(id="f" * 32, title="failed", created_at=datetime(2030, 1, 1, tzinfo=UTC), labels={"triton": "3.9.0"},
                  points_version=1)
        session.add(run)
        session.flush()
        compilation = Compilation(run_id=run.id, ordinal=1, kernel="matmul_kernel", origin="log", target="cuda:90",
                                  status="failed", counts={}, changed=0)
        session.add(compilation)
        session.flush()
        config = {"tile": "256x256x64"}
        session.add(KernelPoint(compilation_pk=compilation.pk, run_id=run.id, created_at=run.created_at,
                                kernel="matmul_kernel", target="cuda:90", series=series_key(config), config=config,
                                status="failed", ir_lines={}, ops={}))
        session.commit()
    history = client.get("/kernels/matmul_kernel.json").json()
    assert len(history["series"]) == 2
    [home] = [s for s in history["series"] if s["config"]["tile"] == "256x256x64"]
    assert [p["status"] for p in home["points"]] == ["ok", "failed"]
    assert [(f["metric"], f["direction"]) for f in home["flags"]] == [("status", "worse")]
    check = client.get(f"/runs/{'f' * 32}/check.json").json()
    assert [(f["metric"], f["config"]) for f in check["regressions"]] == [("status", config)] and check["failed"]
    assert len(check["missing_kernels"]) == 1  # the 128x128 config, not compiled at all this time


def test_corpus_matmul_across_triton_31_and_39_names_the_compare_pages_first_effect_pass(client):
    """The corpus's matmul_kernel for sm90 from Triton 3.1.0 and 3.9.0 logs with pass dumps: each flag's
    first_effect_pass is the one the compare page of its two compilations names."""
    from tests.conftest import corpus_archive

    old = upload(client, corpus_archive("old_3.1_sm90"), label="triton=3.1.0")
    new = upload(client, corpus_archive("sm90_mix"))
    assert new["labels"]["triton"] == "3.9.0"
    # on a database other tests share (PostgreSQL), earlier runs of the same kernel may come first
    [series] = [s for s in client.get("/kernels/matmul_kernel.json").json()["series"]
                if s["config"].get("tile") and old["run"] in {p["run"] for p in s["points"]}]
    assert [p["run"] for p in series["points"]][-2:] == [old["run"], new["run"]]
    step = [flag for flag in series["flags"] if (flag["from_run"], flag["to_run"]) == (old["run"], new["run"])]
    flags = {flag["metric"]: flag for flag in step}
    assert flags["spills"]["direction"] == "better" and flags["spills"]["after"] == 0
    compare = client.get(flags["spills"]["compare"] + ".json").json()
    assert flags["spills"]["first_effect_pass"] == compare["summary"]["first_effect_divergence"]["pass"]
    assert all(flag["first_effect_pass"] == flags["spills"]["first_effect_pass"] for flag in step)


def test_index_backfill_writes_the_points_of_runs_stored_before_them(tmp_path, capsys):
    db_url = fresh_db_url(tmp_path)
    assert irlens_main(["ingest", "--db", db_url, "--quiet", str(T31)]) == 0
    from app.store.db import Database
    from app.store.models import Run

    database = Database(db_url)
    try:
        with database.session() as session:
            session.query(KernelPoint).delete()  # as a run stored before kernel history was
            session.query(Run).update({Run.points_version: None})
            session.commit()
        capsys.readouterr()
        assert irlens_main(["index", "--db", db_url, "--backfill", "--quiet"]) == 0
        assert "kernel history: 2 points added" in capsys.readouterr().out
        with database.session() as session:
            assert sorted(session.scalars(select(KernelPoint.spill_bytes))) == sorted(
                stack for _, stack in cuobjdump_numbers(T31).values())
    finally:
        database.dispose()


def test_a_run_whose_points_cannot_be_written_is_marked_and_the_pages_still_answer(client, monkeypatch):
    from app.insight import kernel_points
    from app.store.models import Run

    upload(client, T31)
    assert client.get("/kernels/matmul_kernel.json").json()["total_points"] == 2

    def broken(session, run):
        raise RuntimeError("a compilation nobody foresaw")

    monkeypatch.setattr(kernel_points, "compute_points", broken)
    bad = upload(client, T39)
    assert client.get("/kernels/matmul_kernel.json").json()["total_points"] == 2
    assert client.get("/kernels.json").status_code == 200
    with client.app.state.db.session() as session:
        assert session.get(Run, bad["run"]).points_version == kernel_points.FAILED


def test_the_ingest_itself_writes_no_points(db):
    from app.insight.kernel_points import ensure_points
    from app.store.models import Run
    from tests.conftest import ingest_paths

    run = ingest_paths(db, [T31], labels={"commit": "abc"})
    with db.session() as session:
        assert session.get(Run, run["run"]).points_version is None
        assert session.scalar(select(func.count()).select_from(KernelPoint)) == 0
        assert ensure_points(session) == 2 and session.get(Run, run["run"]).points_version == 1
        assert ensure_points(session) == 0  # once


def test_time_per_launch_is_the_proton_profiles_mean(client):
    """A point's time_ns: the Proton timing profile's kernel time over its launch count, read here
    straight from the hatchet JSON (tests/fixtures/gpu_runs: an H100 run)."""
    import json

    archive = FIXTURES / "gpu_runs" / "proton.tar.xz"
    with tarfile.open(archive) as tar:
        tree = json.loads(tar.extractfile("proton/timing/profile.hatchet").read())[0]
    sums: dict[str, list[float]] = {}

    def walk(node) -> None:  # kernel frames: those counting launches; "attn_fwd_tma [ZH=8, ...]" is attn_fwd_tma
        name, metrics = node["frame"]["name"].split(" [")[0], node.get("metrics", {})
        if metrics.get("count") and "time (ns)" in metrics:
            total = sums.setdefault(name, [0.0, 0])
            total[0] += metrics["time (ns)"]
            total[1] += metrics["count"]
            return
        for child in node.get("children", []):
            walk(child)

    walk(tree)
    upload(client, archive)
    for kernel in ("matmul_tma_devdesc", "attn_fwd_tma"):
        time_ns, count = sums[kernel]
        times = [p["time_ns"] for s in client.get(f"/kernels/{kernel}.json").json()["series"] for p in s["points"]]
        assert any(t is not None and t == pytest.approx(time_ns / count) for t in times), (kernel, times)
