"""`sqrl doctor`: in a fake HOME with two tools installed and connected and a session log read
for one of them, it names them, their files and the last session."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness.commands import sqrl
from reos_memory.cli import connect as cn
from reos_memory.store import Database
from reos_memory.store import transcripts as transcript_sql
from reos_memory.store.migrations import migrate


def test_doctor_names_installed_connected_tools_and_their_last_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    (home / ".cursor").mkdir(parents=True)  # Cursor and Gemini CLI are installed
    (home / ".gemini").mkdir()
    db = tmp_path / "memory.db"
    store = Database(str(db))
    migrate(store, backup=False)
    when = "2026-05-04T10:11:12Z"
    cursor_log = transcript_sql.Cursor(
        path=str(home / ".cursor" / "projects" / "shop" / "agent-transcripts" / "c1.jsonl"),
        agent="cursor",
        head_sha256="0" * 64,
        head_bytes=10,
        size_seen=10,
        offset=10,
        session_id="c1",
        project_id=None,
        state_json="{}",
        lines=3,
        events=2,
        malformed=0,
        rewrites=0,
        ended=False,
        first_read_at=when,
        updated_at=when,
    )
    store.write(lambda conn: transcript_sql.put(conn, cursor_log))
    store.close()
    log = Path(str(db) + ".hook.log")
    log.write_text(
        time.strftime("%Y-%m-%dT%H:%M:%S ") + "hook failed: Traceback (most recent call last)\n"
    )

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REOS_MEMORY_", "XDG_"))}
    env.update(
        HOME=str(home),
        CODEX_HOME=str(home / ".codex"),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        APPDATA=str(home / "AppData"),
        PATH=str(tmp_path / "empty-bin"),  # no agent executable to find
        REOS_MEMORY_DB=str(db),
        PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    )
    for args in (["cursor", "--user"], ["gemini"]):
        done = sqrl(env, "connect", *args, cwd=project, timeout=60)
        assert done.returncode == 0, done.stderr

    out = sqrl(env, "doctor", "--json", cwd=project, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["database"] == str(db) and report["database_state"] == "ok"
    assert report["hook_log"]["recent_errors"] == 1
    tools = {t["tool"]: t for t in report["tools"]}
    assert list(tools) == [*cn.TOOLS, "aider"]  # aider: learned from, nothing to connect
    assert tools["aider"]["user"] is None and not tools["aider"]["installed"]
    cursor, gemini = tools["cursor"], tools["gemini"]
    assert cursor["installed"] == str(home / ".cursor")
    assert cursor["user"]["hooks"]["connected"] == "yes"
    assert cursor["user"]["mcp"]["connected"] == "yes"
    assert cursor["project"]["hooks"]["connected"] == "no"
    assert cursor["logs"] == 1 and cursor["last_session_at"] == when
    assert gemini["installed"] and gemini["project"]["hooks"]["connected"] == "yes"
    assert gemini["user"]["mcp"]["connected"] == "no" and gemini["logs"] == 0
    assert not tools["codex"]["installed"] and tools["codex"]["user"]["mcp"]["connected"] == "no"
    assert tools["vscode"]["agent"] == "copilot"
    assert tools["cline"]["project"] is None

    text = sqrl(env, "doctor", cwd=project, timeout=60)
    assert text.returncode == 0, text.stderr
    lines = {line.split()[0]: line for line in text.stdout.splitlines() if line.strip()}
    assert "hooks+mcp" in lines["cursor"] and when in lines["cursor"] and "1 log" in lines["cursor"]
    assert "hooks+mcp" in lines["gemini"] and "never" in lines["gemini"]
    assert lines["codex"].split()[1] == "no"
    assert lines["aider"].split()[1:4] == ["no", "n/a", "n/a"]
    assert "1 problem(s)" in text.stdout and str(db) in text.stdout
