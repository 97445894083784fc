"""Autotuning and resources on the real H100 runs in tests/fixtures/gpu_runs (README there), checked
against the runs' own output, read here independently: cuobjdump -res-usage of every cubin, the
autotuner's `best config selected:` and `Autotuning failed with` lines, inductor's AUTOTUNE tables
and its `Autotune Choices Stats` JSON. Also an interleaved copy of the inductor log, with real dump
lines written into the middle of its choice lines as concurrent compile threads do."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_snapshot_pages import make_site

RUNS = REPO / "tests" / "fixtures" / "gpu_runs"
CONFIG = re.compile(r"BLOCK_M: (\d+), BLOCK_N: (\d+), BLOCK_K: (\d+), GROUP_M: (\d+), num_warps: (\d+), "
                    r"num_ctas: (\d+), num_stages: (\d+), maxnreg: (\w+)")
CHOICE = re.compile(r"^  (\w+) (\S+) ms (\S+)%(.*)$")


def member(archive: str, name: str) -> str:
    with tarfile.open(RUNS / archive, "r:xz") as tar:
        return tar.extractfile(name).read().decode()  # type: ignore[union-attr]


def res_usage(archive: str) -> dict[str, tuple[int, int, int]]:
    """cache hash -> (REG, STACK, LOCAL) from the run's own `cuobjdump -res-usage` files."""
    found = {}
    with tarfile.open(RUNS / archive, "r:xz") as tar:
        for info in tar:
            if info.name.endswith(".res-usage.txt"):
                text = tar.extractfile(info).read().decode()  # type: ignore[union-attr]
                reg, stack, local = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", text).groups()
                found[Path(info.name).name.split("_", 1)[0]] = (int(reg), int(stack), int(local))
    return found


@pytest.fixture(scope="module")
def triton_run(tmp_path_factory):
    client, run = make_site(tmp_path_factory.mktemp("autotune"), [RUNS / "autotune.tar.xz"])  # the archive as uploaded
    with client:
        data = client.get(f"/runs/{run['run']}.json").json()
        details = {c["id"]: client.get(c["url"] + ".json").json() for c in data["compilations"]}
        yield client, data, details, member("autotune.tar.xz", "autotune/run.log")


def test_every_cubin_resources_equal_cuobjdump(triton_run):
    client, data, details, _ = triton_run
    reference = res_usage("autotune.tar.xz")
    with_cubin = [c for c in data["compilations"] if "cubin" in c["artifacts"]]
    assert len(reference) == 5 and len(with_cubin) == 5
    for compilation in with_cubin:
        reg, stack, local = reference[compilation["cache"].rsplit("/", 1)[-1]]
        resources = details[compilation["id"]]["resources"]
        assert (resources["registers"], resources["stack"], resources["local"]) == (reg, stack, local)
        assert resources["spills"] == bool(stack or local)
    assert any(stack for _, stack, _ in reference.values())  # the spilling config is among them
    # the run's compilation list shows them, the spill highlighted
    html = client.get(data["url"]).text
    table = html[html.index('id="compilations-table"'):html.index("</table>", html.index('id="compilations-table"'))]
    for reg, stack, _ in reference.values():
        assert f"{reg} regs" in table
    assert table.count('class="badge warn spills"') == sum(1 for _, stack, local in reference.values() if stack or local)


def bench_configs(log: str) -> list[tuple[int, tuple, str | None]]:
    """(line, config, failure message) of each `Autotuning kernel ... with config` line."""
    out: list[tuple[int, tuple, str | None]] = []
    for number, line in enumerate(log.split("\n"), start=1):
        if line.startswith("Autotuning kernel "):
            out.append((number, CONFIG.search(line).groups(), None))
        elif line.startswith("Autotuning failed with "):
            out[-1] = (*out[-1][:2], line.removeprefix("Autotuning failed with ").strip())
    return out


