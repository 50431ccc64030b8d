"""The `sqrl` command works on the database directly, beside a running server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands import sqrl as run_sqrl
from harness.rpc_client import Server

pytestmark = pytest.mark.e2e


def sqrl(db: Path, cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "REOS_MEMORY_EMBEDDER": "hash", "REOS_MEMORY_OWNER_ID": "alice"}
    r = run_sqrl(env, *args, "--db", str(db), cwd=cwd, timeout=60)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def test_sqrl_commands_share_the_database_with_the_server(tmp_path, db_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    with Server(db_path, env={"REOS_MEMORY_OWNER_ID": "alice"}) as srv:
        srv.wait_ready()
        out = sqrl(
            db_path,
            repo / "src",
            "add",
            "--kind",
            "guard",
            "--avoid",
            "--key",
            "project.package_manager",
            "Use pnpm, never npm.",
        )
        assert out.stdout.startswith("added mem-")
        # the server sees what the CLI wrote, for the same project (derived from the cwd)
        c = srv.call(
            "squirrel/get_task_context", {"project_root": str(repo), "task": "install dependencies"}
        )
        assert "pnpm" in c["context_prompt"]
        again = sqrl(
            db_path,
            repo,
            "add",
            "--kind",
            "guard",
            "--avoid",
            "--key",
            "project.package_manager",
            "use pnpm, never npm",
        )
        assert again.stdout.startswith("deduplicated into")
        # events ingested by the server, flushed by the CLI
        srv.call(
            "squirrel/ingest",
            {
                "project_root": str(repo),
                "session_id": "s1",
                "events": [
                    {
                        "role": "user",
                        "kind": "message",
                        "text": "Always run ruff before committing.",
                    }
                ],
            },
        )
        fl = sqrl(db_path, repo, "flush", "--json")
        flushed = json.loads(fl.stdout)
        assert flushed["episodes"][0]["outcome"] == "written"
        assert "ruff" in flushed["episodes"][0]["ops"][0]["text"]
        human = sqrl(db_path, repo, "memories")
        assert "pnpm" in human.stdout and "ruff" in human.stdout and "provisional" in human.stdout
        ctx = json.loads(
            sqrl(db_path, repo, "context", "commit my change", "--json", "--budget", "200").stdout
        )
        assert ctx["tokens"] <= 200 and ctx["memory_ids"]
        text = sqrl(db_path, repo, "context", "commit my change").stdout
        assert "<squirrel-context" in text and "of 400 tokens" in text
        cr = json.loads(sqrl(db_path, repo, "cr-memory", "--dry-run", "--json").stdout)
        assert cr["dry_run"] is True and cr["evaluated"] == 2
        st = json.loads(sqrl(db_path, repo, "status", "--json").stdout)
        assert st["memories"]["by_status"] == {"provisional": 2}
        assert st["episodes"] == {"written": 1} and st["owner_id"] == "alice"
        assert "writer: rules" in sqrl(db_path, repo, "status").stdout
        found = json.loads(sqrl(db_path, repo, "search", "ruff", "--json").stdout)
        mid = found["matches"][0]["id"]
        sqrl(db_path, repo, "forget", mid)
        assert srv.error("squirrel/memories/get", {"memory_id": mid}).code == -32004
        bad = sqrl(db_path, repo, "forget", "mem-nope", ok=False)
        assert bad.returncode == 1 and "not found" in bad.stderr
        other = tmp_path / "other"
        (other / ".git").mkdir(parents=True)
        assert "no memories" in sqrl(db_path, other, "memories").stdout


def real_sqrl(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """The installed `sqrl` command itself (its own argument order), on this checkout's code."""
    exe = Path(sys.executable).with_name("sqrl")
    if not exe.exists():
        pytest.skip(f"no sqrl command beside {sys.executable}")
    root = Path(__file__).resolve().parents[1]
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("REOS_MEMORY_DB", "REOS_MEMORY_HOME")},
        "HOME": str(home),
        "REOS_MEMORY_EMBEDDER": "hash",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_sqrl_ingest_takes_db_before_the_command_and_says_what_is_still_pending(tmp_path):
    from datetime import UTC, datetime, timedelta

    from harness.agent_homes import ClaudeSession

    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    s = ClaudeSession(repo, datetime.now(UTC) - timedelta(minutes=5))
    s.user("Fix the failing price rounding test")
    s.bash("pytest tests/test_price.py", "E   AssertionError: 1.005 != 1.01", exit_code=1)
    s.edit("price.py", "round(x, 2)", "Decimal(x).quantize(CENT)")
    s.bash("pytest tests/test_price.py", "1 passed")
    log = s.write(tmp_path / "home" / ".claude")  # just written: the session is still open
    db = tmp_path / "chosen.db"

    r = real_sqrl("--db", str(db), "ingest", str(log), cwd=repo, home=tmp_path / "home")
    assert r.returncode == 0, r.stderr
    assert db.exists()  # the --db given before the command is the one used
    assert not (tmp_path / "home" / ".local").exists()  # and not the default database
    assert "still pending:" in r.stdout and "of 1 open session(s)" in r.stdout, r.stdout
    assert "`sqrl ingest --end`" in r.stdout and "idle for 30 min" in r.stdout
    pending = int(r.stdout.split("still pending: ")[1].split(" ")[0])
    assert pending > 0

    as_json = real_sqrl(
        "--json", "--db", str(db), "ingest", str(log), cwd=repo, home=tmp_path / "home"
    )
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)[0]["pending_events"] == pending

    # as the summary says: --end cuts and learns them; nothing is left pending
    done = real_sqrl("ingest", "--end", str(log), "--db", str(db), cwd=repo, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert "still pending" not in done.stdout and "1 episode(s)" in done.stdout, done.stdout
