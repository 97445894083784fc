"""Suggestions for the word being typed in the search box: /search/suggest?q=WORD and its .json twin,
on a real capture (sm90_gluon, which has TMA ops) and a hostile one, checked against the stored IR texts
read without the op index, and against the searches the suggestions lead to."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.highlight.hwops import GROUPS
from app.insight.search_suggest import LIMIT, parse_word, rank
from app.settings import Settings
from app.store.blobs import BlobReader
from app.store.db import Database
from app.store.models import Compilation, OpTerm, Run, Snapshot
from app.web.app import create_app
from tests import hostile_capture as hostile
from tests.conftest import corpus_archive, fresh_db_url, ingest_paths
from tests.test_op_index import brute_terms


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """sm90_gluon and the hostile capture, ingested into a database of this module's own."""
    tmp_path = tmp_path_factory.mktemp("suggest")
    database = Database(fresh_db_url(tmp_path))
    gluon = ingest_paths(database, [corpus_archive("sm90_gluon")], title="Gluon sm90 kernels")["run"]
    bad = ingest_paths(database, [hostile.hostile_capture(tmp_path)], title="add kernel <img src=x onerror=PWN()>")["run"]
    yield {"db": database, "gluon": gluon, "hostile": bad, "tmp": tmp_path}
    database.dispose()


def client_for(corpus, **options) -> TestClient:
    settings = Settings(db_url=corpus["db"].url, data_dir=corpus["tmp"], load_demo=False, **options)
    return TestClient(create_app(settings))


def suggested(client: TestClient, word: str) -> list[str]:
    response = client.get("/search/suggest.json", params={"q": word})
    assert response.status_code == 200, response.text
    return [item["text"] for item in response.json()["suggestions"]]


def ir_terms(database: Database, run_id: str) -> set[str]:
    """Every op name, group and layout kind of a run's snapshots, from their IR text (no op index)."""
    reader = BlobReader()
    terms: set[str] = set()
    with database.session() as session:
        rows = session.execute(
            select(Snapshot.blob, Compilation.target).join(Compilation, Compilation.pk == Snapshot.compilation_pk)
            .where(Compilation.run_id == run_id).distinct()
        )
        for blob, target in rows:
            terms |= brute_terms(reader.text(session, blob) or "", target)
    return terms


def test_op_tma_offers_the_tma_group_and_every_op_holding_tma(corpus):
    ir_ops = {term[3:] for term in ir_terms(corpus["db"], corpus["gluon"]) if term.startswith("op:")}
    from_ir = {name for name in ir_ops if "tma" in name.lower()}
    with corpus["db"].session() as session:  # the op index's own table, read directly
        stored = {name[3:] for name in session.scalars(select(OpTerm.name).where(OpTerm.name.like("op:%tma%")))}
    assert "ttng.async_tma_copy_global_to_local" in from_ir and len(from_ir) >= 3
    assert from_ir <= stored
    with client_for(corpus) as client:
        texts = suggested(client, "op:tma")
        assert texts[0] == "group:tma"  # TMA is a group: its search comes first
        ops = [text[3:] for text in texts if text.startswith("op:")]
        assert len(ops) == len(set(ops))
        if len(stored) <= LIMIT - 1:  # the group takes one place of the list
            assert set(ops) == stored and from_ir <= set(ops)
        else:
            assert set(ops) <= stored and len(texts) == LIMIT
        # the ones whose op name starts a word with "tma" come before `stmatrix`-like mid-word matches
        assert ops == sorted(ops, key=lambda name: rank("tma", name))
        for text in texts:  # each suggestion is a search that finds something
            found = client.get("/search.json", params={"q": text}).json()
            assert found["compilations"] and not found["unknown"], text


def test_group_and_layout_words(corpus):
    layouts = {term[7:] for term in ir_terms(corpus["db"], corpus["gluon"]) if term.startswith("layout:")}
    assert {"blocked", "nvmma_shared"} <= layouts
    with client_for(corpus) as client:
        groups = {f"group:{group.key}" for group in GROUPS}  # every group, up to LIMIT of them
        listed = set(suggested(client, "group:"))
        assert listed == groups if len(groups) <= LIMIT else (listed <= groups and len(listed) == LIMIT)
        assert suggested(client, "group:Barr") == ["group:barrier"]  # keys and labels, any case
        assert suggested(client, "group:Warp")[0] == "group:warpspec"  # a key match before a label's
        assert suggested(client, "group:memory") == ["group:tmem", "group:shared"]  # labels only, in GROUPS order
        listed = set(suggested(client, "layout:"))
        want = {f"layout:{kind}" for kind in layouts}
        assert listed == want if len(want) <= LIMIT else (listed <= want and len(listed) == LIMIT)
        assert suggested(client, "layout:nvmma") == ["layout:nvmma_shared"]
        assert suggested(client, "op:%") == [] and suggested(client, "op:no_such_thing") == []


