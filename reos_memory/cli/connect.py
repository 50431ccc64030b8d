"""`sqrl connect TOOL` and `sqrl doctor`: which file of each agent gets Squirrel's hooks and MCP
server, in which shape, and whether they are there.

Each tool's files, per scope (`project` = the current checkout's top level, else the current
directory; `user` = the home directory, or the tool's own variable):

| tool | hooks (`reos-memory hook <name>`) | MCP server `reos-memory` |
|---|---|---|
| claude-code | `.claude/settings.json`, user `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR`) | `.mcp.json`, user `~/.claude.json` `mcpServers` |
| codex | - | `.codex/config.toml`, user `~/.codex/config.toml` (`$CODEX_HOME`) `[mcp_servers.*]` |
| cursor | `.cursor/hooks.json`, `~/.cursor/hooks.json` | `.cursor/mcp.json`, `~/.cursor/mcp.json` `mcpServers` |
| gemini | `.gemini/settings.json`, `~/.gemini/settings.json` `hooks` | the same files, `mcpServers` |
| vscode | `.github/hooks/reos-memory.json`, `~/.copilot/hooks/reos-memory.json` | `.vscode/mcp.json`, user `<Code User>/mcp.json` `servers` |
| windsurf | `.windsurf/hooks.json`, `~/.codeium/windsurf/hooks.json` | user only: `~/.codeium/windsurf/mcp_config.json` |
| opencode | - | `opencode.json[c]`, `~/.config/opencode/opencode.json[c]` `mcp` |
| cline | - | user only: `<Code User>/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json` |

`<Code User>` is `%APPDATA%\\Code\\User` (Windows), `~/Library/Application Support/Code/User`
(macOS), `$XDG_CONFIG_HOME/Code/User` or `~/.config/Code/User` (elsewhere). The files are edited
by `config_edit` (text edits; every other byte stays).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal, Required, TypedDict

from reos_memory.cli import hooks_settings as hs
from reos_memory.cli.config_edit import (
    ConfigError,
    ConfigFile,
    Entry,
    FileResult,
    Keyed,
    Listed,
    present,
)
from reos_memory.cli.config_edit import apply as apply_file
from reos_memory.json_types import JSONMapping, JSONObject

Scope = Literal["user", "project"]
Kind = Literal["hooks", "mcp"]

TOOLS: Final = (
    "claude-code",
    "codex",
    "cursor",
    "gemini",
    "vscode",
    "windsurf",
    "opencode",
    "cline",
)
SERVER: Final = "reos-memory"  # our MCP server's name in every file

# The agent name the session-log cursors use for a tool (`transcript_cursors.agent`).
AGENT: Final[Mapping[str, str]] = {tool: tool for tool in TOOLS} | {"vscode": "copilot"}


@dataclass(frozen=True)
class Hooks:
    """A tool's hook file format and the events Squirrel's hook takes part in."""

    name: str  # the last argument of `reos-memory hook <name>`
    grouped: bool  # `[{"matcher"?, "hooks": [hook]}]` per event (else `[hook]`)
    events: Mapping[str, int | None]  # event -> timeout, in the tool's unit (None: no timeout)
    extra: JSONMapping  # further keys of each hook entry


# The events per tool, from /work/shared/formats/<tool>/NOTES.md ("Hooks" sections):
# context at session start (and, where the tool can take it, per prompt); the transcript handed
# over for ingestion at stop / compaction / session end. Timeouts: Claude Code, Cursor and VS Code
# count seconds, Gemini CLI milliseconds; Windsurf's hooks take none.
HOOKS: Final[Mapping[str, Hooks]] = {
    # claude-code: hooks_settings.EVENTS (SessionStart, UserPromptSubmit, Stop, PreCompact,
    # SessionEnd), the same entries `sqrl hooks install` writes.
    "claude-code": Hooks("claude-code", True, hs.DEFAULT_TIMEOUTS, {}),
    # cursor/NOTES.md: sessionStart may return additional_context; stop, subagentStop,
    # preCompact and sessionEnd carry transcript_path. beforeSubmitPrompt can only allow or
    # block a prompt (no context), so it is not hooked: prompt context comes through MCP.
    # postToolUse, postToolUseFailure and afterShellExecution carry the tool results the
    # transcripts lack (kept beside the database; a line appended, so a short timeout).
    "cursor": Hooks(
        "cursor",
        False,
        {
            "sessionStart": 10,
            "stop": 5,
            "subagentStop": 5,
            "preCompact": 5,
            "sessionEnd": 5,
            "postToolUse": 2,
            "postToolUseFailure": 2,
            "afterShellExecution": 2,
        },
        {},
    ),
    # gemini-cli/NOTES.md: SessionStart and BeforeAgent take hookSpecificOutput.additionalContext;
    # every event carries transcript_path; AfterAgent ends a turn, PreCompress and SessionEnd.
    "gemini": Hooks(
        "gemini",
        True,
        {
            "SessionStart": 10000,
            "BeforeAgent": 5000,
            "AfterAgent": 5000,
            "PreCompress": 5000,
            "SessionEnd": 5000,
        },
        {},
    ),
    # vscode-copilot-chat/NOTES.md: Claude Code-compatible entries, one list per event; no
    # SessionEnd (Stop ends the session).
    "vscode": Hooks(
        "copilot",
        False,
        {"SessionStart": 10, "UserPromptSubmit": 5, "Stop": 5, "PreCompact": 5},
        {},
    ),
    # windsurf/NOTES.md: no context injection is documented (hook output goes to the UI, not
    # the model), so pre_user_prompt is not hooked; post_cascade_response_with_transcript
    # hands over transcript_path. Context comes through MCP.
    "windsurf": Hooks(
        "windsurf",
        False,
        {"post_cascade_response_with_transcript": None},
        {"show_output": False},
    ),
}

# Where `--project` cannot go because the tool reads that kind from the user file only.
USER_ONLY: Final[Mapping[tuple[str, Kind], str]] = {
    ("windsurf", "mcp"): "Windsurf reads MCP servers from the user file only",
    ("cline", "mcp"): "Cline reads MCP servers from the user file only",
}


# ---------------------------------------------------------------------------------------------
# Where each tool's files are


def home_dir(env: Mapping[str, str]) -> Path:
    for name in ("HOME", "USERPROFILE") if sys.platform != "win32" else ("USERPROFILE", "HOME"):
        if env.get(name):
            return Path(env[name])
    return Path.home()


def _config_home(env: Mapping[str, str]) -> Path:
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    return Path(xdg) if xdg else home_dir(env) / ".config"


def vscode_user_dir(env: Mapping[str, str], app: str = "Code") -> Path:
    """VS Code's (or a fork's: "Cursor", "Windsurf") `User` folder on this OS."""
    if sys.platform == "win32":
        appdata = env.get("APPDATA") or str(home_dir(env) / "AppData" / "Roaming")
        return Path(appdata) / app / "User"
    if sys.platform == "darwin":
        return home_dir(env) / "Library" / "Application Support" / app / "User"
    return _config_home(env) / app / "User"


def _env_dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    value = env.get(name, "").strip()
    return Path(os.path.abspath(os.path.expanduser(value))) if value else default


def _opencode_file(folder: Path) -> Path:
    jsonc = folder / "opencode.jsonc"
    return (
        jsonc
        if jsonc.exists() and not (folder / "opencode.json").exists()
        else (folder / "opencode.json")
    )


# Files at the same place under the home directory and under the project.
_MIRRORED: Final[Mapping[str, Mapping[Kind, str]]] = {
    "cursor": {"hooks": ".cursor/hooks.json", "mcp": ".cursor/mcp.json"},
    "gemini": {"hooks": ".gemini/settings.json", "mcp": ".gemini/settings.json"},
}


def files(tool: str, scope: Scope, project: Path, env: Mapping[str, str]) -> dict[Kind, Path]:
    """The hook file and the MCP file `tool` reads in `scope` (a kind the tool lacks is absent;
    for a kind it reads from the user file only, that file)."""
    home = home_dir(env)
    base = home if scope == "user" else project
    if tool in _MIRRORED:
        return {kind: base / rel for kind, rel in _MIRRORED[tool].items()}
    cline = vscode_user_dir(env) / "globalStorage" / "saoudrizwan.claude-dev" / "settings"
    user: dict[str, dict[Kind, Path]] = {
        "claude-code": {
            "hooks": hs.settings_path("user", home=home, env=env),
            "mcp": _env_dir(env, "CLAUDE_CONFIG_DIR", home) / ".claude.json",
        },
        "codex": {"mcp": _env_dir(env, "CODEX_HOME", home / ".codex") / "config.toml"},
        "vscode": {
            "hooks": home / ".copilot" / "hooks" / "reos-memory.json",
            "mcp": vscode_user_dir(env) / "mcp.json",
        },
        "windsurf": {
            "hooks": home / ".codeium" / "windsurf" / "hooks.json",
            "mcp": home / ".codeium" / "windsurf" / "mcp_config.json",
        },
        "opencode": {"mcp": _opencode_file(_config_home(env) / "opencode")},
        "cline": {"mcp": cline / "cline_mcp_settings.json"},
    }
    if scope == "user":
        return user[tool]
    p = project
    own: dict[str, dict[Kind, Path]] = {
        "claude-code": {"hooks": p / ".claude" / "settings.json", "mcp": p / ".mcp.json"},
        "codex": {"mcp": p / ".codex" / "config.toml"},
        "vscode": {
            "hooks": p / ".github" / "hooks" / "reos-memory.json",
            "mcp": p / ".vscode" / "mcp.json",
        },
        "windsurf": {"hooks": p / ".windsurf" / "hooks.json"},
        "opencode": {"mcp": _opencode_file(p)},
        "cline": {},
    }
    return {**user[tool], **own[tool]}


def project_root(cwd: Path | None = None) -> Path:
    """The checkout's top level (nearest ancestor holding `.git`), else the directory itself."""
    from reos_memory.squirrel.projects import git_top_level

    here = Path(os.path.abspath(cwd or Path.cwd()))
    return git_top_level(here) or here


