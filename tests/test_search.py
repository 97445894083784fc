"""Searching runs by title, tag, kernel name and uploader: /search?q= and its .json twin."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.insight.run_search import parse_query, search_runs
from app.settings import Settings
from app.store.db import Database
from app.store.models import Run
from app.urls import Urls
from app.web.app import create_app
from tests.conftest import FIXTURES, corpus_archive, fresh_db_url, ingest_paths

FIXTURE_LOG = FIXTURES / "sm90_add_kernel_dump.log.gz"


def titles(db: Database, query: str, **options: object) -> list[str]:
    with db.session() as session:
        return sorted(run["title"] for run in search_runs(session, query, Urls(), **options))


@pytest.fixture
def team_runs(db: Database) -> Database:
    """Three runs: alice's add_kernel (tags fp8, sm90), bob's add_kernel (tag "flash attn"), carol's corpus run."""
    ingest_paths(db, [FIXTURE_LOG], title="Vector add baseline", owner="alice", tags=["fp8", "sm90"])
    ingest_paths(db, [FIXTURE_LOG], title="add 50% faster_path", owner="bob", tags=["flash attn", "café"])
    ingest_paths(db, [corpus_archive("sm90_mix")], title="Mixed sm90 kernels", owner="carol", tags=["mix"])
    return db


def test_query_syntax():
    query = parse_query('matmul tag:fp8 by:Alice kernel:add title:"flash attn" unknown:x "a b')
    assert query.words == ["matmul", "unknown:x", "a", "b"]  # an unbalanced quote is dropped
    assert query.terms == [("tag", "fp8"), ("owner", "Alice"), ("kernel", "add"), ("title", "flash attn")]
    assert parse_query("").empty


def test_words_match_title_tag_kernel_or_uploader(team_runs):
    db = team_runs
    assert titles(db, "baseline") == ["Vector add baseline"]  # title
    assert titles(db, "SM90") == ["Mixed sm90 kernels", "Vector add baseline"]  # title or tag, any case
    assert titles(db, "matmul") == ["Mixed sm90 kernels"]  # a kernel name
    assert titles(db, "add_kernel") == ["Mixed sm90 kernels", "Vector add baseline", "add 50% faster_path"]
    assert titles(db, "bob") == ["add 50% faster_path"]  # the uploader
    assert titles(db, "add_kernel bob") == ["add 50% faster_path"]  # every word must match
    assert titles(db, "nothing-like-this") == []
    assert len(titles(db, "")) == 3


def test_qualified_terms_narrow_the_field(team_runs):
    db = team_runs
    assert titles(db, "tag:fp8") == ["Vector add baseline"]
    assert titles(db, "tag:fp") == []  # a tag matches whole
    assert titles(db, 'tag:"flash attn"') == ["add 50% faster_path"]
    assert titles(db, "tag:café") == ["add 50% faster_path"]  # stored as JSON escapes, still found
    assert titles(db, "owner:ALICE") == ["Vector add baseline"]
    assert titles(db, "by:carol kernel:softmax") == ["Mixed sm90 kernels"]
    assert titles(db, "kernel:alice") == []
    assert titles(db, "title:sm90") == ["Mixed sm90 kernels"]


def test_like_wildcards_are_taken_literally(team_runs):
    db = team_runs
    assert titles(db, "50%") == ["add 50% faster_path"]
    assert titles(db, "%") == ["add 50% faster_path"]
    assert titles(db, "r_p") == ["add 50% faster_path"]  # only "faster_path" has "r_p"
    assert titles(db, "_") == ["Mixed sm90 kernels", "Vector add baseline", "add 50% faster_path"]  # kernels


def test_results_show_uploader_time_and_the_kernels_that_matched(team_runs):
    with team_runs.session() as session:
        [mixed] = search_runs(session, "matmul", Urls("/irlens"))
    assert mixed["owner"] == "carol" and mixed["created_at"]
    assert mixed["url"] == f"/irlens/runs/{mixed['run']}"
    assert mixed["matched_kernels"] == mixed["kernels"] == ["matmul_kernel", "matmul_descriptor_kernel"]
    assert mixed["compilations"] >= 6


def test_search_pages_list_only_what_the_reader_may_see(tmp_path):
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False, require_token=True)
    with TestClient(create_app(settings)) as client:
        db = client.app.state.db
        mine = ingest_paths(db, [FIXTURE_LOG], title="alice private", owner="alice")
        listed = ingest_paths(db, [FIXTURE_LOG], title="bob listed", owner="bob")
        with db.session() as session:
            session.execute(update(Run).where(Run.id == listed["run"]).values(listed=True))
            session.commit()
        anonymous = client.get("/search.json", params={"q": "add_kernel"})
        assert anonymous.status_code == 200
        assert [run["title"] for run in anonymous.json()["runs"]] == ["bob listed"]
        assert anonymous.json()["q"] == "add_kernel" and anonymous.json()["count"] == 1
        from app.web.auth import create_token

        with db.session() as session:
            token = create_token(session, "alice")
            session.commit()
        signed_in = client.get(
            "/search.json", params={"q": "add"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert sorted(run["title"] for run in signed_in.json()["runs"]) == ["alice private", "bob listed"]
        page = client.get("/search", params={"q": "owner:bob"}, headers={"Accept": "text/html"})
        assert page.status_code == 200
        assert "bob listed" in page.text and ">bob</a>" in page.text and "<time" in page.text
        assert mine["run"] not in page.text
        assert 'href="/search.json?q=owner%3Abob"' in page.text or "/search.json?q=owner:bob" in page.text


def test_created_at_carries_its_zone_in_every_json(tmp_path):
    """The run page, its edit page and search all give created_at as the same zoned ISO 8601 text
    (SQLite hands back naive datetimes; they are UTC)."""
    settings = Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False)
    with TestClient(create_app(settings)) as client:
        run = ingest_paths(client.app.state.db, [FIXTURE_LOG], title="zoned")
        page = client.get(f"/runs/{run['run']}.json").json()["created_at"]
        edit = client.get(f"/runs/{run['run']}/edit.json").json()["created_at"]
        patched = client.patch(f"/runs/{run['run']}", json={"title": "zoned again"}).json()["created_at"]
        [found] = client.get("/search.json", params={"q": "zoned"}).json()["runs"]
    assert page.endswith("+00:00")
    assert edit == patched == found["created_at"] == page == run["created_at"]
