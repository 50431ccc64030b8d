"""The command lines the tests and tools run as child processes: `sqrl` and `python -m
reos_memory ...`, in an environment that points an agent's home and the database at a temp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.rpc_client import ROOT, SQRL

# where agents keep their logs and settings, when not under HOME
_AGENT_PLACES = frozenset(
    {
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "REOS_MEMORY_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "APPDATA",
        "LOCALAPPDATA",
        "GEMINI_CLI_HOME",
        "OPENCODE_DATA_DIR",
        "CURSOR_CONFIG_DIR",
    }
)


def agent_env(home: Path, db: Path, **extra: str) -> dict[str, str]:
    """This process's environment with HOME, the database, the hash embedder and owner `dev`;
    none of the caller's agent homes or desktop directories (every agent's logs are then looked
    for under the fake HOME), and this checkout first on PYTHONPATH."""
    outer = {k: v for k, v in os.environ.items() if k not in _AGENT_PLACES}
    return {
        **outer,
        "HOME": str(home),
        "REOS_MEMORY_DB": str(db),
        "REOS_MEMORY_EMBEDDER": "hash",
        "REOS_MEMORY_OWNER_ID": "dev",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def run_module(
    env: dict[str, str],
    *args: str,
    stdin: str | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python -m ARGS...` to its end, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        input=stdin,
        env=env,
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sqrl(
    env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`sqrl ARGS...` to its end, its output captured as text."""
    return subprocess.run(
        [*SQRL, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
    )