def as_tuple(config: dict) -> tuple:
    return tuple(str(config[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_ctas",
                                          "num_stages", "maxnreg"))


def test_winners_failures_and_distinct_configs(triton_run):
    client, data, details, log = triton_run
    benches = bench_configs(log)
    best = re.findall(r"with key as (.*),\nfinished after [\d.]+s,\nbest config selected: (.*);", log)
    assert len(best) == 2 and len(benches) == 10
    # Each config's compilation is the one whose dumps follow its first `Autotuning kernel` line.
    first_key = benches[:5]
    config_of = {}
    for compilation in data["compilations"]:
        if not details[compilation["id"]]["snapshots"]:
            continue  # the archive's cuobjdump/*.sass, read as a cache-only entry
        start = details[compilation["id"]]["snapshots"][0]["log_line"]
        (config,) = [c for n, (line, c, _) in enumerate(first_key)
                     if line < start < (first_key[n + 1][0] if n + 1 < 5 else 1 << 40)]
        config_of[compilation["id"]] = config
    failed = {c for _, c, error in benches if error}
    assert len(failed) == 1 and len(set(config_of.values())) == 5
    by_key = {entry["key"]: entry for entry in data["autotune"] if entry["kind"] == "triton"}
    variants = {v["id"]: v for v in data["variants"][0]["variants"]}
    for key, best_text in best:
        entry = by_key[key]
        winner = CONFIG.search(best_text).groups()
        (won,) = [i for i, c in config_of.items() if c == winner]
        assert entry["best_compilation"] == details[won]["url"]
        assert variants[won]["autotune_won"]
        assert [as_tuple(c["config"]) for c in entry["choices"]] == [c for _, c, _ in benches[:5]]
        for choice in entry["choices"]:
            error = next(e for _, c, e in benches if c == as_tuple(choice["config"]))
            assert (choice["status"] == "failed") == bool(error) and choice["error"] == error
    for compilation, config in config_of.items():
        row = variants[compilation]
        if config in failed:
            assert not row["autotune_won"] and {t["status"] for t in row["autotune_times"]} == {"failed"}
            assert len(row["autotune_times"]) == 2  # shown once per key, not dropped
        elif config not in {CONFIG.search(b).groups() for _, b in best}:
            assert not row["autotune_won"]
    # configs that differ never look identical, in the JSON and in the table's text
    assert len({tuple(sorted(v["config"].items())) for v in variants.values()}) == 5
    html = client.get(data["url"]).text
    cells = re.findall(r'<td class="config">(.*?)</td>', html)
    assert len(cells) == 5 and len(set(cells)) == 5
    assert html.count('class="badge ok winner"') == 1 and html.count("autotune-failed") == 2


def inductor_tables(log: str) -> list[dict]:
    """Each AUTOTUNE table as printed: op, its choice rows, and the Stats JSON printed before it."""
    tables, stats = [], None
    lines = log.split("\n")
    for number, line in enumerate(lines):
        if line.startswith("{\"num_choices\""):
            stats = json.loads(line)
        elif line.startswith("AUTOTUNE "):
            tables.append({"op": line.split()[1].split("(")[0], "stats": stats, "rows": []})
        elif tables and CHOICE.match(line) and "SingleProcess" not in lines[number - 1]:
            name, time, percent, description = CHOICE.match(line).groups()
            config = dict(item.split("=", 1) for item in description.strip().split(", ")) if description.strip() else {}
            tables[-1]["rows"].append((name, float(time), float(percent), {k: v.strip("'") for k, v in config.items()}))
    return tables


def as_strings(config: dict) -> dict:
    return {k: str(v) for k, v in config.items()}


def check_inductor(data: dict, log: str) -> list[dict]:
    expected = inductor_tables(log)
    tables = [e for e in data["autotune"] if e["kind"] == "inductor"]
    assert [t["op"] for t in tables] == [t["op"] for t in expected] == ["mm", "addmm"]
    for table, reference in zip(tables, expected, strict=True):
        assert len(reference["rows"]) == 10
        got = [(c["name"], c["time_ms"], c["percent"], as_strings(c["config"])) for c in table["choices"]]
        assert got == reference["rows"]
        fastest = min(reference["rows"], key=lambda row: row[1])[0]
        assert table["winner"] == fastest == reference["stats"]["best_kernel"]
    return tables


def test_inductor_tables_every_choice(tmp_path):
    client, run = make_site(tmp_path, [RUNS / "inductor_autotune.tar.xz"])
    with client:
        data = client.get(f"/runs/{run['run']}.json").json()
    tables = check_inductor(data, member("inductor_autotune.tar.xz", "inductor_autotune/run.log"))
    assert [t["seconds"] for t in tables] == [0.3260, 0.2187]
    assert not any("run.log" in (w["path"] or "") and "no Triton IR" in w["message"] for w in run["warnings"])


def test_inductor_tables_with_dump_lines_written_into_them(tmp_path):
    log = member("inductor_autotune.tar.xz", "inductor_autotune/run.log")
    dump_log = member("autotune.tar.xz", "autotune/run.log")
    start = dump_log.index("// -----// IR Dump Before")
    dump = dump_log[start:dump_log.index("\n\n", start)].split("\n")  # one real dump: header and body
    body = [line for line in dump[1:] if line.startswith("    ") and " ms " not in line][:40]
    out, shapes, count = [], {}, 0
    for line in log.split("\n"):
        match = CHOICE.match(line)
        if not match or "SingleProcess" in line:
            out.append(line)
            continue
        other = body[count % len(body)]
        form = count % 4 if match.group(4).strip() else 3
        if form == 0:  # a whole dump before it, and half a dump line ahead of it on its own line
            out += dump[:8] + [other[: len(other) // 2] + line]
        elif form == 1:  # another thread's whole line written into the middle of the description
            cut = [m.end() for m in re.finditer(", ", line)][2] + 3
            out += [line[:cut] + other, line[cut:]]
        elif form == 2:  # another thread's text right after it, before its newline
            out.append(line + other)
        else:
            out.append(line)
        shapes[match.group(1)] = form
        count += 1
    path = tmp_path / "interleaved.log"
    path.write_text("\n".join(out))
    client, run = make_site(tmp_path, [path])
    with client:
        data = client.get(f"/runs/{run['run']}.json").json()
    tables = check_inductor(data, log)  # every choice intact: names, times, percents, full configs
    for table in tables:
        for choice in table["choices"]:
            # text after a choice may have cut it short: flagged, never silently trusted
            assert bool(choice["damaged"]) == (shapes[choice["name"]] == 2)
    assert sorted(set(shapes.values())) == [0, 1, 2, 3]
