"""Suggestions as you type in the top bar's search box, in Chromium: `op:tma` offers `group:tma`, the
keyboard picks it in place of the word being typed, and the search runs."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import upload_via_api
from tests.conftest import corpus_archive


@pytest.fixture(scope="module")
def gluon(server_url):
    return upload_via_api(server_url, corpus_archive("sm90_gluon"), title="Gluon suggest run")


def test_typing_op_tma_offers_the_tma_group_and_enter_searches_it(gluon, server_url, browser_page, page_errors):
    page = browser_page
    page.goto(f"{server_url}/runs/{gluon['run']}")
    box = page.get_by_role("combobox", name="Search runs, kernels and ops")
    box.click()
    box.press_sequentially("op:tma", delay=30)
    listbox = page.get_by_role("listbox", name="Suggestions")
    expect(listbox).to_be_visible()
    expect(box).to_have_attribute("aria-expanded", "true")
    options = listbox.get_by_role("option")
    expect(options.first).to_have_attribute("data-value", "group:tma")
    texts = options.evaluate_all("nodes => nodes.map(node => node.dataset.value)")
    twin = httpx.get(f"{server_url}/search/suggest.json", params={"q": "op:tma"}, timeout=60).json()
    assert texts == [item["text"] for item in twin["suggestions"]]
    assert "op:ttng.async_tma_copy_global_to_local" in texts
    box.press("ArrowDown")
    expect(options.first).to_have_attribute("aria-selected", "true")
    expect(box).to_have_attribute("aria-activedescendant", options.first.get_attribute("id"))
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"/search\?q=group%3Atma$"))
    expect(page.locator("#op-results")).to_be_visible()
    found = httpx.get(f"{server_url}/search.json", params={"q": "group:tma"}, timeout=60).json()
    assert found["compilations"]
    expect(page.locator("#op-results").get_by_role("link", name=found["compilations"][0]["kernel"]).first).to_be_visible()
    assert page_errors == []


def test_the_choice_replaces_only_the_word_at_the_caret(gluon, server_url, browser_page, page_errors):
    page = browser_page
    page.goto(f"{server_url}/")
    box = page.get_by_role("combobox", name="Search runs, kernels and ops")
    box.click()
    box.press_sequentially("gluon op:tm", delay=30)
    listbox = page.get_by_role("listbox", name="Suggestions")
    expect(listbox.get_by_role("option").first).to_have_attribute("data-value", "group:tma")
    box.press("Escape")  # closes the list, keeps the text
    expect(listbox).to_be_hidden()
    expect(box).to_have_value("gluon op:tm")
    box.press("ArrowDown")  # opens it again on the same options
    expect(listbox).to_be_visible()
    box.press("ArrowUp")  # from the first, up wraps to the last
    last = listbox.get_by_role("option").last
    expect(last).to_have_attribute("aria-selected", "true")
    choice = last.get_attribute("data-value")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"/search\?q="))
    assert parse_qs(urlparse(page.url).query)["q"] == [f"gluon {choice}"]
    assert page_errors == []