# ---------------------------------------------------------------------------------------------
# What goes into them


def reos_memory_argv() -> list[str]:
    """This installation's `reos-memory`: the script beside the running Python, else the one on
    PATH, else `python -m reos_memory`."""
    name = "reos-memory.exe" if sys.platform == "win32" else "reos-memory"
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("reos-memory")
    if found:
        return [os.path.realpath(found)]
    return [sys.executable, "-m", "reos_memory"]


def mcp_entry(tool: str, argv: list[str]) -> tuple[tuple[str, ...], JSONObject]:
    """The container path and the value of our MCP server entry in `tool`'s file."""
    command, args = argv[0], argv[1:]
    if tool == "opencode":
        return ("mcp",), {"type": "local", "command": argv, "enabled": True}
    if tool == "vscode":
        return ("servers",), {"type": "stdio", "command": command, "args": args}
    if tool == "claude-code":
        return ("mcpServers",), {"type": "stdio", "command": command, "args": args}
    if tool == "codex":
        return ("mcp_servers",), {"command": command, "args": args}
    if tool == "cline":
        return ("mcpServers",), {"command": command, "args": args, "disabled": False}
    return ("mcpServers",), {"command": command, "args": args}


def hook_entries(tool: str, base: str) -> list[Listed]:
    """One entry per event for `tool`, running `<base> hook <name>`."""
    spec = HOOKS[tool]
    out: list[Listed] = []
    for event, timeout in spec.events.items():
        hook: JSONObject = {"command": f"{base.strip()} hook {spec.name}"}
        if spec.grouped or tool == "vscode":
            hook = {"type": "command", **hook}
        if timeout is not None:
            hook["timeout"] = timeout
        hook.update(spec.extra)
        out.append(Listed(("hooks", event), {"hooks": [hook]} if spec.grouped else hook))
    return out


