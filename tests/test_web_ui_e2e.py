"""The web UI end to end (issue 22): the real `sqrl ui` process, driven in Debian's chromium by
Playwright, against a database the real JSON-RPC server (`reos-memory serve`) reads and writes
at the same time. Every change made in the page is checked through `squirrel/memories/get`."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.rpc_client import SQRL, RpcError, Server

pytestmark = pytest.mark.e2e
PROJECT = "proj-ui"
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script> <b>bold</b> stays text"


def chromium() -> str:
    path = shutil.which("chromium")
    assert path, "Debian's chromium is needed for this test (./dev setup installs it)"
    return path


class UIProcess:
    """`sqrl ui --no-browser` on a free port, and the address it printed."""

    def __init__(self, db: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*SQRL, "--db", str(db), "ui", "--embedder", "hash", "--no-browser"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
        )  # fmt: skip
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 60
        line = b""
        while b"http://" not in line:
            assert self.proc.poll() is None, self.proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "sqrl ui printed no address"
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                line = self.proc.stdout.readline()
        self.url = next(w for w in line.decode().split() if w.startswith("http://"))
        self.base = self.url.split("/memories")[0]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


@pytest.fixture
def rpc(tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "m.db") as srv:
        srv.wait_ready()
        yield srv


@pytest.fixture
def ui(tmp_path: Path, rpc: Server) -> Iterator[UIProcess]:
    proc = UIProcess(tmp_path / "m.db")
    yield proc
    assert proc.stop() == 0, proc.proc.communicate()[1].decode()


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield b
        b.close()


def _add(rpc: Server, text: str, **extra: Any) -> str:
    params = {"project_id": PROJECT, "kind": "invariant", "text": text, **extra}
    return str(rpc.call("squirrel/memories/add", params)["memory"]["id"])


def _get(rpc: Server, mid: str) -> dict[str, Any]:
    return rpc.call("squirrel/memories/get", {"memory_id": mid})["memory"]  # type: ignore[no-any-return]


def test_filter_open_edit_deprecate_and_forget_from_the_browser(rpc, ui, browser):
    pnpm = _add(rpc, "Use pnpm, never npm, in this repository")
    pytest_ = _add(rpc, "Run pytest -x before pushing")
    old = _add(rpc, "The staging database is reset every night", kind="note")
    hostile = _add(rpc, HOSTILE)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(ui.url)
    assert page.url == f"{ui.base}/memories", "the token leaves the address bar"
    rows = page.locator("tbody tr")
    assert rows.count() == 4
    # filter by words, from the keyboard
    page.get_by_label("Text", exact=True).focus()
    page.keyboard.type("pnpm")
    page.keyboard.press("Enter")
    page.wait_for_url("**/memories?*q=pnpm*")
    assert rows.count() == 1 and "Use pnpm" in rows.first.inner_text()
    # filter by kind
    page.goto(f"{ui.base}/memories?kind=note")
    assert rows.count() == 1 and "staging database" in rows.first.inner_text()

    # open a memory, edit it, see the change through JSON-RPC
    page.goto(f"{ui.base}/memories")
    page.get_by_role("link", name="Run pytest -x before pushing").click()
    page.wait_for_url(f"**/memories/{pytest_}")
    page.get_by_label("Text", exact=True).fill("Run pytest -x -q before pushing")
    page.get_by_label("Tier", exact=True).select_option("long_term")
    page.get_by_label("Key", exact=True).fill("project.test_command")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/memories/{pytest_}?notice=saved*")
    got = _get(rpc, pytest_)
    assert (got["text"], got["tier"], got["key"]) == (
        "Run pytest -x -q before pushing", "long_term", "project.test_command",
    )  # fmt: skip
    assert page.locator(".memory-text").inner_text() == "Run pytest -x -q before pushing"

    # deprecate two from the list, after a confirmation page
    page.goto(f"{ui.base}/memories")
    page.get_by_label(f"select {old}").check()
    page.get_by_label(f"select {pnpm}").check()
    page.get_by_role("button", name="Deprecate selected…").click()
    assert "Deprecate 2 memories?" in page.locator("h1").inner_text()
    assert _get(rpc, old)["status"] == "provisional", "nothing changes before the confirmation"
    page.get_by_role("button", name="Yes, deprecate").click()
    page.wait_for_url("**/memories?*notice=2+deprecated*")
    assert _get(rpc, old)["status"] == "deprecated" and _get(rpc, pnpm)["status"] == "deprecated"
    assert rows.count() == 2, "deprecated memories leave the live list"

    # forget one from its page, after a confirmation page
    page.goto(f"{ui.base}/memories/{old}")
    page.get_by_role("button", name="Forget…").click()
    page.get_by_role("button", name="Yes, forget").click()
    page.wait_for_url("**/memories?notice=forgotten*")
    with pytest.raises(RpcError) as gone:
        _get(rpc, old)
    assert gone.value.code == -32004

    # memory text with HTML in it is text
    page.goto(f"{ui.base}/memories/{hostile}")
    assert page.locator(".memory-text").inner_text() == HOSTILE
    assert page.locator("main img, main b, main script").count() == 0
    assert dialogs == []


def test_what_would_the_agent_get_shows_the_hooks_prompt_and_counts_nothing(rpc, ui, browser):
    mid = _add(rpc, "Payments webhooks must verify the Stripe signature", tier="long_term")
    _add(rpc, "Frontend builds use Vite")
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(ui.url)
    page.get_by_role("link", name="What would the agent get?").click()
    page.get_by_label("Project", exact=True).fill(PROJECT)
    page.get_by_label("Task", exact=True).fill("verify the Stripe webhook signature in payments")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/context?*")
    prompt = page.locator("pre.prompt").inner_text()
    assert "Payments webhooks must verify the Stripe signature" in prompt
    assert page.get_by_role(
        "link", name="Payments webhooks must verify the Stripe signature"
    ).count()
    # the same call through JSON-RPC gives the same prompt, and the preview counted nothing
    real = rpc.call("squirrel/get_task_context", {
        "project_id": PROJECT, "task": "verify the Stripe webhook signature in payments",
        "dry_run": True,
    })  # fmt: skip

    def same(text: str) -> str:  # each context has its own id
        return re.sub(r'id="ctx-[0-9a-f]+"', 'id="ctx"', text)

    assert same(real["context_prompt"]) == same(prompt)
    metrics = rpc.call("squirrel/memories/get", {"memory_id": mid})["metrics"]
    assert metrics is None or (metrics["opportunities"], metrics["use_count"]) == (0, 0)
    # readable at 390 px: nothing wider than the screen but the tables' own scrolling
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def _wait_outcome(rpc: Server, want: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        eps = rpc.call("squirrel/episodes/list", {"project_id": PROJECT})["episodes"]
        if eps and eps[0]["outcome"] == want:
            return eps[0]  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, eps
        time.sleep(0.2)


SESSION = [
    {"role": "user", "kind": "message", "text": "run the tests"},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "npm test",
     "call_id": "a"},
    {"role": "tool", "kind": "tool_result", "call_id": "a", "is_error": True, "exit_code": 1,
     "text": "error: this repository uses pnpm"},
    {"role": "user", "kind": "message", "text": "No, never use npm here. Always use pnpm."},
    {"role": "assistant", "kind": "tool_call", "tool_name": "Bash", "command": "pnpm test",
     "call_id": "b"},
    {"role": "tool", "kind": "tool_result", "call_id": "b", "exit_code": 0, "text": "ok"},
]  # fmt: skip


def test_a_failed_episode_is_seen_and_retried_from_its_page(tmp_path, browser):
    """The JSON-RPC server's Memory Writer is an LLM that cannot be reached: the episode fails.
    Its page shows what happened and why; "run the writer on it now" (the UI's offline writer)
    learns it, and the memories appear through JSON-RPC."""
    unreachable = {
        "REOS_MEMORY_WRITER": "llm", "REOS_MEMORY_LLM_PROVIDER": "openai",
        "REOS_MEMORY_LLM_BASE_URL": "http://127.0.0.1:9/v1", "REOS_MEMORY_LLM_MODEL": "m",
        "REOS_MEMORY_LLM_API_KEY_ENV": "TEST_LLM_KEY", "TEST_LLM_KEY": "sk-test",
        "REOS_MEMORY_LLM_MAX_RETRIES": "0", "REOS_MEMORY_LLM_TIMEOUT_S": "1",
    }  # fmt: skip
    with Server(tmp_path / "m.db", env=unreachable) as rpc:
        rpc.wait_ready()
        rpc.call("squirrel/ingest", {"project_id": PROJECT, "session_id": "sess-1",
                                     "events": SESSION, "session_end": True})  # fmt: skip
        ep = _wait_outcome(rpc, "failed")
        ui = UIProcess(tmp_path / "m.db", env={"REOS_MEMORY_WRITER": "rules"})
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(ui.url)
            page.get_by_role("link", name="Episodes").click()
            page.get_by_label("Outcome", exact=True).select_option("failed")
            page.get_by_role("button", name="Filter").click()
            page.get_by_role("link", name=ep["id"]).click()
            main = page.locator("main").inner_text()
            assert "failed" in main and "No, never use npm here" in main
            assert "user correction" in main  # why the pre-filter sent it to the writer
            page.get_by_role("button", name="Run the writer on it now").click()
            page.wait_for_url(f"**/episodes/{ep['id']}?notice=retried*")
            assert "written" in page.locator("main").inner_text()
            written = page.locator("main ul li a")
            assert written.count() >= 1
            mid = written.first.inner_text()
            got = rpc.call("squirrel/memories/get", {"memory_id": mid})["memory"]
            assert "pnpm" in got["text"]
            assert _wait_outcome(rpc, "written")["id"] == ep["id"]
        finally:
            ui.stop()


def test_cr_memory_policy_and_activity_pages(tmp_path, browser):
    """CR-Memory's dry run on the page, then "apply" (a policy that promotes after one use);
    the effective policy and the files it came from; the day's activity."""
    policy = tmp_path / "policy.toml"
    policy.write_text("[promotion.default]\nmin_opportunities = 1\nmin_regret_hits = 0\n")
    env = {"REOS_MEMORY_POLICY_FILE": str(policy)}
    with Server(tmp_path / "m.db", env=env) as rpc:
        rpc.wait_ready()
        mid = _add(rpc, "Payments webhooks must verify the Stripe signature")
        rpc.call("squirrel/get_task_context",
                 {"project_id": PROJECT, "task": "verify the Stripe webhook signature"})  # fmt: skip
        ui = UIProcess(tmp_path / "m.db", env=env)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(ui.url)
            page.get_by_role("link", name="CR-Memory").click()
            row = page.locator("tbody tr", has_text=mid)
            assert "promote" in row.inner_text() and "use ratio 1.00" in row.inner_text()
            assert _get(rpc, mid)["status"] == "provisional", "the page is a dry run"
            page.get_by_role("button", name="Apply: promote 1, deprecate 0").click()
            page.wait_for_url("**/cr-memory?notice=applied*")
            assert _get(rpc, mid)["status"] == "active"

            page.get_by_role("link", name="Policy").click()
            text = page.locator("main").inner_text()
            assert str(policy) in text and "min_regret_hits = 0" in text

            page.get_by_role("link", name="Activity").click()
            today = page.locator("tbody tr").first.inner_text()
            assert "1 invariant" in today  # learned today, contexts and injections counted
            assert page.locator("svg.chart rect").count() >= 2
        finally:
            ui.stop()


def test_the_block_graph_draws_under_the_pages_policy(rpc, ui, browser):
    """The HTML export of a block's neighbourhood, served with a policy that allows exactly
    its own inline script and style: it draws, and the browser reports no violation."""
    from tests.conftest import link, make_block

    a = make_block(rpc, "Payments service overview")
    b = make_block(rpc, "Stripe <webhooks> & retries")
    link(rpc, a, b)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text))
    page.goto(ui.url)
    page.get_by_role("link", name="Block graph").click()
    page.get_by_label("Block id", exact=True).fill(a)
    page.get_by_role("button", name="Draw").click()
    assert "2 blocks, 1 relationship" in page.locator("main").inner_text()
    page.get_by_role("link", name="Open the picture").click()
    page.wait_for_selector("#graph circle, #graph rect")
    assert page.locator("#graph text", has_text="Stripe <webhooks>").count() == 1
    assert page.locator("#legend span").count() >= 1
    assert not [m for m in console if "Content Security Policy" in m], console