def test_a_bare_word_completes_kernel_names_and_run_titles(corpus):
    with client_for(corpus) as client:
        kernels = {c["kernel"] for c in client.get(f"/runs/{corpus['gluon']}.json").json()["compilations"]}
        want = {f"kernel:{name}" for name in kernels if "tma" in name.lower()}
        assert want
        assert set(suggested(client, "tma")) == want
        assert suggested(client, "kernel:TMA") == sorted(want, key=lambda text: rank("tma", text[7:]))
        assert 'title:"Gluon sm90 kernels"' in suggested(client, "gluon")
        assert suggested(client, "title:sm90") == ['title:"Gluon sm90 kernels"']
        assert suggested(client, "t") == []  # one letter: too little to go on
        page = client.get("/search.json", params={"q": 'title:"Gluon sm90 kernels"'}).json()
        assert [run["run"] for run in page["runs"]] == [corpus["gluon"]]


def test_only_runs_the_reader_may_list_are_suggested(corpus):
    database = corpus["db"]
    with client_for(corpus, require_token=True) as client:
        assert suggested(client, "op:tma") == ["group:tma"]  # groups are no secret; the ops of unlisted runs are
        assert suggested(client, "gluon") == [] and suggested(client, "layout:") == []
        with database.session() as session:
            session.execute(update(Run).where(Run.id == corpus["gluon"]).values(listed=True))
            session.commit()
        try:
            assert len(suggested(client, "op:tma")) > 1 and suggested(client, "gluon")
            assert suggested(client, "add_kernel") == []  # the hostile run stays unlisted
        finally:
            with database.session() as session:
                session.execute(update(Run).where(Run.id == corpus["gluon"]).values(listed=False))
                session.commit()


class _Options(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if values.get("role") == "option":
            self.values.append(values["data-value"])


def test_hostile_names_are_escaped_in_the_fragment(corpus):
    with client_for(corpus) as client:
        data = client.get("/search/suggest.json", params={"q": "add_kernel"}).json()
        texts = [item["text"] for item in data["suggestions"]]
        kernels = {c["kernel"] for c in client.get(f"/runs/{corpus['hostile']}.json").json()["compilations"]}
        assert any("<img" in name for name in kernels)
        assert set(texts) == {f"kernel:{name}" for name in kernels if "add_kernel" in name}
        page = client.get("/search/suggest", params={"q": "add_kernel"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert hostile.audit_html(page.text) == []
        assert "<img" not in page.text and "&lt;img" in page.text
        options = _Options()
        options.feed(page.text)
        assert options.values == texts  # the attribute gives back the name exactly
        title = client.get("/search/suggest", params={"q": "title:onerror"})
        assert hostile.audit_html(title.text) == [] and "&lt;img src=x onerror=PWN()&gt;" in title.text
        hostile_word = client.get("/search/suggest.json", params={"q": hostile.SCRIPT * 100})
        assert hostile_word.status_code == 200 and hostile_word.json()["suggestions"] == []


def test_parse_word():
    assert parse_word("op:tma") == ("op", "tma")
    assert parse_word('title:"flash att') == ("title", "flash att")
    assert parse_word("GROUP:") == ("group", "")
    assert parse_word("foo:bar") == ("", "foo:bar")
    assert parse_word("matmul") == ("", "matmul")


def test_the_search_box_is_a_combobox_on_every_page(corpus):
    with client_for(corpus) as client:
        for url in ("/", f"/runs/{corpus['gluon']}", "/-/layout"):
            page = client.get(url).text
            assert 'data-suggest-url="/search/suggest"' in page and 'role="listbox"' in page, url
            assert "search-suggest.js" in page, url


def test_the_suggest_url_keeps_the_base_url():
    from app.urls import Urls

    assert Urls("/irlens").search_suggest("op:tma") == "/irlens/search/suggest?q=op%3Atma"

