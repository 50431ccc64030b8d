"""The web UI's screenshots in docs/ (the README shows them), made again from a seeded database:

    python tools/ui_screenshots.py [--out docs]

A few memories, two sessions learned by the offline writer and a few contexts, served by the
real `sqrl ui` and shot in Debian's chromium through Playwright at 1280 px (and the memories
page at 390 px)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.rpc_client import SQRL, Server  # noqa: E402

PROJECT = "shop-api"
MEMORIES = [
    ("guard", "emergency", -1, "Never run the database migrations against production by hand"),
    ("invariant", "long_term", 1, "Payments webhooks must verify the Stripe-Signature header"),
    ("preference", "long_term", 1, "Prefer httpx over requests for new HTTP clients"),
    ("pattern", "short_term", 1, "Integration tests need `docker compose up db` first"),
    ("note", "short_term", 1, "The staging database is reset every night at 02:00 UTC"),
]


def session(tool: str, wrong: str) -> list[dict[str, object]]:
    return [
        {"role": "user", "kind": "message", "text": "run the unit tests"},
        {"role": "assistant", "kind": "tool_call", "tool_name": "Bash",
         "command": f"{wrong} test", "call_id": "a"},
        {"role": "tool", "kind": "tool_result", "call_id": "a", "is_error": True,
         "exit_code": 1, "text": f"error: this repository uses {tool}"},
        {"role": "user", "kind": "message",
         "text": f"No, never use {wrong} here. Always use {tool}."},
        {"role": "assistant", "kind": "tool_call", "tool_name": "Bash",
         "command": f"{tool} test", "call_id": "b"},
        {"role": "tool", "kind": "tool_result", "call_id": "b", "exit_code": 0, "text": "ok"},
    ]  # fmt: skip


def seed(db: Path) -> None:
    with Server(db, env={"REOS_MEMORY_WRITER": "rules"}) as srv:
        srv.wait_ready()
        for kind, tier, polarity, text in MEMORIES:
            srv.call("squirrel/memories/add", {"project_id": PROJECT, "kind": kind, "tier": tier,
                                               "polarity": polarity, "text": text})  # fmt: skip
        for i, (tool, wrong) in enumerate([("pnpm", "npm"), ("uv", "pip")]):
            srv.call("squirrel/ingest", {"project_id": PROJECT, "session_id": f"sess-{i}",
                                         "events": session(tool, wrong), "session_end": True})  # fmt: skip
        for task in ("verify the Stripe webhook signature", "run the integration tests",
                     "add a retry to the payments HTTP client"):  # fmt: skip
            ctx = srv.call("squirrel/get_task_context", {"project_id": PROJECT, "task": task})
            srv.call("squirrel/feedback", {"context_id": ctx["context_id"], "errors": 0,
                                           "retries": 0, "tests_final_status": "passed"})  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ui-shots-"))
    db = work / "m.db"
    seed(db)
    proc = subprocess.Popen(
        [*SQRL, "--db", str(db), "ui", "--embedder", "hash", "--no-browser"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = next(w for w in line.split() if w.startswith("http://"))
        base = url.split("/memories")[0]
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=shutil.which("chromium") or "chromium", args=["--no-sandbox"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(url)
            shots = {
                "ui-memories.png": "/memories",
                "ui-context.png": f"/context?project={PROJECT}&task=run+the+integration+tests",
                "ui-episodes.png": "/episodes",
                "ui-cr-memory.png": "/cr-memory",
                "ui-activity.png": "/activity?days=14",
            }
            for name, path in shots.items():
                page.goto(base + path)
                page.screenshot(path=str(out / name), full_page=True)
            page.goto(base + "/memories")
            page.get_by_role("link", name=MEMORIES[1][3]).click()
            page.screenshot(path=str(out / "ui-memory.png"), full_page=True)
            page.goto(base + "/episodes")
            page.locator("tbody a").first.click()
            page.screenshot(path=str(out / "ui-episode.png"), full_page=True)
            small = browser.new_page(viewport={"width": 390, "height": 844})
            small.goto(url)
            small.screenshot(path=str(out / "ui-memories-390.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(20)
        shutil.rmtree(work, ignore_errors=True)
    team_shots(out)
    print("\n".join(sorted(str(p) for p in out.glob("ui-*.png"))))


def team_shots(out: Path) -> None:
    """The team server's shares and API keys pages (an embedded PostgreSQL, a real server)."""
    from playwright.sync_api import sync_playwright

    from reos_memory.team import admin
    from reos_memory.team.database import open_team_database
    from tools.bench_team import Client, start_server

    work = Path(tempfile.mkdtemp(prefix="ui-team-shots-"))
    data = work / "team-db"
    db = open_team_database(None, data)
    actor = admin.Actor("cli:screenshots", "shots")
    try:
        with db.connect() as conn:
            admin.create_org(conn, actor, "acme")
            admin.create_team(conn, actor, "acme", "backend")
            key = admin.create_key(conn, actor, org="acme", role="admin", name="ops")[0].key
            admin.create_key(conn, actor, org="acme", team="backend", role="writer",
                             name="ada's laptop")  # fmt: skip
            reader = admin.create_key(conn, actor, org="acme", team="backend", role="reader",
                                      name="ci")[0].key  # fmt: skip
        proc, port = start_server(data, "hash", work / "team-server.log")
        base = f"http://127.0.0.1:{port}"
        try:
            for text in ("Feature flags live in flags.yaml, never in code",
                         "The orders API paginates with cursors, not offsets"):  # fmt: skip
                Client(port, reader).call("team/shares/propose",
                                          {"project_id": PROJECT, "kind": "invariant",
                                           "text": text})  # fmt: skip
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=shutil.which("chromium") or "chromium", args=["--no-sandbox"]
                )
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(f"{base}/signin")
                page.get_by_label("API key", exact=True).fill(key)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url(f"{base}/memories")
                for name, path in (
                    ("ui-team-shares.png", "/shares"),
                    ("ui-team-keys.png", "/keys"),
                ):
                    page.goto(base + path)
                    page.screenshot(path=str(out / name), full_page=True)
                browser.close()
        finally:
            proc.terminate()  # SIGTERM: the embedded database stops with its last user
            proc.wait(30)
    finally:
        db.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
