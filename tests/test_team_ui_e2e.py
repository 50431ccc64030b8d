"""The team server's web UI (issue 22), end to end: the real `reos-memory team-server` on an
embedded PostgreSQL, driven in Debian's chromium by Playwright. Sign in with a key; a writer
approves a share and edits a team memory; an admin makes a key (shown once) and revokes it;
another org's key sees none of it; and without the cookie, from another origin or without the
CSRF token nothing changes."""

from __future__ import annotations

import hashlib
import hmac
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from email.message import Message
from typing import Any

import pytest

from reos_memory.team import admin
from reos_memory.team.database import TeamDatabase
from tests.team_fixtures import ACTOR, Server, data_dir_of, start_server

HASH = {"REOS_MEMORY_EMBEDDER": "hash"}

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
    page.wait_for_url("**/shares?notice=approved*")
    decided = server.result(org.writer, "team/shares/list", {"status": "approved"})["shares"]
    mid = next(s["memory_id"] for s in decided if s["id"] == share["id"])
    got = server.result(org.admin, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["text"] == text and got["origin"] == "share"

    page.goto(f"{server.base}/memories")
    page.get_by_role("link", name=text).click()
    page.get_by_label("Text", exact=True).fill(text + " (newest first)")
    page.get_by_role("button", name="Save as version 2").click()
    page.wait_for_url(f"**/memories/{mid}?notice=saved*")
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
    labels = page.locator("header nav a").all_inner_texts()
    assert "Memories" in labels and not {"Members", "API keys", "Audit log"} & set(labels)
    page.goto(f"{server.base}/keys")
    assert "needs an API key with role 'admin'" in page.locator("main").inner_text()


def test_an_admin_makes_a_key_shown_once_and_revokes_it(server, org, browser):
    page = _signin(browser, server, org.admin)
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name", exact=True).fill("ci runner")
    page.get_by_label("Role", exact=True).select_option("reader")
    page.get_by_label("Team", exact=True).fill("backend")
    page.get_by_label("Your API key, to confirm", exact=True).fill(org.admin)
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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 303 itself is the answer looked at


def _send(
    server: Server, path: str, headers: dict[str, str], form: dict[str, str] | None = None
) -> tuple[int, Message]:
    """(status, headers) of a GET of `path`, or a POST of `form`, redirects not followed."""
    data = None if form is None else urllib.parse.urlencode(form).encode()
    kind = {} if form is None else {"Content-Type": "application/x-www-form-urlencoded"}
    req = urllib.request.Request(f"{server.base}{path}", data=data, headers={**kind, **headers})
    try:
        with urllib.request.build_opener(_NoRedirect).open(req, timeout=30) as resp:
            return int(resp.status), resp.headers
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.headers


def _post(server: Server, path: str, form: dict[str, str], headers: dict[str, str]) -> int:
    return _send(server, path, headers, form)[0]


def _get_status(server: Server, path: str, headers: dict[str, str]) -> int:
    return _send(server, path, headers)[0]


def _session(server: Server, key: str) -> tuple[dict[str, str], str]:
    """Sign in over HTTP as the page does: (the headers of the signed-in browser: its session
    cookie and this server's Origin, the CSRF token of its forms, read from a page)."""
    status, headers = _send(server, "/signin", {"Origin": server.base}, {"key": key})
    assert status == 303, status
    cookie = headers["Set-Cookie"].split(";")[0]
    return {"Cookie": cookie, "Origin": server.base}, _csrf_of(server, cookie)


def _csrf_of(server: Server, cookie: str) -> str:
    """The CSRF token the pages of the session `cookie` hold in their forms."""
    req = urllib.request.Request(f"{server.base}/memories", headers={"Cookie": cookie})
    with urllib.request.urlopen(req, timeout=30) as resp:
        page = resp.read().decode()
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found, "a signed-in page holds its forms' CSRF token"
    return found.group(1)


def test_without_the_cookie_from_another_origin_or_without_csrf_nothing_changes(server, org):
    made = server.result(org.writer, "squirrel/memories/add",
                         {"project_id": PROJECT, "kind": "note", "text": "Hold still"})  # fmt: skip
    mid = made["memory"]["id"]
    signed, csrf = _session(server, org.writer)
    cookie = {"Cookie": signed["Cookie"]}
    same = {"Origin": server.base}
    # the cookie holds a session id, never the key; the key itself as a cookie signs nothing in
    assert org.writer not in signed["Cookie"]
    raw = {"Cookie": f"reos_team_ui={org.writer}", **same}
    raw_csrf = hmac.new(org.writer.encode(), b"csrf", hashlib.sha256).hexdigest()
    assert _post(server, f"/memories/{mid}/deprecate", {"csrf": raw_csrf}, raw) == 303
    path, form = f"/memories/{mid}/deprecate", {"csrf": csrf}
    assert _post(server, path, form, same) == 303  # no cookie: sent to sign in, nothing done
    assert _post(server, path, form, {**cookie, "Origin": "http://evil.example"}) == 403
    assert _post(server, path, form, cookie) == 403  # no Origin at all
    assert _post(server, path, {"csrf": "0" * 64}, {**cookie, **same}) == 403
    wrong = _session(server, org.reader)[1]
    assert _post(server, path, {"csrf": wrong}, {**cookie, **same}) == 403
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["status"] == "provisional" and got["version"] == 1
    # the same request as the page sends it goes through
    assert _post(server, path, form, {**cookie, **same}) == 303
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["status"] == "deprecated"


def test_a_stolen_cookie_cannot_make_a_key_that_outlives_its_session(server, org):
    """Whoever reads the browser's cookie (a server on another 127.0.0.1 port) can act in the
    session until it ends, and reads the CSRF token off any page; a key would outlive the
    session, so making one asks for the signed-in key again."""
    signed, csrf = _session(server, org.admin)  # (what the thief holds: the cookie)
    before = len(server.result(org.admin, "team/keys/list")["keys"])
    form = {"csrf": csrf, "name": "thief", "role": "admin"}
    assert _post(server, "/keys/create", form, signed) == 403
    assert _post(server, "/keys/create", {**form, "confirm_key": org.writer}, signed) == 403
    assert len(server.result(org.admin, "team/keys/list")["keys"]) == before
    assert _post(server, "/keys/create", {**form, "confirm_key": org.admin}, signed) == 200
    assert len(server.result(org.admin, "team/keys/list")["keys"]) == before + 1
    # the forms' token is no function of the cookie alone
    sid = signed["Cookie"].partition("=")[2]
    assert csrf != hmac.new(sid.encode(), b"csrf", hashlib.sha256).hexdigest()


def test_a_tls_proxy_the_server_does_not_trust_is_named_in_the_refusal(server, org):
    """Behind a TLS proxy not given as --trusted-proxy the browser's Origin is https while the
    server sees http: the sign-in is refused, saying what to do."""
    data = urllib.parse.urlencode({"key": org.reader}).encode()
    netloc = server.base.removeprefix("http://")
    req = urllib.request.Request(f"{server.base}/signin", data=data, headers={
        "Origin": f"https://{netloc}", "Content-Type": "application/x-www-form-urlencoded",
    })  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(req, timeout=10)
    assert got.value.code == 403 and "--trusted-proxy" in got.value.read().decode()


def test_ui_pages_carry_the_policy_and_never_cors(server):
    for path in ("/signin", "/static/ui.css"):
        req = urllib.request.Request(
            f"{server.base}{path}", headers={"Origin": "http://evil.example"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            csp = resp.headers["Content-Security-Policy"]
            assert "default-src 'none'" in csp and "unsafe-inline" not in csp, path
            assert not [h for h in resp.headers if h.lower().startswith("access-control-")]


def test_an_admin_manages_members_and_a_writer_rejects_forgets_and_previews(server, org, browser):
    """The remaining actions from the browser: add and remove a member (their keys revoked),
    reject a share with a reason, forget a memory after its confirmation, and preview what an
    agent would get (nothing counted)."""
    page = _signin(browser, server, org.admin)
    page.get_by_role("link", name="Members").click()
    page.get_by_label("Name", exact=True).fill("grace")
    page.get_by_label("Team", exact=True).fill("backend")
    page.get_by_role("button", name="Add a member").click()
    page.wait_for_url("**/members?notice=added*")
    listed = server.result(org.admin, "team/members/list")["members"]
    grace = next(m for m in listed if m["name"] == "grace")
    key = server.result(org.admin, "team/keys/create",
                        {"role": "writer", "member": grace["member_id"]})["key"]  # fmt: skip
    page.get_by_role("button", name="remove grace").click()
    page.wait_for_url("**/members?notice=removed*")
    assert server.call(key, "team/whoami")[0] == 401, "a removed member's keys are revoked"

    share = server.result(org.reader, "team/shares/propose",
                          {"project_id": PROJECT, "kind": "note", "text": "Tabs, not spaces"})[
        "share"]  # fmt: skip
    mem = server.result(org.writer, "squirrel/memories/add", {
        "project_id": PROJECT, "kind": "invariant", "tier": "long_term",
        "text": "Invoices are numbered per tenant, never globally",
    })["memory"]  # fmt: skip
    page = _signin(browser, server, org.writer)
    page.get_by_role("link", name="Shares").click()
    page.get_by_label(f"reason for rejecting {share['id']}").fill("we use spaces")
    page.get_by_role("button", name=f"reject {share['id']}").click()
    page.wait_for_url("**/shares?notice=rejected*")
    rejected = server.result(org.writer, "team/shares/list", {"status": "rejected"})["shares"]
    assert [s["reason"] for s in rejected if s["id"] == share["id"]] == ["we use spaces"]

    page.get_by_role("link", name="What would the agent get?").click()
    page.get_by_label("Project", exact=True).fill(PROJECT)
    page.get_by_label("Task", exact=True).fill("number the invoices of a tenant")
    page.get_by_role("button", name="Show").click()
    assert "Invoices are numbered per tenant" in page.locator("pre.prompt").inner_text()
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mem["id"]})
    assert got["metrics"] is None or got["metrics"]["opportunities"] == 0

    page.goto(f"{server.base}/memories/{mem['id']}")
    page.get_by_role("button", name="Forget…").click()
    assert "Forget 1 memory?" in page.locator("h1").inner_text()
    page.get_by_role("button", name="Yes, forget").click()
    page.wait_for_url("**/memories?notice=forgotten*")
    assert server.error(org.writer, "squirrel/memories/get",
                        {"memory_id": mem["id"]})["code"] == -32004  # fmt: skip
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/signin?notice=signed+out*")
    page.goto(f"{server.base}/memories")
    assert page.url.startswith(f"{server.base}/signin"), "signed out: the cookie is gone"


def test_team_cr_memory_and_policy_pages(server, org, browser):
    """CR-Memory over every member's counts: the dry run on the page, then apply; the server's
    policy and where it came from."""
    pid = "proj-ui-cr"
    mem = server.result(org.writer, "squirrel/memories/add",
                        {"project_id": pid, "kind": "preference", "text": "Squash merge PRs"})[
        "memory"]  # fmt: skip
    for n, key in enumerate((org.reader, org.writer)):  # two keys' evidence of its use
        server.result(key, "squirrel/usage/report", {
            "idempotency_key": f"ui-usage-{n}",
            "items": [{"memory_id": mem["id"], "context_id": server.delivery(key, mem["id"]),
                       "opportunities": 10, "uses": 10, "regret_hits": 2}],
        })  # fmt: skip
    page = _signin(browser, server, org.writer)
    page.get_by_role("link", name="CR-Memory").click()
    page.get_by_label("Project", exact=True).fill(pid)
    page.get_by_role("button", name="Review").click()
    row = page.locator("tbody tr", has_text=mem["id"])
    assert "promote" in row.inner_text()
    assert server.result(org.writer, "squirrel/memories/get",
                         {"memory_id": mem["id"]})["memory"]["status"] == "provisional"  # fmt: skip
    page.get_by_role("button", name="Apply: promote 1, deprecate 0").click()
    page.wait_for_url("**/cr-memory?project=*notice=applied*")
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mem["id"]})["memory"]
    assert got["status"] == "active" and got["version"] == 2
    page.get_by_role("link", name="Policy").click()
    assert "[promotion.default]" in page.locator("pre").inner_text()


def test_team_memories_sort_by_use_paged_in_that_order(server, org):
    """squirrel/memories/list on the team server: most used first, pages in that order."""
    pid = "proj-ui-sort"
    ids = [server.result(org.writer, "squirrel/memories/add", {
        "project_id": pid, "kind": "note", "text": f"Sorted memory about {topic}"})["memory"]["id"]
        for topic in ("caching", "logging", "tracing")]  # fmt: skip
    server.result(org.reader, "squirrel/usage/report", {
        "idempotency_key": "ui-sort-1",
        "items": [{"memory_id": ids[1], "context_id": server.delivery(org.reader, ids[1]),
                   "opportunities": 5, "uses": 5},
                  {"memory_id": ids[2], "context_id": server.delivery(org.reader, ids[2]),
                   "opportunities": 3, "uses": 2}],
    })  # fmt: skip
    seen, cursor = [], None
    while True:
        params = {"project_id": pid, "sort": "uses", "limit": 1}
        page = server.result(org.reader, "squirrel/memories/list",
                             {**params, **({"cursor": cursor} if cursor else {})})  # fmt: skip
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [ids[1], ids[2], ids[0]]
    newest = server.result(
        org.reader, "squirrel/memories/list", {"project_id": pid, "sort": "newest"}
    )
    assert [m["id"] for m in newest["memories"]] == ids[::-1]
    err = server.error(org.reader, "squirrel/memories/list", {"sort": "uses", "cursor": "zzz"})
    assert err["code"] == -32602


def test_team_episodes_and_activity_pages(server, org, browser):
    sent = server.result(org.writer, "squirrel/ingest_episode", {
        "project_id": "proj-ui-ep", "episode_id": "ui-ep-1", "session_id": "sess-ui",
        "events": [
            {"role": "user", "kind": "message", "text": "run the tests"},
            {"role": "assistant", "kind": "tool_call", "tool_name": "Bash",
             "command": "npm test", "call_id": "a"},
            {"role": "tool", "kind": "tool_result", "call_id": "a", "is_error": True,
             "exit_code": 1, "text": "error: use pnpm"},
            {"role": "user", "kind": "message", "text": "No, never use npm here. Use pnpm."},
        ],
    })  # fmt: skip
    page = _signin(browser, server, org.reader)
    page.get_by_role("link", name="Episodes").click()
    page.get_by_role("link", name=sent["episode_id"]).click()
    main = page.locator("main").inner_text()
    assert "No, never use npm here" in main and "sess-ui" in main
    assert sent["outcome"] in main
    assert page.get_by_role("button", name="Run the writer on it now").count() == 0
    page.get_by_role("link", name="Activity").click()
    today = page.locator("tbody tr").first.inner_text()
    assert today.split()[0] == page.evaluate("new Date().toISOString().slice(0, 10)")


