"""The profile metric picker (issue 33): a run holding an ncu report and its own source-page CSV
exports (tests/fixtures/gpu_runs/ncu.tar.xz) offers each counter once, under the name the source
page shows; a `?metric=` the profile does not hold is said so on every page that picks one, and the
JSON twins carry it as `unknown_metric`."""

from __future__ import annotations

import html
import re
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.store.db import Database
from app.web.app import create_app
from parsers.profiles import ncu_rep
from parsers.profiles.profile_records import display_twins
from tests.conftest import FIXTURES, fresh_db_url, ingest_paths

NCU = FIXTURES / "gpu_runs" / "ncu.tar.xz"
pytestmark = pytest.mark.skipif(not ncu_rep.available(), reason="the ncu-report package is not installed")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("picker")
    url = fresh_db_url(tmp)
    database = Database(url)
    run = ingest_paths(database, [NCU])
    database.dispose()
    with TestClient(create_app(Settings(db_url=url, load_demo=False, data_dir=tmp), background=False)) as client:
        yield client, run


def _options(page: str) -> list[list[str]]:
    return [[html.unescape(o) for o in re.findall(r"<option[^>]*>([^<]*)</option>", select)]
            for select in re.findall(r'<select name="metric"[^>]*>(.*?)</select>', page, re.DOTALL)]


def test_each_counter_is_offered_once(site):
    client, run = site
    profiles = client.get(run["url"] + ".json").json()["profiles"]
    assert {p["tool"] for p in profiles} == {"ncu"} and len(profiles) == 3  # the report and 2 CSV exports
    compilation = client.get(run["url"] + ".json").json()["compilations"][0]
    for url in (compilation["url"], compilation["url"] + "/map"):
        (options,) = _options(client.get(url).text)
        assert options and not [name for name, n in Counter(options).items() if n > 1]
        twins = [name for name in options if any(t in options for t in display_twins(name))]
        assert not twins, twins  # smsp__pcsamp_sample_count is "Warp Stall Sampling (All Samples)"
        assert "Warp Stall Sampling (All Samples)" in options and "smsp__pcsamp_sample_count" not in options


def test_a_raw_report_name_picks_its_display_twin_silently(site):
    client, run = site
    compilation = client.get(run["url"] + ".json").json()["compilations"][0]
    data = client.get(compilation["url"] + ".json", params={"metric": "smsp__pcsamp_sample_count"}).json()
    assert data["hot_lines"]["metric"]["name"] == "Warp Stall Sampling (All Samples)"
    assert data["hot_lines"]["unknown_metric"] is None


@pytest.mark.parametrize("wanted", ["no such metric", "<b>bold</b>", "Warp Stall Sampling"])
def test_an_unknown_metric_says_so(site, wanted):
    client, run = site
    compilations = client.get(run["url"] + ".json").json()["compilations"]
    first = compilations[0]
    pages = [first["url"], first["url"] + "/map", f"/compare/{run['run']}-{first['id']}..{run['run']}-{compilations[1]['id']}"]
    for url in pages:
        response = client.get(url, params={"metric": wanted})
        assert response.status_code == 200, url
        text = html.unescape(response.text)
        assert f"No metric “{wanted}” in this profile: showing" in text, url
        assert "<b>bold</b>" not in response.text  # escaped
    data = client.get(first["url"] + ".json", params={"metric": wanted}).json()
    assert data["hot_lines"]["unknown_metric"] == wanted
    assert data["hot_lines"]["metric"]["name"] != wanted
