"""The web UI's guard (issue 22), in process through the ASGI app: without the token, with a
wrong `Host` (DNS rebinding), from another origin, or without the form's CSRF token, a request is
refused and changes nothing; no response ever allows another origin (no CORS); every response
carries a strict Content-Security-Policy; memory text with HTML in it is shown as text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from reos_memory.interfaces.web.app import build
from reos_memory.interfaces.web.guard import Guard
from reos_memory.squirrel import api

PORT = 18_765  # only ever in Host headers and origins: nothing listens
BASE = f"http://127.0.0.1:{PORT}"
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> <b>bold</b> & "quotes"'


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    over = {"db": str(tmp_path / "m.db"), "embedder": "hash", "writer": "rules"}
    cfg = msgspec.structs.replace(load_config(None, over), catch_up_indexing=False)
    a = App(cfg, setup_logging("warning"))
    a.start()
    yield a
    a.close()


def _add(app: Any, text: str) -> str:
    p = api.MemoryAddParams(project_id="proj-ui", kind="invariant", text=text)
    out = app.squirrel.add_memory(p)
    assert out.memory is not None
    return str(out.memory.id)


class UI:
    """A client of the UI app; `signed_in` holds the cookie the token is exchanged for."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.guard = Guard(PORT)
        self.asgi = build(app.squirrel, self.guard)

    def client(self, *, signed_in: bool = True, host: str | None = None) -> httpx.AsyncClient:
        headers = {} if host is None else {"host": host}
        cookies = {self.guard.cookie: self.guard.sessions.begin(True)} if signed_in else {}
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.asgi), base_url=BASE, headers=headers,
            cookies=cookies, follow_redirects=False,
        )  # fmt: skip


@pytest.fixture
def ui(app: Any) -> UI:
    return UI(app)


def _text(app: Any, mid: str) -> str:
    return str(app.squirrel.get_memory(mid).memory.text)


async def test_without_the_token_nothing_is_shown(ui):
    _add(ui.app, "Deploys go through the release branch")
    async with ui.client(signed_in=False) as c:
        for path in ("/", "/memories", "/context", "/static/ui.css"):
            r = await c.get(path)
            assert r.status_code == 403 and "Deploys" not in r.text, path
        r = await c.get("/memories", params={"token": "not-the-token"})
        assert r.status_code == 403 and "set-cookie" not in r.headers


async def test_the_token_is_exchanged_for_a_strict_cookie_and_leaves_the_url(ui):
    async with ui.client(signed_in=False) as c:
        r = await c.get(ui.guard.url("/memories").removeprefix(BASE) + "&q=deploy")
        assert r.status_code == 303 and r.headers["location"] == "/memories?q=deploy"
        cookie = r.headers["set-cookie"]
        # the cookie holds a session id, never the token: a browser sends 127.0.0.1's cookies
        # to any other port it visits
        session = cookie.split(";")[0].removeprefix(f"{ui.guard.cookie}=")
        assert ui.guard.token not in cookie and len(session) >= 40
        assert ui.guard.sessions.get(session) is True
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        r = await c.get("/memories")
        assert r.status_code == 200 and "Memories" in r.text
        # the token itself is no cookie; an ended session lets nothing through
        async with ui.client(signed_in=False) as other:
            other.cookies.set(ui.guard.cookie, ui.guard.token)
            assert (await other.get("/memories")).status_code == 403
        ui.guard.sessions.end(session)
        assert (await c.get("/memories")).status_code == 403
        # a path of two slashes or a backslash is never sent on as another host; any path is
        # sent on as ASCII
        r = await c.get(BASE + "//evil.example/x", params={"token": ui.guard.token})
        assert r.headers["location"] == "/evil.example/x"
        r = await c.get(BASE + "/%5Cevil.example/x", params={"token": ui.guard.token})
        assert r.headers["location"] == "/evil.example/x"
        r = await c.get(BASE + "/m%E2%82%ACm", params={"token": ui.guard.token})
        assert r.status_code == 303 and r.headers["location"] == "/m%E2%82%ACm"
        # a token or cookie of any characters is refused, never an error
        r = await c.get("/memories", params={"token": "t\u20acken"})
        assert r.status_code == 403


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1:1", f"127.0.0.2:{PORT}"]
)
async def test_another_host_header_is_refused_even_with_the_cookie(ui, host):
    mid = _add(ui.app, "Rebinding must not reach this")
    async with ui.client(host=host) as c:
        r = await c.get(f"/memories/{mid}")
        assert r.status_code == 403 and "Rebinding" not in r.text
        r = await c.post(f"/memories/{mid}/forget", data={"csrf": ui.guard.csrf, "confirmed": "1"},
                         headers={"origin": BASE})  # fmt: skip
        assert r.status_code == 403
    assert _text(ui.app, mid) == "Rebinding must not reach this"