def test_a_team_memory_shows_its_episode_and_the_contexts_it_was_given_in(server, org, browser):
    sent = server.result(org.writer, "squirrel/ingest_episode", {
        "project_id": "proj-ui-from", "episode_id": "ui-ep-from",
        "events": [{"role": "user", "kind": "message",
                    "text": "No, never use yarn here. Always use pnpm for this repository."}],
    })  # fmt: skip
    mid = sent["memory_ids"][0]
    ctx = server.result(org.reader, "squirrel/get_task_context",
                        {"project_id": "proj-ui-from", "task": "install the packages with pnpm"})  # fmt: skip
    assert mid in ctx["memory_ids"]
    server.result(org.reader, "squirrel/feedback",
                  {"context_id": ctx["context_id"], "errors": 1, "retries": 0})  # fmt: skip
    got = server.result(org.reader, "squirrel/memories/get", {"memory_id": mid})
    assert [e["episode_id"] for e in got["episodes"]] == [sent["episode_id"]]
    assert [i["context_id"] for i in got["injections"]] == [ctx["context_id"]]
    assert got["injections"][0]["rank"] == ctx["memory_ids"].index(mid) + 1
    # another org's key: not found; the memory's contexts are nobody else's business
    assert server.error(org.b_admin, "squirrel/memories/get", {"memory_id": mid})["code"] == -32004
    page = _signin(browser, server, org.writer)
    page.goto(f"{server.base}/memories/{mid}")
    main = page.locator("main").inner_text()
    assert sent["episode_id"] in main and "install the packages with pnpm" in main
    assert "1 error(s)" in main
    page.get_by_label("TTL (days from now)", exact=True).fill("30")
    page.get_by_role("button", name="Save as version 2").click()
    page.wait_for_url(f"**/memories/{mid}?notice=saved*")
    assert server.result(org.reader, "squirrel/memories/get",
                         {"memory_id": mid})["memory"]["expires_at"] is not None  # fmt: skip


