"""tritonparse traces: every form tritonparse 0.6 writes ingests with the compilations, kernel names and
stage files tritonparse itself reports, launches become the compilation's launch table, autotune
configs stay separate compilations, and traced compilations link to the pass dumps of the same compile.

The fixtures (tests/fixtures/tritonparse, each with a .note) are real: traces recorded on an H100 with
Triton 3.6 and with Triton 3.9 (whose autotuning listener adds an `autotune` event), a CPU-only
Triton 3.9 trace, their parsed forms, and tritonparse's own example traces. The expectations are
read from the trace files here, independently of the parser under test.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import tarfile
from collections import Counter

import pytest
import zstandard
from fastapi.testclient import TestClient
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app import render
from app.settings import Settings
from app.store.models import Compilation, InputRecord, Launch, Source
from app.web.app import create_app
from parsers.traces import tritonparse as tp
from tests.conftest import FIXTURES, form_token, fresh_db_url, ingest_paths

TRACES = FIXTURES / "tritonparse"
H100 = TRACES / "launches_h100_triton36.ndjson.gz"
TRACE_FILES = [
    "launches_h100_triton36.ndjson.gz",
    "launches_h100_triton36_gzip.bin.ndjson",
    "launches_h100_triton36_zstd.bin.ndjson",
    "launches_h100_triton36_mapped.ndjson.gz",
    "launches_h100_triton36_sass.ndjson.gz",
    "warm_cache_h100_triton36.ndjson.gz",
    "launches_h100_triton39.ndjson.gz",
    "compile_only_triton39_cuda_hip.ndjson.gz",
    "compile_only_triton39_cuda_hip_mapped.ndjson.gz",
    "upstream_findhao_triton34.ndjson",
    "upstream_findhao_triton34_mapped.ndjson.gz",
    "upstream_inductor_triton34_f0_fc0_a0_cai-.ndjson.gz",
]


def trace_events(data: bytes) -> list[dict]:
    """The events of a trace, decompressed the way tritonparse's own reader does (by magic bytes;
    gzip members and zstd frames read back to back)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        data = reader.read()
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def expected_compilations(events: list[dict]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """hash -> (kernel name, stage file names): one per hash, the first event, as tritonparse parses."""
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    for event in events:
        if event.get("event_type") != "compilation":
            continue
        payload = event["payload"]
        found.setdefault(payload["metadata"]["hash"], (payload["metadata"]["name"], tuple(sorted(payload["file_content"]))))
    return found


def launches_by_hash(events: list[dict]) -> Counter:
    return Counter(e["compilation_metadata"]["hash"] for e in events if e.get("event_type") == "launch")


def stored(database, run_id: str) -> list[Compilation]:
    with database.session() as session:
        compilations = session.query(Compilation).filter_by(run_id=run_id).order_by(Compilation.ordinal).all()
        for compilation in compilations:
            _ = compilation.artifacts, compilation.launches
        session.expunge_all()
        return compilations


@pytest.mark.parametrize("name", TRACE_FILES)
def test_a_trace_ingests_with_the_compilations_kernels_and_stage_files_tritonparse_reports(db, name):
    events = trace_events((TRACES / name).read_bytes())
    expected = expected_compilations(events)
    assert expected, "every fixture holds compilation events"
    run = ingest_paths(db, [TRACES / name])
    compilations = stored(db, run["run"])
    got = {
        c.metadata_json["hash"]: (c.kernel, tuple(sorted(a.path.rsplit("/", 1)[-1] for a in c.artifacts if a.kind != "python")))
        for c in compilations
    }
    assert got == expected
    assert len(compilations) == len(expected)
    assert {c.origin for c in compilations} == {"trace"}
    assert all(any(a.kind == "python" for a in c.artifacts) for c in compilations)
    # the launch table holds each kernel hash's launches, in trace order
    launches = launches_by_hash(events)
    assert {c.metadata_json["hash"]: len(c.launches) for c in compilations} == {h: launches[h] for h in expected}
    assert not run["warnings"], run["warnings"]


def test_gzip_and_zstd_bin_ndjson_hold_the_same_trace_as_the_plain_one(db):
    """One program, three runs: the compression changes nothing irlens reads. The autotuner's winner
    may differ per run (timing noise: 4 or 6 launches of each config), but kernels, stages, configs
    and each kernel's launches do not."""
    def shape(name: str) -> tuple:
        compilations = stored(db, ingest_paths(db, [TRACES / name])["run"])
        launches = Counter()
        for c in compilations:
            launches[c.kernel] += len(c.launches)
        return [(c.kernel, sorted(a.kind for a in c.artifacts), c.metadata_json["config"]) for c in compilations], launches

    plain = shape("launches_h100_triton36.ndjson.gz")
    assert shape("launches_h100_triton36_gzip.bin.ndjson") == plain
    assert shape("launches_h100_triton36_zstd.bin.ndjson") == plain


def test_sass_in_a_trace_is_the_compilations_sass_file(db):
    name = "launches_h100_triton36_sass.ndjson.gz"
    events = trace_events((TRACES / name).read_bytes())
    sass = {e["payload"]["metadata"]["hash"]: next(text for key, text in e["payload"]["file_content"].items()
                                                   if key.endswith(".sass"))
            for e in events if e["event_type"] == "compilation"}
    compilations = stored(db, ingest_paths(db, [TRACES / name])["run"])
    with db.session() as session:
        for compilation in compilations:
            [artifact] = [a for a in compilation.artifacts if a.kind == "sass"]
            assert render.blob_reader.text(session, artifact.blob) == sass[compilation.metadata_json["hash"]]


def test_two_runs_of_one_program_merge_by_kernel_hash_as_tritonparse_does(db):
    """The warm run found every kernel in Triton's cache (cache_hit) with the same hashes as the cold
    run: one compilation per hash, holding both runs' launches."""
    cold, warm = H100, TRACES / "warm_cache_h100_triton36.ndjson.gz"
    warm_events = trace_events(warm.read_bytes())
    assert {e["payload"]["metadata"]["cache_hit"] for e in warm_events if e["event_type"] == "compilation"} == {True}
    launches = launches_by_hash(trace_events(cold.read_bytes())) + launches_by_hash(warm_events)
    run = ingest_paths(db, [cold, warm])
    compilations = stored(db, run["run"])
    assert {c.metadata_json["hash"]: len(c.launches) for c in compilations} == dict(launches)
    assert [c.metadata_json["cache_hit"] for c in compilations] == [False] * 5  # the first event of each hash
    notes = sorted(record["note"] for record in _inputs(db, run["run"]))
    assert "5 compilations of a kernel hash already read (kept once)" in notes[1]


def _inputs(database, run_id: str) -> list[dict]:
    with database.session() as session:
        return [{"path": r.path, "note": r.note} for r in session.query(InputRecord).filter_by(run_id=run_id)]


def test_launches_keep_grid_arguments_and_settings_of_each_launch(db):
    events = trace_events(H100.read_bytes())
    run = ingest_paths(db, [H100])
    compilations = {c.metadata_json["hash"]: c for c in stored(db, run["run"])}
    for event in (e for e in events if e["event_type"] == "launch"):
        compilation = compilations[event["compilation_metadata"]["hash"]]
        assert any(
            launch.grid == event["grid"] and launch.arguments == event["extracted_args"]
            and launch.config["num_warps"] == event["compilation_metadata"]["num_warps"]
            for launch in compilation.launches
        )
    with db.session() as session:
        assert session.query(Launch).count() == len([e for e in events if e["event_type"] == "launch"])


def test_autotune_configs_are_separate_compilations_with_their_config(db):
    """axpy_kernel was autotuned over two configs: two compilations, each with its config, one session,
    and the winner is the config the program itself launched after benchmarking (launches whose
    stack has no autotuner _bench frame)."""
    events = trace_events(H100.read_bytes())
    program_launched = {
        e["compilation_metadata"]["hash"] for e in events
        if e["event_type"] == "launch" and e["name"] == "axpy_kernel"
        and not any(f["name"] == "_bench" for f in e["stack"])
    }
    run = ingest_paths(db, [H100])
    tuned = [c for c in stored(db, run["run"]) if c.kernel == "axpy_kernel"]
    assert sorted((c.metadata_json["config"]["BLOCK"], c.num_warps, c.num_stages) for c in tuned) == [(64, 2, 2), (256, 4, 3)]
    sessions = {c.metadata_json["autotune"]["session"] for c in tuned}
    assert len(sessions) == 1
    winners = {c.metadata_json["hash"] for c in tuned if c.metadata_json["autotune"]["winner"]}
    assert winners == program_launched and len(winners) == 1
    assert all(c.metadata_json["autotune"]["benchmark_launches"] == 4 for c in tuned)
    # kernels outside the autotuner carry their config but no autotune entry
    plain = [c for c in stored(db, run["run"]) if c.kernel != "axpy_kernel"]
    assert all("autotune" not in c.metadata_json and "BLOCK" in c.metadata_json["config"] for c in plain)


def test_the_parsed_trace_names_the_same_autotune_winner(db):
    raw = {c.metadata_json["hash"]: c.metadata_json["autotune"]["winner"]
           for c in stored(db, ingest_paths(db, [H100])["run"]) if c.kernel == "axpy_kernel"}
    mapped = TRACES / "launches_h100_triton36_mapped.ndjson.gz"
    analysis = [e for e in trace_events(mapped.read_bytes()) if e["event_type"] == "autotune_analysis"]
    parsed = {c.metadata_json["hash"]: c.metadata_json["autotune"]["winner"]
              for c in stored(db, ingest_paths(db, [mapped])["run"]) if c.kernel == "axpy_kernel"}
    assert parsed == raw
    assert [h for h, won in parsed.items() if won] == [analysis[0]["winner_compilation_hash"]]


DUMP_RUNS = ["dump_h100_triton36.tar.xz", "dump_h100_triton39.tar.xz"]


@pytest.mark.parametrize("capture", DUMP_RUNS)
def test_traced_compilations_link_to_the_pass_dumps_of_the_same_compile(db, tmp_path, capture):
    """The H100 runs with MLIR_ENABLE_DUMP=1: the stderr log, the trace and the cache folder together
    make one compilation per compile, each with its passes, its stage files and its launches."""
    with tarfile.open(TRACES / capture) as archive:
        trace_member = next(m for m in archive.getmembers() if m.name.endswith(".ndjson"))
        events = trace_events(archive.extractfile(trace_member).read())
    expected = expected_compilations(events)
    launches = launches_by_hash(events)
    for inputs in (["trace", "mlir_dump.stderr.log"], ["trace", "mlir_dump.stderr.log", "cache"]):
        with tarfile.open(TRACES / capture) as archive:
            members = [m for m in archive.getmembers() if m.name.split("/")[1:2] and m.name.split("/")[1] in inputs]
            archive.extractall(tmp_path / "-".join(inputs), members=members, filter="data")
        run = ingest_paths(db, [tmp_path / "-".join(inputs)])
        compilations = stored(db, run["run"])
        assert len(compilations) == len(expected) == 5
        assert {c.origin for c in compilations} == {"log"}
        assert {c.cache_match for c in compilations} == {"ttgir"}
        assert all(c.counts["mlir"] > 0 for c in compilations)
        assert {c.metadata_json["hash"]: len(c.launches) for c in compilations} == {h: launches[h] for h in expected}
        kinds = {a.kind for c in compilations for a in c.artifacts}
        assert {"ttir", "ttgir", "llir", "ptx", "json", "python"} <= kinds
        assert ("cubin" in kinds) == ("cache" in inputs)
        assert not [w for w in run["warnings"] if "cache" in w["message"]], run["warnings"]


@pytest.mark.parametrize("capture", DUMP_RUNS)
def test_a_trace_and_the_cache_it_came_from_make_one_compilation_per_kernel(db, tmp_path, capture):
    with tarfile.open(TRACES / capture) as archive:
        members = [m for m in archive.getmembers() if "/trace" in m.name or "/cache" in m.name]
        archive.extractall(tmp_path, members=members, filter="data")
    run = ingest_paths(db, [tmp_path])
    compilations = stored(db, run["run"])
    assert len(compilations) == 5
    assert {c.origin for c in compilations} == {"cache"}
    assert all(sum(a.kind == "python" for a in c.artifacts) == 1 and len(c.launches) for c in compilations)
    assert all({"cubin", "grp", "ttgir"} <= {a.kind for a in c.artifacts} for c in compilations)


def test_launches_without_their_compilation_event_make_a_compilation_without_ir(db, tmp_path):
    """As tritonparse does for a kernel loaded from Triton's cache before tracing began: the launches'
    kernel becomes a compilation of its own, with their metadata and no stage files."""
    lines = gzip.decompress(H100.read_bytes()).splitlines(keepends=True)
    kept = [line for line in lines if b'"event_type":"compilation"' not in line.replace(b" ", b"")[:40]
            or b'"add_kernel"' not in line]
    assert len(kept) == len(lines) - 1
    path = tmp_path / "no_add_compile.ndjson"
    path.write_bytes(b"".join(kept))
    run = ingest_paths(db, [path])
    compilations = stored(db, run["run"])
    made = [c for c in compilations if c.kernel == "add_kernel"]
    assert len(made) == 1 and not made[0].artifacts and len(made[0].launches) == 2
    assert made[0].origin == "trace" and "only launches" in made[0].status_reason
    assert made[0].num_warps == 4 and made[0].metadata_json["name"] == "add_kernel"


def test_compilation_page_shows_the_launch_table_and_its_json_twin(tmp_path):
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        response = client.post(
            "/runs", files=[("file", (H100.name, H100.read_bytes(), "application/octet-stream"))],
            data={"csrf_token": form_token(client)}, follow_redirects=False,
        )
        run_url = response.headers["location"]
        run = client.get(run_url + ".json").json()
        tuned = next(c for c in run["compilations"] if c["kernel"] == "axpy_kernel")
        twin = client.get(tuned["url"] + ".json").json()
        events = [e for e in trace_events(H100.read_bytes()) if e["event_type"] == "launch"
                  and e["compilation_metadata"]["hash"] == twin["metadata"]["hash"]]
        assert twin["launches"]["count"] == len(twin["launches"]["rows"]) == len(events)
        assert [row["grid"] for row in twin["launches"]["rows"]] == [e["grid"] for e in events]
        first = twin["launches"]["rows"][0]
        assert first["benchmark"] is True and first["arguments"]["x_ptr"]["dtype"] == "torch.float32"
        page = client.get(tuned["url"]).text
        assert 'id="launches"' in page and "float32[4096]" in page and ">benchmark<" in page
        assert page.count('<tr class="benchmark">') == twin["launches"]["benchmark"] == 4
        python = next(f for f in twin["files"] if f["kind"] == "python")
        assert "def axpy_kernel" in client.get(python["url"]).text


def test_a_cut_trace_keeps_its_whole_records_and_says_what_it_skipped(db, tmp_path):
    data = gzip.decompress(H100.read_bytes())
    lines = data.splitlines(keepends=True)
    cut = b"".join(lines[:5]) + b"{this is not json}\n" + lines[5][: len(lines[5]) // 2]
    path = tmp_path / "cut.ndjson"
    path.write_bytes(cut)
    expected = expected_compilations([json.loads(line) for line in lines[:5]])
    run = ingest_paths(db, [path])
    assert [(c["kernel"]) for c in run["compilations"]] == [name for name, _ in expected.values()]
    messages = sorted(w["message"] for w in run["warnings"])
    assert any("cut short" in m for m in messages) and any("not a JSON record" in m for m in messages)
    with db.session() as session:
        note = session.query(InputRecord).filter_by(run_id=run["run"]).one().note
    assert note.startswith(f"tritonparse trace: {len(expected)} compilations")


def test_a_record_too_long_to_hold_is_skipped_not_read(monkeypatch):
    lines = gzip.decompress(H100.read_bytes()).splitlines(keepends=True)
    longest = max(len(line) for line in lines)
    monkeypatch.setattr(tp, "MAX_RECORD", longest - 2)  # the longest record, its newline apart, is one too long
    records = list(tp.read_trace(io.BytesIO(b"".join(lines))))
    problems = [r for r in records if isinstance(r, tp.TraceProblem)]
    assert [p.line for p in problems] == [i + 1 for i, line in enumerate(lines) if len(line) == longest]
    kept = [r for r in records if isinstance(r, (tp.TraceCompilation, tp.TraceLaunch))]
    assert len(kept) == len(lines) - len(problems)


def test_traces_are_recognised_by_name_or_by_their_first_record():
    head = gzip.decompress(H100.read_bytes())[:200]
    assert tp.is_trace("anything.ndjson", b"")
    assert tp.is_trace("renamed.txt", head)
    assert not tp.is_trace("dump.log", b"// -----// IR Dump Before Inliner (inline) ('builtin.module' operation) //----- //")
    assert not tp.is_trace("k.json", b'{"hash": "ab", "name": "k"}')


def test_the_traced_python_source_keeps_its_line_numbers(db):
    events = trace_events(H100.read_bytes())
    source = next(e["payload"]["python_source"] for e in events if e["event_type"] == "compilation")
    run = ingest_paths(db, [H100])
    with db.session() as session:
        row = session.query(Source).filter_by(run_id=run["run"]).one()
        text = render.blob_reader.text(session, row.blob)
    assert row.path == source["file_path"]
    lines = text.splitlines()
    for offset, line in enumerate(source["code"].splitlines()):
        assert lines[source["start_line"] - 1 + offset] == line


def test_the_zstd_trace_is_frames_and_the_gzip_trace_is_members():
    """The fixtures are what tritonparse writes for TRITON_TRACE_COMPRESSION: one frame or member per record."""
    zst = (TRACES / "launches_h100_triton36_zstd.bin.ndjson").read_bytes()
    gz = (TRACES / "launches_h100_triton36_gzip.bin.ndjson").read_bytes()
    assert zst.count(b"\x28\xb5\x2f\xfd") >= len(trace_events(zst))
    assert gz.count(b"\x1f\x8b\x08") >= len(trace_events(gz))


def test_hostile_strings_in_a_trace_reach_the_pages_escaped(tmp_path):
    """Payloads planted in the real H100 trace where its strings reach a page: kernel name, argument
    names and values, stage file names, the Python source's path and text. No page lets one run;
    each is shown as text."""
    from tests import hostile_capture as hostile
    from tests.test_hostile_strings import crawl

    events = trace_events(H100.read_bytes())
    kernel = "axpy" + hostile.IMG.replace(" ", "_")
    for event in events:
        if event["event_type"] == "compilation" and event["payload"]["metadata"]["name"] == "axpy_kernel":
            payload = event["payload"]
            payload["metadata"]["name"] = kernel
            payload["file_content"] = {f"{hostile.ATTRIBUTE}{name}": text for name, text in payload["file_content"].items()}
            payload["python_source"]["file_path"] = f"/src/{hostile.SCRIPT}/k.py"
            payload["python_source"]["code"] += f"# {hostile.TEXTAREA}\n"
        if event["event_type"] == "launch" and event["name"] == "axpy_kernel":
            event["name"] = kernel
            event["extracted_args"][hostile.SCRIPT] = {"type": "str", "value": hostile.JS_URL + hostile.IMG}
    path = tmp_path / "hostile.ndjson"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        response = client.post("/runs", files=[("file", (path.name, path.read_bytes(), "application/x-ndjson"))],
                               headers={"Accept": "application/json"})
        assert response.status_code == 201, response.text
        pages = crawl(client, response.json())
    assert len(pages) > 10
    assert not {url: found for url, body in pages.items() if (found := hostile.audit_html(body))}
    shown = "\n".join(html.unescape(body) for body in pages.values())
    for payload in (kernel, hostile.SCRIPT, hostile.JS_URL + hostile.IMG, hostile.ATTRIBUTE, hostile.TEXTAREA):
        assert payload in shown, payload


def test_launches_without_a_kernel_hash_make_one_compilation_per_kernel(db, tmp_path):
    events = [e for e in trace_events(H100.read_bytes()) if e["event_type"] == "launch"]
    for event in events:
        del event["compilation_metadata"]["hash"]
    path = tmp_path / "unhashed.ndjson"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    compilations = stored(db, ingest_paths(db, [path])["run"])
    per_kernel = Counter(event["name"] for event in events)
    assert {c.kernel: len(c.launches) for c in compilations} == dict(per_kernel)
    assert all(c.status_reason and "only launches" in c.status_reason for c in compilations)


_RAW = gzip.decompress(H100.read_bytes())


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(min_value=0, max_value=len(_RAW)))
@example(_RAW.index(b"\n"))  # the first record whole, only its newline cut: still a record
@example(_RAW.index(b"\n") - 1)
def test_a_trace_cut_at_any_byte_keeps_exactly_its_whole_records(cut):
    """A trace cut anywhere (a killed process, a partial copy): every record wholly before the cut is
    read as written, a cut one is reported, nothing raises."""
    data = _RAW[:cut]
    records = list(tp.read_trace(io.BytesIO(data)))
    lines = data.split(b"\n")
    tail_is_whole = lines[-1] == _RAW.split(b"\n")[len(lines) - 1] and lines[-1] != b""
    whole = len(lines) - 1 + tail_is_whole
    events = [json.loads(line) for line in _RAW.splitlines()[:whole]]
    read = [r for r in records if isinstance(r, (tp.TraceCompilation, tp.TraceLaunch))]
    assert [r.line for r in read] == list(range(1, whole + 1))
    assert [r.hash for r in read] == [
        (e["payload"]["metadata"] if e["event_type"] == "compilation" else e["compilation_metadata"])["hash"]
        for e in events
    ]
    problems = [r for r in records if isinstance(r, tp.TraceProblem)]
    assert len(problems) == (1 if lines[-1] and not tail_is_whole else 0)
    assert all("cut short" in problem.message for problem in problems)


def test_triton39_autotune_event_marks_the_best_config_with_its_timings(db):
    """Triton 3.9's autotuning listener writes an `autotune` event (real H100 trace): each of the
    autotuned kernel's compilations carries its own timings from it, the best config is the one
    the program then launched, and the event's session is the compilations' session."""
    trace = TRACES / "launches_h100_triton39.ndjson.gz"
    events = trace_events(trace.read_bytes())
    (event,) = [e for e in events if e["event_type"] == "autotune"]
    program_launched = {
        e["compilation_metadata"]["hash"] for e in events
        if e["event_type"] == "launch" and e["name"] == event["kernel_name"]
        and not any(f["name"] == "_bench" for f in e["stack"])
    }
    run = ingest_paths(db, [trace])
    tuned = [c for c in stored(db, run["run"]) if c.kernel == event["kernel_name"]]
    assert len(tuned) == len(event["configs_timings"]) == 2
    for compilation in tuned:
        autotune = compilation.metadata_json["autotune"]
        block = compilation.metadata_json["config"]["BLOCK"]
        (text,) = [t for t in event["configs_timings"] if t.startswith(f"BLOCK: {block},")]
        assert autotune["config_text"] == text
        assert autotune["timings_ms"] == event["configs_timings"][text]
        assert autotune["best"] == (text == event["best_config"])
        assert autotune["winner"] == (compilation.metadata_json["hash"] in program_launched)
    assert [c.metadata_json["autotune"]["best"] for c in tuned].count(True) == 1