def owns(tool: str) -> Callable[[object], bool]:
    """Which elements of `tool`'s hook lists are ours (by command; a group only when every hook
    in it is ours)."""
    spec = HOOKS.get(tool)

    def ours(hook: object) -> bool:
        if spec is None or not isinstance(hook, dict):
            return False
        if spec.grouped and hook.get("type") != "command":
            return False
        return hs.is_our_command(hook.get("command"), spec.name)

    def element(value: object) -> bool:
        if spec is not None and spec.grouped:
            group = value.get("hooks") if isinstance(value, dict) else None
            return isinstance(group, list) and bool(group) and all(ours(h) for h in group)
        return ours(value)

    return element


@dataclass(frozen=True)
class Planned:
    file: ConfigFile
    kinds: tuple[Kind, ...]
    scope: Scope  # the scope of the file itself
    note: str | None = None


def plan(
    tool: str,
    scope: Scope,
    project: Path,
    env: Mapping[str, str],
    *,
    mcp_argv: list[str],
    hook_base: str,
) -> list[Planned]:
    """The files `connect` edits for `tool` in `scope`, each with its entries."""
    if tool not in TOOLS:
        raise ValueError(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS)}")
    paths = files(tool, scope, project, env)
    user = files(tool, "user", project, env)
    by_path: dict[Path, list[tuple[Kind, list[Entry]]]] = {}
    for kind, path in paths.items():
        entries: list[Entry]
        if kind == "hooks":
            entries = list(hook_entries(tool, hook_base))
        else:
            where, value = mcp_entry(tool, mcp_argv)
            entries = [Keyed(where, SERVER, value)]
        by_path.setdefault(path, []).append((kind, entries))
    home = home_dir(env)
    out = []
    for path, parts in by_path.items():
        kinds = tuple(kind for kind, _ in parts)
        in_user = scope == "user" or all(user.get(k) == path for k in kinds)
        notes = [
            USER_ONLY[(tool, k)] for k in kinds if scope == "project" and (tool, k) in USER_ONLY
        ]
        spec = ConfigFile(
            path=path,
            entries=tuple(e for _, entries in parts for e in entries),
            format="toml" if path.suffix == ".toml" else "json",
            owns=owns(tool),
            strays_under=("hooks",) if "hooks" in kinds else None,
            skeleton={"version": 1}
            if tool == "cursor" and "hooks" in kinds
            else ({"$schema": "https://opencode.ai/config.json"} if tool == "opencode" else {}),
            stop_at=home if in_user else project,
        )
        note = "; ".join(notes) + f", so --project uses {path}" if notes else None
        out.append(Planned(spec, kinds, "user" if in_user else "project", note))
    return out