async def test_a_change_from_another_origin_or_without_one_is_refused(ui):
    mid = _add(ui.app, "Cross-site forms change nothing")
    form = {"csrf": ui.guard.csrf, "text": "changed by evil", "kind": "invariant"}
    async with ui.client() as c:
        for origin in ("http://evil.example", f"http://127.0.0.1:{PORT + 1}", "null", None):
            headers = {} if origin is None else {"origin": origin}
            r = await c.post(f"/memories/{mid}/edit", data=form, headers=headers)
            assert r.status_code == 403, origin
            assert "access-control-allow-origin" not in r.headers
    assert _text(ui.app, mid) == "Cross-site forms change nothing"


async def test_every_form_needs_its_csrf_token(ui):
    mid = _add(ui.app, "CSRF-less posts change nothing")
    posts = {
        f"/memories/{mid}/edit": {"text": "edited", "kind": "note"},
        f"/memories/{mid}/deprecate": {},
        f"/memories/{mid}/forget": {"confirmed": "1"},
        "/memories/bulk": {"ids": mid, "action": "forget", "confirmed": "1"},
        "/episodes/ep-none/retry": {},
        "/cr-memory/apply": {},
    }
    routes = {r.path.replace("{memory_id}", mid).replace("{episode_id}", "ep-none")
              for r in ui.asgi.app.routes if "POST" in (getattr(r, "methods", None) or ())}  # fmt: skip
    assert routes == set(posts), "a new POST route needs its place in this test"
    async with ui.client() as c:
        for path, data in posts.items():
            for token in (None, "0" * 64, ui.guard.token):
                sent = data if token is None else {**data, "csrf": token}
                r = await c.post(path, data=sent, headers={"origin": BASE})
                assert r.status_code == 403, (path, token)
    got = ui.app.squirrel.get_memory(mid).memory
    assert (got.text, got.status) == ("CSRF-less posts change nothing", "provisional")


async def test_every_response_has_a_strict_policy_and_no_cors(ui):
    mid = _add(ui.app, "Headers on every page")
    async with ui.client() as c:
        for path in (
            "/memories",
            f"/memories/{mid}",
            "/context",
            "/episodes",
            "/cr-memory",
            "/policy",
            "/activity",
            "/static/ui.js",
            "/nope",
        ):
            r = await c.get(path, headers={"origin": "http://evil.example"})
            csp = r.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src 'self'" in csp, path
            assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
            assert not [h for h in r.headers if h.startswith("access-control-")], path
            assert r.headers["x-frame-options"] == "DENY"


async def test_hostile_memory_text_is_shown_as_text(ui):
    mid = _add(ui.app, HOSTILE)
    async with ui.client() as c:
        for path in ("/memories", f"/memories/{mid}"):
            html = (await c.get(path)).text
            assert (
                "<script>alert" not in html and "<img src=x" not in html and "<b>bold" not in html
            )
            assert "&lt;script&gt;alert(" in html and "&lt;b&gt;bold&lt;/b&gt;" in html
        # no inline script or style anywhere: the policy would block it, so none is written
        html = (await c.get(f"/memories/{mid}")).text
        assert not re.search(r"<script(?![^>]*\bsrc=)", html)
        assert " style=" not in html and "<style" not in html


