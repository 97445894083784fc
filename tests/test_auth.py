"""Tokens, sign-in, who sees which run, the read gate, and running under a base URL behind a proxy.

Every app here runs with its lifespan (`with TestClient(...)`) on a fresh database, with
uploads of the committed add_kernel fixture log.
"""

from __future__ import annotations

import html
import re
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.store.models import ApiToken
from app.web.app import create_app
from app.web.auth import SESSION_COOKIE, create_token, hash_token, read_session, revoke_token, sign_session
from tests.conftest import FIXTURES, csrf_header, form_token, fresh_db_url

FIXTURE_LOG = FIXTURES / "sm90_add_kernel_dump.log.gz"
BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def make_client(tmp_path: Path, **settings: object) -> TestClient:
    options = {
        "db_url": fresh_db_url(tmp_path),
        "data_dir": tmp_path / "data",
        "load_demo": False,
        **settings,
    }
    return TestClient(create_app(Settings(**options)), follow_redirects=False)


def make_token(client: TestClient, name: str) -> str:
    with client.app.state.db.session() as session:
        token = create_token(session, name)
        session.commit()
    return token


def sign_in(client: TestClient, token: str, base: str = "", **fields: str) -> httpx.Response:
    """What the sign-in form posts, with its CSRF token."""
    csrf = form_token(client, f"{base}/-/signin")
    return client.post(f"{base}/-/signin", data={"token": token, "csrf_token": csrf, **fields})


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def upload(client: TestClient, token: str | None = None, **fields: object) -> httpx.Response:
    with FIXTURE_LOG.open("rb") as log:
        return client.post(
            "/runs",
            files=[("file", (FIXTURE_LOG.name, log, "application/gzip"))],
            data=fields,
            headers={"Accept": "application/json", **(bearer(token) if token else {})},
        )