def connect(planned: list[Planned], *, remove: bool = False) -> list[FileResult]:
    """Edit every planned file; every one is read and checked first, so a file that would be
    refused stops the command before any file is written."""
    for item in planned:
        present(item.file)
    return [apply_file(item.file, remove=remove) for item in planned]


# ---------------------------------------------------------------------------------------------
# sqrl doctor


_EXECUTABLES: Final[Mapping[str, tuple[str, ...]]] = {
    "claude-code": ("claude",),
    "codex": ("codex",),
    "cursor": ("cursor", "cursor-agent"),
    "gemini": ("gemini",),
    "vscode": ("code", "code-insiders"),
    "windsurf": ("windsurf",),
    "opencode": ("opencode",),
    "cline": ("cline",),
}


def _data_dirs(tool: str, env: Mapping[str, str]) -> list[Path]:
    home = home_dir(env)
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    code = vscode_user_dir(env)
    return {
        "claude-code": [_env_dir(env, "CLAUDE_CONFIG_DIR", home / ".claude")],
        "codex": [_env_dir(env, "CODEX_HOME", home / ".codex")],
        "cursor": [home / ".cursor", vscode_user_dir(env, "Cursor")],
        "gemini": [home / ".gemini"],
        "vscode": [code],
        "windsurf": [home / ".codeium" / "windsurf", vscode_user_dir(env, "Windsurf")],
        "opencode": [_config_home(env) / "opencode", data / "opencode"],
        "cline": [code / "globalStorage" / "saoudrizwan.claude-dev", home / ".cline"],
    }[tool]


def installed(tool: str, env: Mapping[str, str]) -> str | None:
    """What shows the tool is here (its executable on PATH, or its folder), or None."""
    for exe in _EXECUTABLES[tool]:
        found = shutil.which(exe, path=env.get("PATH", os.defpath))
        if found:
            return found
    for folder in _data_dirs(tool, env):
        if folder.is_dir():
            return str(folder)
    return None


class FileState(TypedDict, total=False):
    """One file of a tool's, for `sqrl doctor`: whether it holds ours, or why it cannot say."""

    path: Required[str]
    connected: Literal["yes", "partly", "no"]
    error: str  # the file is unreadable or refused (then there is no `connected`)


def connected(
    tool: str, scope: Scope, project: Path, env: Mapping[str, str]
) -> dict[Kind, FileState]:
    """Whether `tool`'s files of `scope` hold our hooks and MCP server (any command)."""
    out: dict[Kind, FileState] = {}
    for item in plan(tool, scope, project, env, mcp_argv=["reos-memory"], hook_base="reos-memory"):
        if item.scope != scope:
            continue  # a user-only file, reported under user
        try:
            found = present(item.file)
        except ConfigError as exc:
            for kind in item.kinds:
                out[kind] = {"path": str(item.file.path), "error": exc.problem}
            continue
        for kind in item.kinds:
            labels = [e.label for e in item.file.entries if (kind == "mcp") == isinstance(e, Keyed)]
            have = sum(found[label] for label in labels)
            state: Literal["yes", "partly", "no"] = (
                "yes" if have == len(labels) else ("partly" if have else "no")
            )
            out[kind] = {"path": str(item.file.path), "connected": state}
    return out


