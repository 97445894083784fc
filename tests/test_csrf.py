"""CSRF protection on every state-changing route, and ids that cannot be guessed.

The routes are enumerated from the app, so a new POST/PATCH/DELETE route is covered (or fails here
until its path parameters are known). See app/web/security.py for the two layers.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.app import create_app
from app.web.security import SECURITY_HEADERS
from tests.conftest import FIXTURES, form_token, fresh_db_url

FIXTURE_LOG = FIXTURES / "sm90_add_kernel_dump.log.gz"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def app_routes(app):
    def walk(routes):
        for route in routes:
            inner = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
            if inner is not None:
                yield from walk(inner.routes)
            else:
                yield route

    return list(walk(app.router.routes))


def unsafe_routes(app) -> list[tuple[str, str]]:
    return sorted(
        (method, route.path) for route in app_routes(app) for method in (getattr(route, "methods", None) or ())
        if method in UNSAFE
    )


@pytest.fixture
def client(tmp_path):
    app = create_app(Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False))
    with TestClient(app, follow_redirects=False) as test_client:
        yield test_client


def upload(client: TestClient, **headers: str):
    with FIXTURE_LOG.open("rb") as log:
        return client.post("/runs", files=[("file", (FIXTURE_LOG.name, log, "application/gzip"))],
                           headers={"Accept": "application/json", **headers})


def call(client: TestClient, method: str, path: str, run_id: str, headers: dict, token: str | None = None):
    url = path.format(run_id=run_id)
    if method == "PATCH":
        return client.request(method, url, json={"title": "changed"},
                              headers={**headers, **({"X-CSRF-Token": token} if token else {})})
    if method == "DELETE":
        return client.request(method, url, headers={**headers, **({"X-CSRF-Token": token} if token else {})})
    data = {"title": "changed", "confirm": "1", "token": "irl_nope"} | ({"csrf_token": token} if token else {})
    if path == "/runs":  # the upload form is multipart: here with an empty file picker
        return client.post(url, data=data, files=[("file", ("", b""))], headers=headers)
    return client.request(method, url, data=data, headers=headers)


def test_the_state_changing_routes_are_the_known_ones(client):
    # A new one must be added to the checks below (and to a form with the CSRF field).
    assert unsafe_routes(client.app) == [
        ("DELETE", "/runs/{run_id}"),
        ("PATCH", "/runs/{run_id}"),
        ("POST", "/-/signin"),
        ("POST", "/-/signout"),
        ("POST", "/runs"),
        ("POST", "/runs/{run_id}/delete"),
        ("POST", "/runs/{run_id}/edit"),
    ]


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # a sibling subdomain is another origin
        {"Origin": "https://evil.example"},
        {"Origin": "null"},  # sandboxed frames and data: URLs
        {"Origin": "http://testserver.evil.example"},
    ],
)
def test_cross_site_changes_are_refused_on_every_route(client, headers):
    run_id = upload(client).json()["run"]
    for method, path in unsafe_routes(client.app):
        response = call(client, method, path, run_id, headers)
        assert response.status_code == 403, (method, path, response.text)
        assert "cross" in response.json()["error"]
    assert client.get(f"/runs/{run_id}.json").json()["title"] == ""  # nothing changed


def test_a_cookie_without_the_form_token_changes_nothing(client):
    run_id = upload(client).json()["run"]
    client.get("/")  # a browser that has been here carries the CSRF cookie
    assert "irlens_csrf" in client.cookies
    for method, path in unsafe_routes(client.app):
        for token in (None, "0" * 64):
            response = call(client, method, path, run_id, {"Sec-Fetch-Site": "same-origin"}, token)
            assert response.status_code == 403, (method, path, token)
    assert client.get(f"/runs/{run_id}.json").status_code == 200


# What each route answers a legitimate call of `call()` (not 403): signin's token is not valid, the
# upload's file picker is empty.
EXPECTED = {"/runs": 400, "/-/signin": 401, "/-/signout": 303, "/runs/{run_id}/edit": 303,
            "/runs/{run_id}": 200, "/runs/{run_id}/delete": 303}


def test_pages_forms_carry_a_token_that_works(client):
    run_id = upload(client).json()["run"]
    token = form_token(client)
    for page in ("/", f"/runs/{run_id}/edit", "/-/signin"):
        forms = re.findall(r"<form[^>]*method=\"post\".*?</form>", client.get(page).text, re.DOTALL)
        assert forms, page
        assert all('name="csrf_token"' in form for form in forms), page
    same_origin = {"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"}
    assert upload(client, **same_origin).status_code == 403  # cookie, no token
    with FIXTURE_LOG.open("rb") as log:
        uploaded = client.post("/runs", files=[("file", (FIXTURE_LOG.name, log, "application/gzip"))],
                               data={"csrf_token": token}, headers={"Accept": "application/json", **same_origin})
    assert uploaded.status_code == 201
    for method, path in unsafe_routes(client.app):
        run_id = upload(client, **{"X-CSRF-Token": token}).json()["run"]  # its own run: deletes remove it
        response = call(client, method, path, run_id, {**same_origin, "Accept": "text/html"}, token)
        assert response.status_code == EXPECTED[path], (method, path, response.text)
        if method == "PATCH" or path.endswith("/edit"):
            assert client.get(f"/runs/{run_id}.json").json()["title"] == "changed"
        if method == "DELETE" or path.endswith("/delete"):
            assert client.get(f"/runs/{run_id}.json").status_code == 404


def test_clients_that_are_not_browsers_need_no_csrf_token(client):
    """curl and `irlens upload` send no Origin, fetch metadata or cookies: no ambient authority."""
    run = upload(client)
    assert run.status_code == 201
    run_id = run.json()["run"]
    assert client.patch(f"/runs/{run_id}", json={"title": "by curl"}).status_code == 200
    assert client.delete(f"/runs/{run_id}").status_code == 200


def test_run_ids_are_128_random_bits_and_every_data_route_needs_one(client):
    ids = {upload(client).json()["run"] for _ in range(3)}
    assert len(ids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", run_id) for run_id in ids)
    for route in app_routes(client.app):
        path = getattr(route, "path", "")
        if "{" not in path:
            continue  # the home page, search, settings, health: no run's data without its id
        # Snapshot ids in a diff spec, and compilation ids in a compare spec, start with their run's
        # id (app/urls.py snapshot_id, compilation_id).
        # A kernel's history (/kernels/{name}) lists only the runs search shows the reader, with their ids.
        assert ("{run_id}" in path or path.startswith(("/diff/{spec}", "/compare/{spec}", "/kernels/{name"))
                or path == "/static"), path
    assert client.get("/runs/" + "0" * 32).status_code == 404
    assert client.get("/diff/" + "0" * 32 + "-1-1.." + "0" * 32 + "-1-2").status_code == 404
    assert client.get("/compare/" + "0" * 32 + "-1.." + "0" * 32 + "-2").status_code == 404


def test_browsers_get_errors_as_a_page_and_api_clients_as_json(client):
    page = client.get("/runs/" + "0" * 32, headers={"Accept": "text/html"})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "Not found" in page.text and "no such run" in page.text
    client.get("/")
    stale = client.post("/runs/" + "0" * 32 + "/edit", data={"title": "x"}, headers={"Accept": "text/html"})
    assert stale.status_code == 403 and "reload the page" in stale.text and "<h1" in stale.text
    assert client.get("/runs/" + "0" * 32).json() == {"error": "no such run", "detail": "no such run"}
    assert client.get("/runs/" + "0" * 32 + ".json", headers={"Accept": "text/html"}).json()["detail"]


def test_basic_credentials_and_odd_tokens_do_not_pass_for_a_csrf_token(client):
    run_id = upload(client).json()["run"]
    client.get("/")
    # A browser resends Basic credentials by itself (behind a basic-auth proxy): still ambient.
    basic = client.patch(f"/runs/{run_id}", json={"title": "x"}, headers={"Authorization": "Basic YTpi"})
    assert basic.status_code == 403
    for token in (b"\xe9", "x" * 10_000, ""):
        response = client.patch(f"/runs/{run_id}", json={"title": "x"}, headers={"X-CSRF-Token": token})
        assert response.status_code == 403, token
    form = client.post(f"/runs/{run_id}/edit", data={"title": "x", "csrf_token": "\u00e9"})
    assert form.status_code == 403
    assert client.get(f"/runs/{run_id}.json").json()["title"] == ""


def test_an_origin_naming_our_host_passes_with_or_without_its_default_port(client):
    run_id = upload(client).json()["run"]
    for origin, host in (("http://testserver", "testserver:80"), ("https://irlens.example", "irlens.example"),
                         ("https://irlens.example", "irlens.example:443")):
        response = client.patch(f"/runs/{run_id}", json={"title": "x"}, headers={"Origin": origin, "Host": host})
        assert response.status_code == 200, (origin, host)
    refused = client.patch(f"/runs/{run_id}", json={"title": "x"},
                           headers={"Origin": "https://irlens.example:8443", "Host": "irlens.example"})
    assert refused.status_code == 403


def test_a_server_error_carries_the_security_headers(tmp_path, monkeypatch):
    app = create_app(Settings(db_url=fresh_db_url(tmp_path), data_dir=tmp_path, load_demo=False))
    with TestClient(app, raise_server_exceptions=False) as client:
        def broken():
            raise RuntimeError("the database went away")

        monkeypatch.setattr(app.state.db, "session", broken)
        response = client.get("/-/health")
    assert response.status_code == 500 and "went away" not in response.text
    assert response.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