def test_the_pages_work_from_the_keyboard(rpc, ui, browser):
    """Tab first reaches "skip to content", which moves focus into the page; a memory opens
    with Enter, and its form saves with the keyboard alone."""
    mid = _add(rpc, "Keyboard users open memories too")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(ui.url)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    for _ in range(40):  # through the filters to the memory's link
        page.keyboard.press("Tab")
        if (
            page.evaluate("document.activeElement.textContent")
            == "Keyboard users open memories too"
        ):
            break
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/memories/{mid}")
    page.get_by_label("Text", exact=True).focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("Keyboard users edit memories too")
    page.keyboard.press("Tab")  # the kind, then each field up to Save
    for _ in range(10):
        if page.evaluate("document.activeElement.textContent") == "Save":
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/memories/{mid}?notice=saved*")
    assert _get(rpc, mid)["text"] == "Keyboard users edit memories too"


def test_the_printed_address_answers_at_once(tmp_path: Path) -> None:
    """The UI listens before it prints its address: a script that reads the line and connects
    at once is answered (it was refused now and then: the address came before the bind)."""
    import http.client
    from urllib.parse import urlsplit

    for _ in range(3):
        ui = UIProcess(tmp_path / "m.db")
        try:
            u = urlsplit(ui.url)
            conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=10)
            conn.request("GET", f"{u.path}?{u.query}")
            # the token is exchanged for a cookie: a redirect to the same page without it
            assert conn.getresponse().status == 303
            conn.close()
        finally:
            ui.stop()


def test_a_port_already_taken_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run(
            [*SQRL, "--db", str(tmp_path / "m.db"), "ui", "--embedder", "hash", "--no-browser",
             "--port", str(port)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert r.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr
