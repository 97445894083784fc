"""Autotune tables lead into the IR (issue 33), on the real H200 captures of tests/fixtures/gpu_runs_i33:
- a `@triton.autotune` run of 27 configs (11 fail a static assertion) with TRITON_PRINT_AUTOTUNING=1:
  each config that compiled links to the compilation whose dumps follow its `Autotuning kernel` line,
  read from the log here; the failures say why; the best config is marked.
- a torch.compile max-autotune run whose dumps interleaved (3,582 damaged dumps in the whole log; the
  fixture keeps its text outside the dumps, the cache and the generated modules): each AUTOTUNE row
  links to the compilation whose generated module (read here from the uploaded files) states the
  row's config and the table's M, N, K."""

from __future__ import annotations

import re
import tarfile

import pytest

from tests.conftest import FIXTURES
from tests.test_snapshot_pages import make_site

RUNS = FIXTURES / "gpu_runs_i33"
CONFIG = re.compile(r"BLOCK_M: (\d+), BLOCK_N: (\d+), BLOCK_K: (\d+), GROUP_M: \d+, num_warps: (\d+), "
                    r"num_ctas: \d+, num_stages: (\d+)")


def member(archive: str, name: str) -> str:
    with tarfile.open(RUNS / archive) as tar:
        return tar.extractfile(name).read().decode()  # type: ignore[union-attr]


def printed_configs(log: str) -> list[dict]:
    """Each `Autotuning kernel` line: its config, line, failure message (last line of the excerpt)."""
    out: list[dict] = []
    lines = log.split("\n")
    for number, line in enumerate(lines, start=1):
        if line.startswith("Autotuning kernel "):
            out.append({"config": CONFIG.search(line).groups(), "line": number, "error": None})
        elif line.startswith("Autotuning failed with "):
            rest = []
            for after in lines[number:]:
                if after.startswith(("Autotuning ", "// -----//", "Triton autotuning")):
                    break
                rest.append(after)
            out[-1]["error"] = rest[-1].strip()
    return out


def as_tuple(config: dict) -> tuple:
    return tuple(str(config[k]) for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"))


@pytest.mark.parametrize("upload", ["folder", "log_only"])
def test_every_compiled_triton_config_links_to_its_compilation(tmp_path, upload):
    log = member("autotune.tar.xz", "autotune/run.log")
    paths = [RUNS / "autotune.tar.xz"]
    if upload == "log_only":  # no cache: num_warps from the dumps, no num_stages at all
        paths = [tmp_path / "run.log"]
        paths[0].write_text(log)
    client, run = make_site(tmp_path, paths)
    with client:
        data = client.get(run["url"] + ".json").json()
        starts = {}
        for compilation in data["compilations"]:
            snapshots = client.get(compilation["url"] + ".json").json()["snapshots"]
            if snapshots:
                starts[compilation["url"]] = snapshots[0]["log_line"]
        html = client.get(run["url"]).text
    printed = printed_configs(log)
    assert len(printed) == 27 and sum(1 for p in printed if p["error"]) == 11
    (entry,) = [e for e in data["autotune"] if e["kind"] == "triton"]
    assert [as_tuple(c["config"]) for c in entry["choices"]] == [p["config"] for p in printed]
    compiled = linked = 0
    for n, (choice, reference) in enumerate(zip(entry["choices"], printed, strict=True)):
        if reference["error"]:
            assert choice["status"] == "failed" and choice["compilation"] is None
            assert choice["error"].endswith(reference["error"]) and "failed" in choice["link_note"]
            continue
        compiled += 1
        end = printed[n + 1]["line"] if n + 1 < len(printed) else 1 << 40
        (expected,) = [url for url, start in starts.items() if reference["line"] < start < end]
        linked += choice["compilation"] == expected
    assert compiled == 16 and linked / compiled >= 0.9
    best = re.search(r"best config selected: (.*);", log).group(1)
    winner = next(c for c in entry["choices"] if c["name"] == entry["winner"])
    assert as_tuple(winner["config"]) == CONFIG.search(best).groups()
    assert entry["best_compilation"] == winner["compilation"] and entry["times_note"]
    assert html.count('class="badge ok">picked') == 1 and "prints the configs it benchmarks" in html
    with client:  # the picked compilation's own page says so, and another's does not
        assert "The autotuner picked this config" in client.get(winner["compilation"]).text
        other = next(c["compilation"] for c in entry["choices"] if c["compilation"] and c is not winner)
        assert "not picked" in client.get(other).text


def module_facts(text: str) -> dict:
    facts = {name: value for name, value in re.findall(r"^    ([A-Z_]+) : tl\.constexpr = (\S+)$", text, re.MULTILINE)}
    facts.update(re.findall(r"^    ([MNK]) = (\d+)$", text, re.MULTILINE))
    facts.update(re.findall(r"^(num_stages|num_warps)=(\d+),$", text, re.MULTILINE))
    return facts


def test_every_inductor_choice_links_to_the_module_that_benchmarked_it(tmp_path):
    archive = RUNS / "inductor.tar.xz"
    client, run = make_site(tmp_path, [archive])
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read().decode() for m in tar if m.isfile()}  # type: ignore[union-attr]
    with client:
        data = client.get(run["url"] + ".json").json()
        assert data["warnings"]  # what is left of the interleaved dumps' banners: the tables still read whole
        tables = [e for e in data["autotune"] if e["kind"] == "inductor"]
        rows = sum(len(t["choices"]) for t in tables)
        good = 0
        for table in tables:
            a, b = (shape.split("x") for shape in table["shapes"].split(", ")[-2:])
            for choice in table["choices"]:
                if not choice["compilation"]:
                    continue
                detail = client.get(choice["compilation"] + ".json").json()
                cache = detail["cache"].rstrip("/").rsplit("/", 1)[-1]
                (source,) = [text for name, text in files.items() if f"/{cache}/" in name and name.endswith(".source")]
                module_path = re.search(r'^#loc = loc\("([^"]+)"', source, re.MULTILINE).group(1)
                tail = "/".join(module_path.split("/")[-2:])
                (module,) = [text for name, text in files.items() if name.endswith(tail)]
                facts = module_facts(module)
                expected = {"M": a[0], "K": a[1], "N": b[1]}
                config = {k: str(v) for k, v in choice["config"].items() if k.startswith(("BLOCK_", "num_"))}
                if all(facts.get(k) == v for k, v in {**expected, **config}.items()):
                    good += 1
    assert rows == 20 and good / rows >= 0.8
