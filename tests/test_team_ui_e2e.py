"""The team server's web UI (issue 22), end to end: the real `reos-memory team-server` on an
embedded PostgreSQL, driven in Debian's chromium by Playwright. Sign in with a key; a writer
approves a share and edits a team memory; an admin makes a key (shown once) and revokes it;
another org's key sees none of it; and without the cookie, from another origin or without the
CSRF token nothing changes."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase
from tests.team_fixtures import ACTOR, Server

pytestmark = pytest.mark.e2e
PROJECT = "proj-ui"


class Org:
    def __init__(self, db: TeamDatabase) -> None:
        new = admin.create_key
        with db.connect() as conn:
            self.a = admin.create_org(conn, ACTOR, "ui-a").id
            admin.create_org(conn, ACTOR, "ui-b")
            self.backend = admin.create_team(conn, ACTOR, "ui-a", "backend").id
            self.admin = new(conn, ACTOR, org="ui-a", role="admin", name="ops")[0].key
            self.writer = new(conn, ACTOR, org="ui-a", team="backend", role="writer")[0].key
            self.reader = new(conn, ACTOR, org="ui-a", team="backend", role="reader")[0].key
            self.b_admin = new(conn, ACTOR, org="ui-b", role="admin")[0].key


@pytest.fixture(scope="module")
def org(team_db: TeamDatabase) -> Org:
    return Org(team_db)


@pytest.fixture(scope="module")
def server(hash_team_server: Server, org: Org) -> Server:
    return hash_team_server


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium")
    assert path, "Debian's chromium is needed for this test (./dev setup installs it)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


def _signin(browser: Any, server: Server, key: str) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server.base}/")
    assert page.url.startswith(f"{server.base}/signin")
    page.get_by_label("API key", exact=True).fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server.base}/memories")
    return page


def test_a_writer_approves_a_share_and_edits_a_team_memory(server, org, browser):
    text = "Release notes go in CHANGELOG.md under Unreleased"
    share = server.result(org.reader, "team/shares/propose",
                          {"project_id": PROJECT, "kind": "preference", "text": text})["share"]  # fmt: skip
    page = _signin(browser, server, org.writer)
    page.get_by_role("link", name="Shares").click()
    assert text in page.locator("main").inner_text()
    page.get_by_role("button", name=f"approve {share['id']}").click()
    page.wait_for_url("**/shares?notice=approved")
    decided = server.result(org.writer, "team/shares/list", {"status": "approved"})["shares"]
    mid = next(s["memory_id"] for s in decided if s["id"] == share["id"])
    got = server.result(org.admin, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["text"] == text and got["origin"] == "share"

    page.goto(f"{server.base}/memories")
    page.get_by_role("link", name=text).click()
    page.get_by_label("Text", exact=True).fill(text + " (newest first)")
    page.get_by_role("button", name="Save as version 2").click()
    page.wait_for_url(f"**/memories/{mid}?notice=saved")
    got = server.result(org.admin, "squirrel/memories/get", {"memory_id": mid})
    assert got["memory"]["version"] == 2 and got["memory"]["text"].endswith("(newest first)")
    assert got["history"][0]["text"] == text
    assert "version 1" in page.locator("main").inner_text()


def test_a_reader_sees_but_cannot_change(server, org, browser):
    made = server.result(org.writer, "squirrel/memories/add",
                         {"project_id": PROJECT, "kind": "note", "text": "Readers only read"})  # fmt: skip
    mid = made["memory"]["id"]
    page = _signin(browser, server, org.reader)
    page.goto(f"{server.base}/memories/{mid}")
    assert page.get_by_role("button", name="Save as version 2").count() == 0
    assert [label for label in page.locator("header nav a").all_inner_texts()] == [
        "Memories", "What would the agent get?", "Shares",
    ]  # fmt: skip
    page.goto(f"{server.base}/keys")
    assert "needs an API key with role 'admin'" in page.locator("main").inner_text()


def test_an_admin_makes_a_key_shown_once_and_revokes_it(server, org, browser):
    page = _signin(browser, server, org.admin)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name", exact=True).fill("ci runner")
    page.get_by_label("Role", exact=True).select_option("reader")
    page.get_by_label("Team", exact=True).fill("backend")
    page.get_by_role("button", name="Make the key").click()
    key = page.locator("#new-key").inner_text().strip()
    assert key.startswith("rmk_") and "/keys/create" in page.url
    me = server.result(key, "team/whoami")
    assert me["role"] == "reader" and me["team_id"] == org.backend and me["name"] == "ci runner"
    page.goto(f"{server.base}/keys")
    assert key not in page.content(), "a key is shown once, never listed"
    prefix = key.split("_")[0] + "_" + me["key_id"]
    page.get_by_role("button", name=f"revoke {prefix}").click()
    page.wait_for_url("**/keys?notice=revoked*")
    status, _ = server.call(key, "team/whoami")
    assert status == 401
    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("Method", exact=True).fill("team/keys/create")
    page.get_by_role("button", name="Filter").click()
    assert me["key_id"] in page.locator("tbody").inner_text()


def test_another_orgs_key_sees_nothing_of_this_org(server, org, browser):
    made = server.result(org.writer, "squirrel/memories/add",
                         {"project_id": PROJECT, "kind": "note", "text": "Only org A's"})  # fmt: skip
    page = _signin(browser, server, org.b_admin)
    assert "Only org A's" not in page.locator("main").inner_text()
    page.goto(f"{server.base}/memories/{made['memory']['id']}")
    assert "not found" in page.locator("main").inner_text().lower()
    page.goto(f"{server.base}/keys")
    assert "ops" not in page.locator("tbody").inner_text()


def _post(server: Server, path: str, form: dict[str, str], headers: dict[str, str]) -> int:
    req = urllib.request.Request(
        f"{server.base}{path}", data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
    )  # fmt: skip

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # the 303 itself is the answer looked at

    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_without_the_cookie_from_another_origin_or_without_csrf_nothing_changes(server, org):
    import hashlib
    import hmac

    made = server.result(org.writer, "squirrel/memories/add",
                         {"project_id": PROJECT, "kind": "note", "text": "Hold still"})  # fmt: skip
    mid = made["memory"]["id"]
    csrf = hmac.new(org.writer.encode(), b"csrf", hashlib.sha256).hexdigest()
    cookie = {"Cookie": f"reos_team_ui={org.writer}"}
    same = {"Origin": server.base}
    path, form = f"/memories/{mid}/deprecate", {"csrf": csrf}
    assert _post(server, path, form, same) == 303  # no cookie: sent to sign in, nothing done
    assert _post(server, path, form, {**cookie, "Origin": "http://evil.example"}) == 403
    assert _post(server, path, form, cookie) == 403  # no Origin at all
    assert _post(server, path, {"csrf": "0" * 64}, {**cookie, **same}) == 403
    wrong = hmac.new(org.reader.encode(), b"csrf", hashlib.sha256).hexdigest()
    assert _post(server, path, {"csrf": wrong}, {**cookie, **same}) == 403
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["status"] == "provisional" and got["version"] == 1
    # the same request as the page sends it goes through
    assert _post(server, path, form, {**cookie, **same}) == 303
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["status"] == "deprecated"


def test_ui_pages_carry_the_policy_and_never_cors(server):
    for path in ("/signin", "/static/ui.css"):
        req = urllib.request.Request(
            f"{server.base}{path}", headers={"Origin": "http://evil.example"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            csp = resp.headers["Content-Security-Policy"]
            assert "default-src 'none'" in csp and "unsafe-inline" not in csp, path
            assert not [h for h in resp.headers if h.lower().startswith("access-control-")]
