"""The op index: op:, group: and layout: searches against a brute-force scan of the stored IR texts of
every corpus run, the .json twin, the compilation page's First seen section, the backfill and deletion.
Runs on SQLite, and on PostgreSQL with IRLENS_TEST_DB_URL."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select, update

from app.cli import main as cli_main
from app.highlight.hwops import count_groups
from app.insight.op_index import blob_terms, first_last, query_names, unindexed_runs
from app.insight.op_search import search_compilations, split_query
from app.settings import Settings
from app.store.blobs import BlobReader
from app.store.db import Database
from app.store.models import Banner, Compilation, CompilationTerm, OpTerm, Run, Snapshot
from app.store.retention import delete_run
from app.urls import Urls
from app.web.app import create_app
from tests.conftest import corpus_archive, ingest_paths

_NAME = re.compile(r"[a-z_][\w$]*(?:\.[\w$]+)+")
_LAYOUT = re.compile(r"#(?:ttg|triton_gpu|ttng|triton_nvidia_gpu|amdg|amdgpu|triton_amdgpu)\.(\w+)<")


def brute_terms(text: str, target: str | None = None) -> set[str]:
    """A snapshot's terms, found line by line without the index's regexes: the op at each line's op
    position, count_groups for the groups (hwops defines them), layout attributes anywhere."""
    terms = set()
    for line in text.split("\n"):
        rest = line.lstrip(" ")
        if rest.startswith("%"):
            _, equals, rest = rest.partition("=")
            if not equals:
                continue
            rest = rest.removeprefix(" ")
        match = _NAME.match(rest.removeprefix('"'))
        if match:
            terms.add("op:" + match.group(0))
    terms.update(f"group:{key}" for key, count in count_groups(text, target).items() if count)
    terms.update("layout:" + kind for kind in _LAYOUT.findall(text))
    return terms


@pytest.fixture(scope="module")
def expected(session_db: Database, corpus_runs) -> dict[str, dict[tuple[str, int], tuple[int, int]]]:
    """term -> {(run, ordinal): (first index, last index)} over every snapshot of every corpus run."""
    reader = BlobReader()
    found: dict[str, dict[tuple[str, int], tuple[int, int]]] = {}
    with session_db.session() as session:
        rows = session.execute(
            select(Compilation.run_id, Compilation.ordinal, Snapshot.index, Snapshot.blob, Compilation.target)
            .join(Snapshot, Snapshot.compilation_pk == Compilation.pk)
            .order_by(Compilation.run_id, Compilation.ordinal, Snapshot.index)
        )
        texts: dict[tuple[str, str | None], set[str]] = {}
        for run_id, ordinal, index, blob, target in rows:
            # descriptor ops of a snapshot naming no target count for its compilation's engine
            if (blob, target) not in texts:
                texts[(blob, target)] = brute_terms(reader.text(session, blob) or "", target)
            for term in texts[(blob, target)]:
                places = found.setdefault(term, {})
                first = places.get((run_id, ordinal))
                places[(run_id, ordinal)] = (first[0] if first else index, index)
    return found


def _search(db: Database, text: str) -> list[dict]:
    with db.session() as session:
        return search_compilations(session, split_query(text), Urls(), limit=100_000)["compilations"]


def _places(results: list[dict]) -> dict[tuple[str, int], tuple[int, int]]:
    places = {}
    for result in results:
        ordinal = int(result["url"].rsplit("/", 1)[1])
        places[(result["run"], ordinal)] = (result["first"]["index"], result["last"]["index"])
    return places


def test_every_term_finds_exactly_the_compilations_whose_ir_holds_it(session_db, expected):
    assert len(expected) > 200  # ops, groups and layouts of 14 captures
    assert {"group:tma", "group:tdm", "group:mma", "group:barrier", "layout:blocked", "layout:linear"} <= set(expected)
    with session_db.session() as session:
        stored = set(session.scalars(select(OpTerm.name)))
    assert set(expected) <= stored
    runs_seen = set()
    for term in expected:
        field_name, value = term.split(":", 1)
        query = f'{field_name}:"{value}"' if " " in value else term
        got = _places(_search(session_db, query))
        # an op query also finds the other spelling of its dialect (ttg. and triton_gpu.)
        want = {}
        for name in query_names(field_name, value):
            for place, span in expected.get(name, {}).items():
                seen = want.get(place)
                want[place] = (min(seen[0], span[0]), max(seen[1], span[1])) if seen else span
        assert got == want, term
        runs_seen.update(run for run, _ in got)
    assert len(runs_seen) >= 10  # across runs


def test_terms_combine_with_each_other_and_with_run_words(session_db, expected, corpus_runs):
    tma, dot = expected["group:tma"], expected["op:tt.dot"]
    both = _places(_search(session_db, "group:tma op:tt.dot"))
    assert set(both) == set(tma) & set(dot) and both
    assert all(both[place] == tma[place] for place in both)  # first/last of the first word
    run_id = corpus_runs["sm90_mix"]["run"]
    with session_db.session() as session:
        title = session.get(Run, run_id).title
        session.execute(update(Run).where(Run.id == run_id).values(tags=["op-index-test"]))
        session.commit()
    tagged = _places(_search(session_db, "group:mma tag:op-index-test"))
    assert set(tagged) == {place for place in expected["group:mma"] if place[0] == run_id} and tagged
    kernels = _search(session_db, "group:mma kernel:matmul")
    assert kernels and all("matmul" in c["kernel"] for c in kernels)
    assert len(kernels) < len(expected["group:mma"])
    assert title is not None


def test_unknown_terms_say_so_and_suggest(session_db, corpus_runs):
    with session_db.session() as session:
        found = search_compilations(session, split_query("op:tma_copy"), Urls())
    assert found["compilations"] == [] and found["unknown"][0]["term"] == "op:tma_copy"
    assert "ttng.async_tma_copy_global_to_local" in found["unknown"][0]["suggestions"]


def test_search_page_json_twin_and_compilation_page(session_db, corpus_runs, tmp_path):
    settings = Settings(db_url=session_db.url, data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        data = client.get("/search.json", params={"q": "op:ttng.async_tma_copy_global_to_local"}).json()
        assert data["compilations"] and data["count"] == len(data["compilations"])
        for item in data["compilations"]:
            assert set(item) >= {"url", "kernel", "run", "first", "last"}
            assert set(item["first"]) >= {"index", "pass"} and item["first"]["pass"]
            assert item["first"]["index"] <= item["last"]["index"]
            snapshot = client.get(f"{item['url']}/s/{item['first']['index']}.json").json()
            assert snapshot["pass"] == item["first"]["pass"]
        page = client.get("/search", params={"q": "group:tma"})
        assert page.status_code == 200 and 'id="op-results"' in page.text
        empty = client.get("/search", params={"q": "op:no.such_op"})
        assert "No compilation holds" in empty.text
        item = data["compilations"][0]
        compilation = client.get(item["url"]).text
        assert 'id="first-seen"' in compilation and "introduced by" in compilation
        assert f'href="{item["url"]}/s/{item["first"]["index"]}"' in compilation
        twin = client.get(item["url"] + ".json").json()
        entry = next(e for e in twin["first_seen"] if e["term"] == "op:ttng.async_tma_copy_global_to_local")
        assert entry["first"]["index"] == item["first"]["index"] and entry["last"]["index"] == item["last"]["index"]


def test_only_runs_the_reader_may_list_are_searched(db, tmp_path):
    run = ingest_paths(db, [corpus_archive("sm90_gluon")])["run"]
    settings = Settings(db_url=db.url, data_dir=tmp_path, load_demo=False, require_token=True)
    with TestClient(create_app(settings)) as client:
        assert client.get("/search.json", params={"q": "group:tma"}).json()["compilations"] == []
        with db.session() as session:
            session.execute(update(Run).where(Run.id == run).values(listed=True))
            session.commit()
        assert client.get("/search.json", params={"q": "group:tma"}).json()["compilations"]


def _rows(db: Database) -> set[tuple]:
    with db.session() as session:
        return {tuple(row) for row in session.execute(
            select(Compilation.run_id, Compilation.ordinal, OpTerm.name, CompilationTerm.first_index,
                   CompilationTerm.last_index)
            .join(Compilation, Compilation.pk == CompilationTerm.compilation_pk)
            .join(OpTerm, OpTerm.id == CompilationTerm.term_id)
        )}


def test_backfill_indexes_older_runs_like_ingest_does(db, capsys, tmp_path):
    mix = ingest_paths(db, [corpus_archive("sm90_mix")])
    ingest_paths(db, [corpus_archive("gfx1250_tdm")])
    at_ingest = _rows(db)
    assert at_ingest
    with db.session() as session:  # as a database from before the index
        session.execute(delete(CompilationTerm))
        session.execute(update(Run).values(stats={}))
        session.commit()
        assert len(unindexed_runs(session)) == 2
        found = search_compilations(session, split_query("group:tdm"), Urls())
        assert found["compilations"] == [] and found["unindexed_runs"] == 2
    settings = Settings(db_url=db.url, data_dir=tmp_path, load_demo=False)
    # no background work: a map-preparation round still running in its thread after the client
    # closes would write the runs' stats while the backfill below does
    with TestClient(create_app(settings, background=False)) as client:
        page = client.get(mix["compilations"][0]["url"]).text
        assert "ingested before the op index existed" in page and "irlens index --backfill" in page
        assert "2 runs ingested before the op index" in client.get("/search", params={"q": "group:tdm"}).text
    assert cli_main(["index", "--backfill", "--db", db.url]) == 0
    assert "indexed 2/2 runs" in capsys.readouterr().err
    assert _rows(db) == at_ingest
    with db.session() as session:
        assert unindexed_runs(session) == []
    assert cli_main(["index", mix["run"], "--db", db.url, "--quiet"]) == 0  # re-index one run
    assert _rows(db) == at_ingest
    assert cli_main(["index", "0" * 32, "--db", db.url]) == 1


def test_deleting_a_run_removes_its_index_rows(db):
    keep = ingest_paths(db, [corpus_archive("sm90_gluon")])["run"]
    gone = ingest_paths(db, [corpus_archive("sm90_mix")])["run"]
    assert delete_run(db, gone) is not None
    with db.session() as session:
        left = session.scalar(
            select(func.count()).select_from(CompilationTerm)
            .join(Compilation, Compilation.pk == CompilationTerm.compilation_pk, isouter=True)
            .where(Compilation.pk.is_(None))
        )
        assert left == 0
    assert {row[0] for row in _rows(db)} == {keep}


def test_a_runaway_op_name_is_not_indexed(session_db, corpus_runs):
    """A real snapshot with one of its op lines given a 10,000-character name (a damaged log's
    junk): the other terms stay, the long one is left out (op_terms.name holds 500 characters)."""
    with session_db.session() as session:
        blob = session.scalar(select(Snapshot.blob).join(Snapshot.banner).where(Banner.kind == "mlir").limit(1))
        text = (BlobReader().text(session, blob) or "").encode()
    terms = blob_terms(text)
    line = next(line for line in text.split(b"\n") if b" = arith.constant" in line)
    junk = line.replace(b"arith.constant", b"arith." + b"x" * 10_000)
    damaged = blob_terms(text.replace(line, junk, 1))
    assert damaged <= terms | {"op:arith.constant"} and all(len(term) < 300 for term in damaged)
    assert terms - damaged <= {"op:arith.constant"}


def test_first_last_spans_runs_of_equal_sets():
    a, b = frozenset({"op:x", "op:y"}), frozenset({"op:y"})
    assert first_last([(0, a), (1, a), (2, b), (3, a), (4, frozenset())]) == {"op:x": (0, 3), "op:y": (0, 3)}


def test_query_names():
    assert query_names("op", "ttg.convert_layout") == ["op:triton_gpu.convert_layout", "op:ttg.convert_layout"]
    assert query_names("group", "TMA") == ["group:tma"]
    assert query_names("layout", "#ttg.linear<{") == ["layout:linear"]
    assert split_query('op:tt.dot tag:fp8 matmul').terms == [("op", "tt.dot")]
    assert split_query('op:tt.dot tag:fp8 matmul').rest == "tag:fp8 matmul"