class LogsRead(TypedDict):
    """An agent's session logs read so far, from its cursors."""

    logs: int
    last_session_at: str | None  # when a log of the agent's was last read


def last_sessions(db: str) -> dict[str, LogsRead] | str:
    """Per agent: logs read and when a log was last read, from the cursors (or why not)."""
    if not os.path.exists(db):
        return "no database yet"
    import apsw

    try:
        conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        return f"cannot open: {exc}"
    from reos_memory.store import transcripts as transcript_sql

    try:
        agents = transcript_sql.summary(conn)
    except apsw.Error as exc:
        return f"cannot read: {exc}"
    finally:
        conn.close()
    return {
        str(a): {"logs": int(s["files"]), "last_session_at": s["last_read_at"]}
        for a, s in agents.items()
    }


_ERROR = re.compile(r"failed|Traceback|Error|not used")


class HookLog(TypedDict, total=False):
    """What `<db>.hook.log` says of the last 24 hours."""

    path: Required[str]
    exists: Required[bool]
    recent_errors: Required[int]
    error: str  # the log could not be read
    last_error: str  # the last problem's line (its first 200 characters)


def hook_log(db: str, now: datetime | None = None) -> HookLog:
    """`<db>.hook.log`: how many problems it recorded in the last 24 hours, and the last one."""
    path = Path(os.path.abspath(os.path.expanduser(db)))
    path = path.with_name(path.name + ".hook.log")
    out: HookLog = {"path": str(path), "exists": path.exists(), "recent_errors": 0}
    if not out["exists"]:
        return out
    since = ((now or datetime.now(UTC)).astimezone() - timedelta(days=1)).strftime(
        "%Y-%m-%dT%H:%M:%S"
    )
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 256 * 1024))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError as exc:
        out["error"] = str(exc)
        return out
    last = None
    for line in lines:
        stamp = line[:19]
        recent = re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", stamp) and stamp >= since
        if recent and _ERROR.search(line[20:]):
            out["recent_errors"] += 1
            last = line[:200]
    if last:
        out["last_error"] = last
    return out


class ToolReport(TypedDict):
    """One agent in `sqrl doctor`."""

    tool: str
    installed: str | None  # its executable, or its folder, or None
    user: dict[Kind, FileState] | None  # None: no such files (Aider)
    project: dict[Kind, FileState] | None  # None: no project files
    agent: str  # its name in the session-log cursors
    logs: int
    last_session_at: str | None


class DoctorReport(TypedDict):
    """`sqrl doctor`: the database, the hook log and every agent."""

    database: str
    database_state: str  # "ok", or why it cannot be read
    project_root: str
    hook_log: HookLog
    tools: list[ToolReport]


def doctor(db: str, project: Path, env: Mapping[str, str]) -> DoctorReport:
    sessions = last_sessions(db)
    tools: list[ToolReport] = []
    for tool in TOOLS:
        agent = AGENT[tool]
        seen = sessions.get(agent) if isinstance(sessions, dict) else None
        project_files = any(
            p.scope == "project"
            for p in plan(tool, "project", project, env, mcp_argv=["x"], hook_base="x")
        )
        tools.append(
            {
                "tool": tool,
                "installed": installed(tool, env),
                "user": connected(tool, "user", project, env),
                "project": connected(tool, "project", project, env) if project_files else None,
                "agent": agent,
                "logs": seen["logs"] if seen else 0,
                "last_session_at": seen["last_session_at"] if seen else None,
            }
        )
    # Aider has no settings to connect: it is learned from the history it keeps in each
    # repository, found there by `sqrl ingest` / `sqrl watch`
    seen = sessions.get("aider") if isinstance(sessions, dict) else None
    tools.append(
        {
            "tool": "aider",
            "installed": shutil.which("aider", path=env.get("PATH", os.defpath)),
            "user": None,
            "project": None,
            "agent": "aider",
            "logs": seen["logs"] if seen else 0,
            "last_session_at": seen["last_session_at"] if seen else None,
        }
    )
    return {
        "database": db,
        "database_state": sessions if isinstance(sessions, str) else "ok",
        "project_root": str(project),
        "hook_log": hook_log(db),
        "tools": tools,
    }