def test_team_bulk_deprecate_and_hostile_text(server, org, browser):
    """Bulk deprecation after its confirmation page, and memory text with HTML in it shown as
    text, on the team server's pages."""
    hostile = "<img src=x onerror=alert(1)><script>alert(2)</script> <b>team</b> text"
    ids = [server.result(org.writer, "squirrel/memories/add", {
        "project_id": "proj-ui-bulk", "kind": "note", "text": text})["memory"]["id"]
        for text in (hostile, "Bulk: the second one")]  # fmt: skip
    page = _signin(browser, server, org.writer)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{server.base}/memories?project=proj-ui-bulk")
    assert page.locator("main img, main b, main script").count() == 0
    assert hostile in page.locator("tbody").inner_text()
    for mid in ids:
        page.get_by_label(f"select {mid}").check()
    page.get_by_role("button", name="Deprecate selected…").click()
    assert "Deprecate 2 memories?" in page.locator("h1").inner_text()
    page.get_by_role("button", name="Yes, deprecate").click()
    page.wait_for_url("**/memories?*notice=2+deprecated*")
    for mid in ids:
        got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
        assert got["status"] == "deprecated" and got["version"] == 2
    page.goto(f"{server.base}/memories/{ids[0]}")
    assert page.locator(".memory-text").inner_text() == hostile
    assert dialogs == []


def test_sign_in_is_limited_and_bounded_and_a_stale_edit_is_a_conflict(server, org, team_db):
    """Failed sign-ins take the same per-address budget as /rpc's (429 once it is spent, and
    the key is not even looked at); a sign-in body bigger than a form is refused unread; an
    edit made on a page older than the memory is refused, not applied over the newer one."""
    bogus = "rmk_0123456789abcdef_" + "x" * 43
    # a server of its own with a budget of 5 a second (a burst of 10): the default 50 a second
    # can be more than a loaded machine's server answers, and then no sign-in is ever refused
    limited = start_server(data_dir_of(team_db), "--rate-limit", "5", env=HASH)
    try:
        t0 = time.monotonic()
        statuses = [
            _post(limited, "/signin", {"key": bogus}, {"Origin": limited.base}) for _ in range(40)
        ]
        elapsed = time.monotonic() - t0
        # (five at once: on a loaded machine a token may come back between two of them, but
        # a budget of /rpc's own, with its burst of 10, would refuse none)
        rpcs = [
            limited.post_raw(b'{"jsonrpc":"2.0","id":1,"method":"team/whoami"}', bogus)[0]
            for _ in range(5)
        ]
    finally:
        limited.stop()
    assert set(statuses) <= {401, 429} and 429 in statuses
    assert statuses.count(401) <= 10 + 5 * elapsed + 1, (statuses.count(401), elapsed)
    assert 429 in rpcs, rpcs  # the budget is the address's: /rpc is refused too
    assert _post(server, "/signin", {"key": "k" * 100_000}, {"Origin": server.base}) == 413
    mid = server.result(org.writer, "squirrel/memories/add",
                        {"project_id": PROJECT, "kind": "note", "text": "Version one"})[
        "memory"]["id"]  # fmt: skip
    server.result(org.admin, "squirrel/memories/update", {"memory_id": mid, "text": "Version two"})

    headers, csrf = _session(server, org.writer)
    form = {"csrf": csrf, "version": "1", "text": "Stale edit", "kind": "note",
            "tier": "short_term", "status": "provisional"}  # fmt: skip
    status = _post(server, f"/memories/{mid}/edit", form, headers)
    assert status == 409
    got = server.result(org.writer, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert (got["text"], got["version"]) == ("Version two", 2)


def test_a_team_key_cannot_change_an_org_memory_from_the_ui(server, org):
    """The UI's deprecate and forget of an org-wide memory, signed in with a team's writer key:
    refused by the same rule as over /rpc, the memory untouched."""
    made = server.result(org.admin, "squirrel/memories/add", {
        "project_id": PROJECT, "kind": "note", "owner_type": "org", "text": "The org's own rule",
    })  # fmt: skip
    mid = made["memory"]["id"]
    headers, csrf = _session(server, org.writer)
    for action in ("deprecate", "forget"):
        _post(server, f"/memories/{mid}/{action}", {"csrf": csrf}, headers)
    got = server.result(org.admin, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert got["status"] == "provisional" and got["version"] == 1


def test_forgetting_a_memory_out_of_reach_says_so(server, org, team_db):
    """A forget confirmed straight away for another team's memory did nothing and the page said
    "forgotten" (an outside review); it says the memory was not found."""
    with team_db.connect() as conn:
        other = admin.create_team(conn, ACTOR, "ui-a", "frontend").id
        front, _ = admin.create_key(conn, ACTOR, org="ui-a", team=other, role="writer")
    made = server.result(front.key, "squirrel/memories/add",
                         {"project_id": PROJECT, "kind": "note", "text": "Frontend's own"})  # fmt: skip
    mid = made["memory"]["id"]
    headers, csrf = _session(server, org.writer)  # (a writer of backend)
    status = _send(server, f"/memories/{mid}/forget", headers,
                    {"csrf": csrf, "confirmed": "1"})[0]  # fmt: skip
    assert status == 404, status
    kept = server.result(front.key, "squirrel/memories/get", {"memory_id": mid})["memory"]
    assert kept["text"] == "Frontend's own"


def test_a_session_ends_at_sign_out_and_revocation_and_is_no_key(server, org, team_db):
    """What a listener on another 127.0.0.1 port reads from the browser is a session id: no
    key for /rpc, and dead once its user signs out or its key is revoked."""
    with team_db.connect() as conn:
        new, _ = admin.create_key(conn, ACTOR, org="ui-a", team="backend", role="writer")
    headers, csrf = _session(server, new.key)
    assert _get_status(server, "/memories", headers) == 200
    sid = headers["Cookie"].partition("=")[2]
    assert server.call(sid, "team/whoami")[0] == 401  # a session id is no API key
    # sign-out ends the session on the server: the same cookie replayed is signed out
    assert _post(server, "/signout", {"csrf": csrf}, headers) == 303
    assert _get_status(server, "/memories", headers) == 303
    # revoking the key ends its sessions at their next request
    headers, _ = _session(server, new.key)
    assert _get_status(server, "/memories", headers) == 200
    server.result(org.admin, "team/keys/revoke", {"key_id": new.key_id})
    assert _get_status(server, "/memories", headers) == 303


def test_a_ui_sign_in_is_in_the_audit_log(server, org, team_db):
    from reos_memory.team import admin as team_admin

    with team_db.connect() as conn:
        new, _ = team_admin.create_key(conn, ACTOR, org="ui-a", role="reader")
    _session(server, new.key)
    rows = server.result(org.admin, "team/audit/list", {"method": "team/ui/signin"})["entries"]
    assert any(r["key_id"] == new.key_id for r in rows)