def listed_ids(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {run["run"] for run in response.json()["runs"]}


# -- tokens -----------------------------------------------------------------------------------------


def test_tokens_are_stored_hashed_and_revocable(db):
    with db.session() as session:
        token = create_token(session, "alice")
        session.commit()
        [row] = session.query(ApiToken).all()
        assert row.name == "alice"
        assert row.token_hash == hash_token(token) != token
        assert token.startswith("irl_") and len(token) >= 40
        with pytest.raises(ValueError, match="exists"):
            create_token(session, "alice")
        with pytest.raises(ValueError, match="bad token name"):
            create_token(session, "no spaces please")
        assert revoke_token(session, "alice")
        assert not revoke_token(session, "alice")


def test_token_create_prints_the_token_on_its_last_line(tmp_path):
    url = fresh_db_url(tmp_path)
    irlens = [sys.executable, "-m", "app.cli"]
    made = subprocess.run(
        [*irlens, "token", "create", "alice", "--db", url], capture_output=True, text=True, check=False
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"irl_[A-Za-z0-9_-]{43}", token)
    listed = subprocess.run(
        [*irlens, "token", "list", "--db", url], capture_output=True, text=True, check=False
    )
    assert listed.stdout.startswith("alice\t")
    again = subprocess.run(
        [*irlens, "token", "create", "alice", "--db", url], capture_output=True, text=True, check=False
    )
    assert again.returncode == 1 and "exists" in again.stderr
    revoked = subprocess.run(
        [*irlens, "token", "revoke", "alice", "--db", url], capture_output=True, text=True, check=False
    )
    assert revoked.returncode == 0
    gone = subprocess.run(
        [*irlens, "token", "revoke", "alice", "--db", url], capture_output=True, text=True, check=False
    )
    assert gone.returncode == 1


# -- uploading --------------------------------------------------------------------------------------


def test_upload_without_a_token_is_refused_when_one_is_required(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        token = make_token(client, "alice")
        refused = upload(client)
        assert refused.status_code == 401
        assert "token" in refused.json()["error"]
        assert upload(client, "irl_not-a-real-token").status_code == 401
        accepted = upload(client, token, title="mine", tag=["fp8", "sm90"])
        assert accepted.status_code == 201, accepted.text
        run = accepted.json()
        assert (run["owner"], run["title"], run["tags"], run["listed"]) == (
            "alice",
            "mine",
            ["fp8", "sm90"],
            False,
        )
        assert client.get(run["url"] + ".json").json()["owner"] == "alice"


def test_laptop_mode_needs_no_token_but_records_one_when_sent(tmp_path):
    with make_client(tmp_path) as client:
        token = make_token(client, "alice")
        anonymous = upload(client)
        assert anonymous.status_code == 201 and anonymous.json()["owner"] is None
        assert upload(client, token).json()["owner"] == "alice"
        # Without tokens every run is on the home page.
        assert len(listed_ids(client.get("/index.json"))) == 2


# -- signing in -------------------------------------------------------------------------------------


def test_cookie_sign_in_uploads_as_the_token_and_ends_with_sign_out(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        token = make_token(client, "alice")
        form = client.get("/-/signin", headers=BROWSER)
        assert form.status_code == 200 and 'name="token"' in form.text
        csrf = form_token(client, "/-/signin")
        without_token = client.post("/-/signin", data={"token": token, "next": "/"}, headers=BROWSER)
        assert without_token.status_code == 403 and SESSION_COOKIE not in client.cookies
        wrong = client.post(
            "/-/signin", data={"token": "irl_wrong", "next": "/", "csrf_token": csrf}, headers=BROWSER
        )
        assert wrong.status_code == 401 and "not valid" in wrong.text
        assert SESSION_COOKIE not in client.cookies

        signed_in = client.post(
            "/-/signin", data={"token": token, "next": "/search?q=x", "csrf_token": csrf}, headers=BROWSER
        )
        assert signed_in.status_code == 303
        assert signed_in.headers["location"] == "/search?q=x"
        cookie = signed_in.headers["set-cookie"]
        assert "HttpOnly" in cookie and "samesite=lax" in cookie.lower() and "Path=/" in cookie
        assert token not in cookie
        assert client.get("/-/whoami.json").json() == {
            "name": "alice",
            "via": "session",
            "require_token": True,
            "require_token_to_read": False,
        }
        assert upload(client).status_code == 403  # a cookie alone does not make a change
        run = upload(client, csrf_token=form_token(client))
        assert run.status_code == 201 and run.json()["owner"] == "alice"

        client.post("/-/signout", data={"csrf_token": csrf})
        assert client.get("/-/whoami.json").json()["name"] is None
        assert upload(client).status_code == 401


def test_a_forged_or_revoked_session_counts_for_nothing(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        token = make_token(client, "alice")
        sign_in(client, token)
        good = client.cookies[SESSION_COOKIE]
        payload, _, signature = good.partition(".")
        client.cookies.set(SESSION_COOKIE, payload + "." + signature[:-2] + "AA")
        assert client.get("/-/whoami.json").json()["name"] is None
        key = client.app.state.secret_key
        assert read_session(key, good) is not None
        assert read_session(b"another key", good) is None
        client.cookies.set(SESSION_COOKIE, good)
        assert client.get("/-/whoami.json").json()["name"] == "alice"
        with client.app.state.db.session() as session:
            revoke_token(session, "alice")
            session.commit()
        assert client.get("/-/whoami.json").json()["name"] is None


def test_sessions_expire_and_cross_site_changes_are_refused(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        token = make_token(client, "alice")
        with client.app.state.db.session() as session:
            row = session.query(ApiToken).one()
        old = sign_session(b"k", row, now=1_000_000)
        assert read_session(b"k", old, now=1_000_000 + 3600) == ("alice", row.pk)
        assert read_session(b"k", old, now=1_000_000 + 31 * 24 * 3600) is None
        run = upload(client, token).json()
        sign_in(client, token)
        cross = client.patch(
            f"/runs/{run['run']}", json={"title": "x"}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert cross.status_code == 403
        same = client.patch(
            f"/runs/{run['run']}", json={"title": "x"}, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert same.status_code == 403  # from our origin, but not from one of our pages
        same = client.patch(
            f"/runs/{run['run']}", json={"title": "x"}, headers={"Sec-Fetch-Site": "same-origin", **csrf_header(client)}
        )
        assert same.status_code == 200


def test_the_signing_key_is_generated_once_and_kept_private(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        sign_in(client, make_token(client, "alice"))
        key_file = tmp_path / "data" / "secret_key"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        first = key_file.read_text()
    with make_client(tmp_path / "again", data_dir=tmp_path / "data", db_url=client.app.state.db.url) as again:
        assert again.get("/-/whoami.json").status_code == 200
        from app.web.auth import load_secret_key

        assert load_secret_key(again.app.state.settings).decode() == first.strip()
    assert load_secret_key(Settings(secret_key="set-by-env", data_dir=tmp_path / "x")) == b"set-by-env"
    assert not (tmp_path / "x" / "secret_key").exists()


def test_sign_in_never_redirects_to_another_site(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        token = make_token(client, "alice")
        for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example"):
            response = sign_in(client, token, next=target)
            assert response.headers["location"] == "/"


# -- who sees what ----------------------------------------------------------------------------------


def test_unlisted_runs_need_their_link(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        alice, bob = make_token(client, "alice"), make_token(client, "bob")
        private = upload(client, alice, title="alice's private run").json()
        shared = upload(client, alice, title="alice's listed run", listed="1").json()
        assert (private["listed"], shared["listed"]) == (False, True)

        assert listed_ids(client.get("/index.json", headers=bearer(alice))) == {private["run"], shared["run"]}
        assert listed_ids(client.get("/index.json", headers=bearer(bob))) == {shared["run"]}
        assert listed_ids(client.get("/index.json")) == {shared["run"]}
        home = client.get("/", headers=BROWSER)
        assert private["run"] not in home.text and shared["run"] in home.text
        # Search follows the same rule.
        assert listed_ids(client.get("/search.json?q=alice", headers=bearer(bob))) == {shared["run"]}
        # The link is the capability: anyone holding it reads the run, its JSON and its snapshots.
        for headers in (bearer(bob), {}):
            page = client.get(private["url"] + ".json", headers=headers)
            assert page.status_code == 200 and page.json()["title"] == "alice's private run"
        compilation = private["compilations"][0]["url"]
        assert client.get(compilation + "/s/0/raw").status_code == 200


def test_only_the_owner_changes_or_deletes_a_run(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        alice, bob = make_token(client, "alice"), make_token(client, "bob")
        run = upload(client, alice).json()
        url = run["url"]
        assert client.patch(url, json={"title": "mine now"}).status_code == 401
        assert client.patch(url, json={"title": "mine now"}, headers=bearer(bob)).status_code == 403
        assert client.delete(url, headers=bearer(bob)).status_code == 403
        changed = client.patch(
            url, json={"title": " fp8 sweep ", "tags": "fp8, sm90,fp8", "listed": True}, headers=bearer(alice)
        )
        assert changed.status_code == 200, changed.text
        assert (changed.json()["title"], changed.json()["tags"], changed.json()["listed"]) == (
            "fp8 sweep",
            ["fp8", "sm90"],
            True,
        )
        assert client.patch(url, json={"owner": "bob"}, headers=bearer(alice)).status_code == 422
        # The HTML form: title, tags, listed (hidden 0, then the ticked box's 1; unticked leaves only 0).
        form = client.post(
            url + "/edit",
            data={"title": "t2", "tags": "a,b", "listed": "0"},
            headers={**BROWSER, **bearer(alice)},
        )
        assert form.status_code == 303 and form.headers["location"] == url
        after = client.get(url + ".json").json()
        assert (after["title"], after["tags"], after["listed"]) == ("t2", ["a", "b"], False)
        edit_page = client.get(url + "/edit", headers={**BROWSER, **bearer(bob)})
        assert edit_page.status_code == 200 and "Only alice may change this run" in html.unescape(
            edit_page.text
        )
        deleted = client.delete(url, headers=bearer(alice))
        assert deleted.status_code == 200 and deleted.json()["deleted"] == run["run"]
        assert client.get(url).status_code == 404
        assert client.delete(url, headers=bearer(alice)).status_code == 404


def test_delete_form_asks_for_confirmation(tmp_path):
    with make_client(tmp_path) as client:
        run = upload(client).json()
        unconfirmed = client.post(run["url"] + "/delete", headers=BROWSER)
        assert unconfirmed.status_code == 303 and unconfirmed.headers["location"] == run["url"] + "/edit"
        assert client.get(run["url"]).status_code == 200
        confirmed = client.post(run["url"] + "/delete", data={"confirm": "1"}, headers=BROWSER)
        assert confirmed.status_code == 303 and confirmed.headers["location"] == "/"
        assert client.get(run["url"]).status_code == 404


# -- reading needs a token ----------------------------------------------------------------------------


def test_require_token_to_read_blocks_anonymous_readers(tmp_path):
    settings = {
        "require_token": True,
        "require_token_to_read": True,
        "trusted_user_header": "X-Forwarded-User",
    }
    with make_client(tmp_path, **settings) as client:
        alice = make_token(client, "alice")
        run = upload(client, alice, listed="1").json()
        for path in ("/", "/index.json", run["url"], run["url"] + ".json", "/search.json?q=add"):
            assert client.get(path).status_code == 401, path
        assert client.get(run["url"] + ".json", headers=bearer("irl_forged")).status_code == 401
        browser = client.get(run["url"], headers=BROWSER)
        assert browser.status_code == 303
        assert browser.headers["location"] == f"/-/signin?next=/runs/{run['run']}"
        # Always open: health, the sign-in form, static files.
        assert client.get("/-/health").status_code == 200
        assert client.get("/-/signin", headers=BROWSER).status_code == 200
        assert client.get("/static/app.css").status_code == 200
        # A token, a session, or the trusted proxy's header opens everything.
        assert client.get(run["url"] + ".json", headers=bearer(alice)).status_code == 200
        proxied = client.get(run["url"] + ".json", headers={"X-Forwarded-User": "carol"})
        assert proxied.status_code == 200
        assert client.get("/-/whoami.json", headers={"X-Forwarded-User": "carol"}).json()["via"] == "header"
        # ...but the proxy's user has no token: uploading still needs one.
        assert upload(client, None).status_code == 401
        sign_in(client, alice)
        assert client.get("/index.json").status_code == 200


def test_the_user_header_counts_only_when_the_setting_names_it(tmp_path):
    with make_client(tmp_path, require_token_to_read=True) as client:
        assert client.get("/index.json", headers={"X-Forwarded-User": "mallory"}).status_code == 401


# -- behind a reverse proxy, under a base URL ------------------------------------------------------------


LINK = re.compile(r'(?<![-\w])(?:href|src|action)="([^"]*)"')


def page_links(text: str) -> list[str]:
    return [html.unescape(link) for link in LINK.findall(text)]


def test_base_url_prefixes_every_link_and_answers_both_ways(tmp_path):
    with make_client(tmp_path, base_url="/irlens/", require_token=True) as client:
        token = make_token(client, "alice")
        run = upload(client, token, listed="1").json()
        assert run["url"].startswith("/irlens/runs/")
        route = run["url"].removeprefix("/irlens")
        compilation = run["compilations"][0]["url"]
        assert compilation.startswith("/irlens/runs/")
        pages = [
            "/",
            route,
            route + "/edit",
            compilation.removeprefix("/irlens"),
            compilation.removeprefix("/irlens") + "/s/3",
            compilation.removeprefix("/irlens") + "/map",
            "/search?q=add",
            "/-/signin",
        ]
        for page in pages:
            # The proxy may pass the prefix on, or strip it: both answer, with the same links.
            for path in ("/irlens" + page, page):
                response = client.get(path, headers={**BROWSER, **bearer(token)})
                assert response.status_code == 200, (path, response.status_code)
                links = page_links(response.text)
                assert links, path
                wrong = [link for link in links if not link.startswith(("/irlens/", "#", "data:", "?"))]
                assert not wrong, (path, wrong)
                assert response.headers["link"].startswith("</irlens/"), response.headers["link"]
        # Redirects and cookies stay under the prefix too.
        signin = sign_in(client, token, base="/irlens", next=run["url"])
        assert signin.headers["location"] == run["url"]
        assert "Path=/irlens" in signin.headers["set-cookie"]
        assert client.get("/irlens/-/health").status_code == 200
        assert client.get("/irlens/static/app.css").status_code == 200


def test_base_url_sign_in_redirect_keeps_the_prefix(tmp_path):
    with make_client(tmp_path, base_url="/irlens", require_token_to_read=True) as client:
        for path in ("/irlens/search", "/search"):
            response = client.get(path, headers=BROWSER)
            assert response.status_code == 303
            assert response.headers["location"] == "/irlens/-/signin?next=/irlens/search"


def test_pages_show_who_is_signed_in(tmp_path):
    with make_client(tmp_path, require_token=True) as client:
        token = make_token(client, "alice")
        run = upload(client, token).json()
        anonymous = client.get(run["url"], headers=BROWSER)
        assert 'class="nav-user" href="/-/signin">Sign in</a>' in anonymous.text
        sign_in(client, token)
        signed_in = client.get(run["url"], headers=BROWSER)
        assert 'title="Signed in">alice</a>' in signed_in.text
        assert f'href="{run["url"]}/edit"' in signed_in.text


def test_the_demo_run_is_listed_for_everyone(tmp_path):
    with make_client(tmp_path, require_token=True, load_demo=True) as client:
        [demo] = client.get("/index.json").json()["runs"]
        assert demo["tags"] == ["demo"] and demo["owner"] is None
