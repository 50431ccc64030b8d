"""The README's quick starts run as written: each block between `<!-- quickstart:NAME -->` and
`<!-- quickstart:end -->` is run by bash, line by line as a user would type it, in a fresh HOME.
Only what a test cannot do as a user does is adapted: a command that serves until stopped
(`sqrl ui`, a server started with `&`) is stopped once it answered, a `curl` of a server just
started waits for it, and fixed paths and ports become the test's own."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import team_data_dir

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def _block(name: str) -> str:
    m = re.search(
        rf"<!-- quickstart:{name} -->\n```sh\n(?P<body>.*?)```\n<!-- quickstart:end -->",
        README,
        re.S,
    )
    assert m, f"the README has no quick start `{name}`"
    return m.group("body")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _adapt(body: str, out: Path) -> str:
    """The block as a bash script that ends: servers stopped once they answered."""
    lines = []
    for line in body.replace("\\\n", " ").splitlines():
        cmd = line.split("  #")[0].rstrip()
        if re.fullmatch(r"sqrl ui", cmd.strip()):
            cmd = (
                f'sqrl ui --no-browser > "{out}/ui.log" 2>&1 & UI=$!; '
                f'for i in $(seq 300); do grep -q http:// "{out}/ui.log" && break; sleep 0.2; done; '
                f'kill -INT $UI; wait $UI || true; grep http:// "{out}/ui.log"'
            )
        elif cmd.endswith("&"):
            cmd = f"{cmd[:-1].rstrip()} > \"{out}/server.log\" 2>&1 & SERVER=$!; trap 'kill $SERVER; wait $SERVER' EXIT"
        elif cmd.startswith("curl "):
            url = cmd.split()[-1]
            cmd = (
                f"for i in $(seq 300); do curl -sf {url} && break; sleep 0.2; done; curl -sf {url}"
            )
        lines.append(cmd)
    return "set -euo pipefail\n" + "\n".join(lines) + "\n"


def _run(script: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("REOS_", "CLAUDE_", "CODEX_")) and k != "VIRTUAL_ENV"
    }
    env.update(HOME=str(home), REOS_MEMORY_EMBEDDER="hash")
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=540
    )


def test_give_claude_code_a_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "work" / "my-project"
    (project / ".git").mkdir(parents=True)
    # a session the user already had in that project, as Claude Code writes it
    session = "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    logs = home / ".claude" / "projects" / "-home-work-my-project"
    logs.mkdir(parents=True)
    said = [
        ("user", "Always use pnpm in this project, never npm: the lockfile is pnpm-lock.yaml."),
        ("assistant", "Understood: I will use pnpm for every install and script here."),
    ]
    (logs / f"{session}.jsonl").write_text(
        "".join(
            json.dumps({
                "type": role, "sessionId": session, "cwd": str(project),
                "uuid": f"00000000-0000-4000-8000-00000000000{i}",
                "timestamp": f"2026-11-30T10:00:0{i}.000Z",
                "message": {"role": role, "content": text},
            }) + "\n"
            for i, (role, text) in enumerate(said)
        )
    )  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    r = _run(_adapt(_block("agent"), out), home, ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    settings = (project / ".claude" / "settings.json").read_text()
    assert "sqrl" in settings or "reos" in settings, settings
    assert "reos-memory" in (project / ".mcp.json").read_text()
    assert "http://127.0.0.1:" in r.stdout  # the UI's address


def test_an_app_spawns_the_service(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    body = _block("app").replace("~/quickstart.db", str(db))
    r = _run(_adapt(body, tmp_path), tmp_path / "home", ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    replies = [line for line in r.stdout.splitlines() if line.startswith("{")]
    assert '"id":1' in replies[0] and '"block"' in replies[0], replies
    assert '"id":2' in replies[1] and "concise answers" in replies[1], replies


def test_run_a_team_server(tmp_path: Path) -> None:
    with team_data_dir("quickstart") as data_dir:
        port = _free_port()
        body = _block("team").replace("~/quickstart-team", str(data_dir)).replace("8787", str(port))
        r = _run(_adapt(body, tmp_path), tmp_path / "home", ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"rmk_\w+", r.stdout), r.stdout  # the admin key, shown once
    assert '"status":"ok"' in r.stdout.replace(" ", ""), r.stdout