async def test_a_signed_in_form_from_the_page_changes_the_memory(ui):
    """The same request with the cookie, the origin and the CSRF token goes through: the
    refusals above are the guard's, not a broken form."""
    mid = _add(ui.app, "Edited through the page")
    async with ui.client() as c:
        r = await c.post(f"/memories/{mid}/edit", headers={"origin": BASE}, data={
            "csrf": ui.guard.csrf, "text": "Edited through the page, then saved",
            "seen": ui.app.squirrel.get_memory(mid).memory.updated_at,
            "kind": "invariant", "tier": "long_term", "status": "active",
        })  # fmt: skip
        assert r.status_code == 303 and r.headers["location"].startswith(f"/memories/{mid}")
    got = ui.app.squirrel.get_memory(mid).memory
    assert (got.text, got.tier, got.status) == (
        "Edited through the page, then saved", "long_term", "active",
    )  # fmt: skip


async def test_notices_are_the_servers_and_forms_are_bounded(ui):
    """A link cannot put words on a real page (notices are signed), a form bigger than a page
    ever posts is refused before it is read, and a stale edit form changes nothing."""
    mid = _add(ui.app, "Edits race with the writer")
    async with ui.client() as c:
        r = await c.get("/memories", params={"notice": "Your key expired: paste it at evil"})
        assert "paste it at evil" not in r.text
        big = {"csrf": ui.guard.csrf, "text": "x" * 70_000, "kind": "note"}
        r = await c.post(f"/memories/{mid}/edit", data=big, headers={"origin": BASE})
        assert r.status_code == 413
        page = (await c.get(f"/memories/{mid}")).text
        seen = re.search(r'name="seen" value="([^"]+)"', page)
        assert seen is not None
        ui.app.squirrel.update_memory(api.MemoryUpdateParams(memory_id=mid, tier="long_term"))
        form = {"csrf": ui.guard.csrf, "seen": seen.group(1), "text": "stale edit",
                "kind": "invariant", "tier": "short_term", "status": "provisional"}  # fmt: skip
        r = await c.post(f"/memories/{mid}/edit", data=form, headers={"origin": BASE})
        assert r.status_code == 409
    got = ui.app.squirrel.get_memory(mid).memory
    assert (got.text, got.tier) == ("Edits race with the writer", "long_term")


def test_the_browser_is_opened_through_a_private_file_once_the_server_listens(monkeypatch):
    """`sqrl ui` never puts the token on a command line: the browser gets a file:// address
    of a 0600 file that redirects to the token's address, only once the server listens."""
    import os
    import stat
    import threading
    import time as _time
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    from reos_memory.interfaces.web import local

    opened: list[str] = []
    monkeypatch.setattr(local.webbrowser, "open", lambda uri: opened.append(uri))

    class Server:
        started = False

    srv = Server()
    url = Guard(PORT).url("/memories")
    t = threading.Thread(target=local._open_when_up, args=(srv, url))
    t.start()
    _time.sleep(0.3)
    assert opened == [], "nothing is opened before the server listens"
    srv.started = True
    t.join(5)
    assert len(opened) == 1 and opened[0].startswith("file://") and "token" not in opened[0]
    path = Path(unquote(urlparse(opened[0]).path))
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert url.replace("&", "&amp;") in path.read_text() or url in path.read_text()
    finally:
        path.unlink()


async def test_a_bad_query_is_refused_naming_the_field_and_the_rule(ui):
    """Both UIs check a page's query as JSON-RPC checks the params (web.app.form_params): the
    error names the field and the rule, and the page keeps working."""
    async with ui.client() as c:
        r = await c.get("/memories", params={"sort": "sideways"})
        assert r.status_code == 400, r.status_code
        assert "sort" in r.text and "sideways" not in r.text.split("<main")[0]
        assert "newest" in r.text  # the valid choices are named
        assert (await c.get("/memories")).status_code == 200
