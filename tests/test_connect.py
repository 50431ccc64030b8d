"""`sqrl connect TOOL`: each tool's own files in a fake HOME, valid by a schema of what the tool
reads, every other byte kept, idempotent, and `--remove` giving back the original bytes."""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.commands import sqrl
from reos_memory.cli import connect as cn
from reos_memory.cli import hooks_settings as hs
from reos_memory.cli.config_edit import ConfigError, parse_jsonc

EXE = "/opt/sqrl venv/bin/reos-memory"  # a space: the hook command quotes it
MCP_ARGV = [EXE, "mcp"]
HOOK_BASE = "'/opt/sqrl venv/bin/reos-memory'"


@pytest.fixture
def fake(tmp_path: Path) -> dict[str, Any]:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    home.mkdir()
    env = {
        "HOME": str(home),
        "APPDATA": str(home / "AppData" / "Roaming"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "CODEX_HOME": str(home / ".codex"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "PATH": str(tmp_path / "no-bin"),
    }
    return {"home": home, "project": project, "env": env}


def plan(fake: dict[str, Any], tool: str, scope: cn.Scope, base: str = HOOK_BASE) -> list[Any]:
    return cn.plan(tool, scope, fake["project"], fake["env"], mcp_argv=MCP_ARGV, hook_base=base)


# ---------------------------------------------------------------------------------------------
# The users' own files: comments (where the tool takes JSONC), trailing commas, odd indentation,
# CRLF, no final line break, non-ASCII text, other servers and other hooks.

ORIGINALS: dict[tuple[str, tuple[str, ...]], str] = {
    ("claude-code", ("hooks",)): (
        '{\r\n   "model": "opus",\r\n   "hooks": {\r\n      "Stop": [\r\n'
        '         {"hooks": [{"type": "command", "command": "notify-send fertig"}]}\r\n      ],\r\n'
        '      "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",'
        ' "command": "guard.sh"}]}]\r\n   },\r\n   "statusLine": "é ✓ 日本"\r\n}'
    ),
    ("claude-code", ("mcp",)): (
        '{\n\t"numStartups": 3,\n\t"mcpServers": {\n\t\t"other": {"command": "npx",'
        ' "args": ["-y", "srv"]}\n\t},\n\t"tipsHistory": {"ß": 1}\n}\n'
    ),
    ("codex", ("mcp",)): (
        'model = "o3"  # ünïcode\r\n\r\n[mcp_servers.other]\r\ncommand = "npx"\r\n'
        'args = ["-y", "x"]\r\n'
    ),
    ("cursor", ("hooks",)): (
        '{\n  // my hooks\n  "version": 1,\n  "hooks": {\n    "stop": [\n'
        '      { "command": "./audit.sh" }, // after each turn\n    ],\n'
        '    "afterFileEdit": [{"command": "fmt"}],\n  },\n}\n'
    ),
    ("cursor", ("mcp",)): (
        '{\n    /* servers: ☃ */\n    "mcpServers": {\n        "other": { "command": "x" }\n'
        "    }\n}"
    ),
    ("gemini", ("hooks", "mcp")): (
        '{\n  "theme": "GitHub", // the look\n  "mcpServers": {"other": {"command": "x",'
        ' "args": []}},\n  "hooks": {\n    "SessionStart": [\n      {"matcher": "startup",'
        ' "hooks": [{"type": "command", "command": "echo hi", "timeout": 1000}]}\n    ]\n  }\n}\n'
    ),
    ("vscode", ("mcp",)): (
        '{\r\n\t// VS Code\r\n\t"servers": {\r\n\t\t"other": {"type": "stdio", "command": "x",},'
        '\r\n\t},\r\n\t"inputs": []\r\n}\r\n'
    ),
    ("windsurf", ("hooks",)): (
        '{"hooks": {"post_cascade_response_with_transcript": [{"command": "log.sh",'
        ' "show_output": true}]}}'
    ),
    ("windsurf", ("mcp",)): (
        '{\n  "mcpServers": {\n    "other": {"serverUrl": "https://example.com/mcp"}\n  }\n}\n'
    ),
    ("opencode", ("mcp",)): (
        '{\n  "$schema": "https://opencode.ai/config.json",\n  // models\n'
        '  "model": "anthropic/claude-sonnet-4",\n  "mcp": {\n    "other": {"type": "remote",'
        ' "url": "https://example.com", "enabled": true,},\n  },\n}\n'
    ),
    ("cline", ("mcp",)): (
        '{\n  "mcpServers": {\n    "other": {\n      "command": "node",\n      "args": ["x.js"],'
        '\n      "disabled": false,\n      "autoApprove": []\n    }\n  }\n}'
    ),
}


# ---------------------------------------------------------------------------------------------
# What each tool reads, as JSON Schemas

COMMAND_HOOK = {
    "type": "object",
    "required": ["type", "command"],
    "properties": {
        "type": {"const": "command"},
        "command": {"type": "string", "minLength": 1},
        "timeout": {"type": "integer", "minimum": 1},
        "matcher": {"type": "string"},
    },
}
GROUPED_HOOKS = {
    "type": "object",
    "additionalProperties": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["hooks"],
            "properties": {
                "matcher": {"type": "string"},
                "hooks": {"type": "array", "minItems": 1, "items": COMMAND_HOOK},
            },
        },
    },
}
FLAT_HOOK = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {"type": "string", "minLength": 1},
        "timeout": {"type": "number", "minimum": 0},
        "type": {"const": "command"},
        "show_output": {"type": "boolean"},
    },
}
FLAT_HOOKS = {"type": "object", "additionalProperties": {"type": "array", "items": FLAT_HOOK}}
STDIO_SERVER = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "type": {"const": "stdio"},
        "command": {"type": "string", "minLength": 1},
        "args": {"type": "array", "items": {"type": "string"}},
        "disabled": {"type": "boolean"},
    },
}


def servers(key: str, server: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key],
        "properties": {
            key: {
                "type": "object",
                "required": ["reos-memory"],
                "properties": {"reos-memory": server},
            }
        },
    }


OPENCODE_SERVER = {
    "type": "object",
    "required": ["type", "command"],
    "properties": {
        "type": {"const": "local"},
        "command": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "enabled": {"type": "boolean"},
    },
}
MCP_SCHEMA = {
    "claude-code": servers("mcpServers", {**STDIO_SERVER, "required": ["type", "command", "args"]}),
    "codex": servers("mcp_servers", {**STDIO_SERVER, "required": ["command", "args"]}),
    "cursor": servers("mcpServers", STDIO_SERVER),
    "gemini": servers("mcpServers", STDIO_SERVER),
    "vscode": servers("servers", {**STDIO_SERVER, "required": ["type", "command"]}),
    "windsurf": servers("mcpServers", STDIO_SERVER),
    "opencode": servers("mcp", OPENCODE_SERVER),
    "cline": servers("mcpServers", STDIO_SERVER),
}
HOOK_SCHEMA = {
    "claude-code": {"type": "object", "properties": {"hooks": GROUPED_HOOKS}},
    "gemini": {"type": "object", "properties": {"hooks": GROUPED_HOOKS}},
    "cursor": {
        "type": "object",
        "required": ["version", "hooks"],
        "properties": {"version": {"const": 1}, "hooks": FLAT_HOOKS},
    },
    "vscode": {"type": "object", "required": ["hooks"], "properties": {"hooks": FLAT_HOOKS}},
    "windsurf": {"type": "object", "required": ["hooks"], "properties": {"hooks": FLAT_HOOKS}},
}
JSONC_TOOLS = {"cursor", "gemini", "vscode", "opencode"}


def strip_jsonc(text: str) -> str:
    """JSONC to JSON for the tests (comments and trailing commas out), written apart from the
    code under test."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        elif ch in "}]":
            while out and out[-1] in " \t\r\n":
                out.pop()
            if out and out[-1] == ",":
                out.pop()
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def load(tool: str, path: Path) -> Any:
    text = path.read_bytes().decode("utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    return json.loads(strip_jsonc(text) if tool in JSONC_TOOLS else text)


def without_ours(tool: str, data: Any) -> Any:
    """The document with our server and hooks taken out (and what that empties)."""
    data = json.loads(json.dumps(data))
    for key in ("mcpServers", "servers", "mcp", "mcp_servers"):
        if isinstance(data.get(key), dict):
            data[key].pop("reos-memory", None)
            if not data[key]:
                del data[key]
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event in list(hooks):
            hooks[event] = [h for h in hooks[event] if "reos-memory" not in json.dumps(h)]
            if not hooks[event]:
                del hooks[event]
        if not hooks:
            del data["hooks"]
    return data


def assert_only_inserted(before: str, after: str) -> None:
    """Every byte of `before` is in `after`, in order and unchanged: the edit only inserted."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    assert {op for op, *_ in ops} <= {"equal", "insert"}, ops
    kept = "".join(before[i1:i2] for op, i1, i2, _, _ in ops if op == "equal")
    assert kept == before


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*")) if path.parent.exists() else []


def check_file(tool: str, kinds: tuple[str, ...], path: Path) -> Any:
    data = load(tool, path)
    if "mcp" in kinds:
        jsonschema.validate(data, MCP_SCHEMA[tool])
    if "hooks" in kinds:
        jsonschema.validate(data, HOOK_SCHEMA[tool])
        name = cn.HOOKS[tool].name
        for event in cn.HOOKS[tool].events:
            entries = data["hooks"][event]
            hooks = [h for e in entries for h in e.get("hooks", [e])]
            ours = [h for h in hooks if hs.is_our_command(h.get("command"), name)]
            assert len(ours) == 1, (event, entries)
            assert ours[0]["command"] == f"{HOOK_BASE} hook {name}"
    return data


CASES = [(tool, scope) for tool in cn.TOOLS for scope in ("project", "user")]


@pytest.mark.parametrize(("tool", "scope"), CASES)
def test_connect_keeps_every_other_byte_and_remove_gives_them_back(
    fake: dict[str, Any], tool: str, scope: cn.Scope
) -> None:
    planned = plan(fake, tool, scope)
    assert planned
    originals: dict[Path, str | None] = {}
    for item in planned:
        text = ORIGINALS.get((tool, item.kinds))
        if text is not None:
            item.file.path.parent.mkdir(parents=True, exist_ok=True)
            item.file.path.write_bytes(text.encode("utf-8"))
        originals[item.file.path] = text

    results = cn.connect(planned)
    for item, res in zip(planned, results, strict=True):
        path, before = item.file.path, originals[item.file.path]
        assert res.changed and res.added and not res.removed
        assert res.created == (before is None)
        data = check_file(tool, item.kinds, path)
        after = path.read_bytes().decode("utf-8")
        if before is not None:
            assert_only_inserted(before, after)
            assert without_ours(tool, data) == without_ours(tool, load_text(tool, path, before))
            assert backups(path) and backups(path)[0].read_bytes() == before.encode("utf-8")
            assert res.backup == backups(path)[0]

    snapshot = {item.file.path: item.file.path.read_bytes() for item in planned}
    again = cn.connect(plan(fake, tool, scope))
    assert not any(r.changed for r in again)
    assert {p: p.read_bytes() for p in snapshot} == snapshot

    removed = cn.connect(plan(fake, tool, scope), remove=True)
    for item, res in zip(planned, removed, strict=True):
        path, before = item.file.path, originals[item.file.path]
        assert res.changed and res.removed and not res.added
        if before is None:
            assert res.deleted and not path.exists()
        else:
            assert path.read_bytes() == before.encode("utf-8")
            assert len(backups(path)) == 2  # before connect, before remove
    for item in planned:  # folders made for files of ours alone are gone again
        if originals[item.file.path] is None:
            assert not item.file.path.parent.exists() or any(item.file.path.parent.iterdir())
    assert not cn.connect(plan(fake, tool, scope), remove=True)[0].changed


def load_text(tool: str, path: Path, text: str) -> Any:
    if path.suffix == ".toml":
        return tomllib.loads(text)
    return json.loads(strip_jsonc(text) if tool in JSONC_TOOLS else text)


def test_each_tool_gets_its_own_files(fake: dict[str, Any]) -> None:
    home, proj = fake["home"], fake["project"]
    code = home / ".config" / "Code" / "User"

    def where(tool: str, scope: cn.Scope) -> dict[str, Path]:
        return {"+".join(p.kinds): p.file.path for p in plan(fake, tool, scope)}

    assert where("claude-code", "project") == {
        "hooks": proj / ".claude" / "settings.json",
        "mcp": proj / ".mcp.json",
    }
    assert where("claude-code", "user") == {
        "hooks": home / ".claude" / "settings.json",
        "mcp": home / ".claude" / ".claude.json",
    }
    assert where("codex", "user") == {"mcp": home / ".codex" / "config.toml"}
    assert where("codex", "project") == {"mcp": proj / ".codex" / "config.toml"}
    assert where("cursor", "user") == {
        "hooks": home / ".cursor" / "hooks.json",
        "mcp": home / ".cursor" / "mcp.json",
    }
    assert where("gemini", "project") == {"hooks+mcp": proj / ".gemini" / "settings.json"}
    assert where("vscode", "project") == {
        "hooks": proj / ".github" / "hooks" / "reos-memory.json",
        "mcp": proj / ".vscode" / "mcp.json",
    }
    assert where("vscode", "user")["mcp"] == code / "mcp.json"
    assert where("windsurf", "project") == {
        "hooks": proj / ".windsurf" / "hooks.json",
        "mcp": home / ".codeium" / "windsurf" / "mcp_config.json",
    }
    assert where("opencode", "user") == {"mcp": home / ".config" / "opencode" / "opencode.json"}
    cline = code / "globalStorage" / "saoudrizwan.claude-dev" / "settings"
    assert where("cline", "project") == {"mcp": cline / "cline_mcp_settings.json"}
    # a kind read from the user file only: --project writes that one and says so
    windsurf = {p.kinds: p for p in plan(fake, "windsurf", "project")}
    assert windsurf[("mcp",)].scope == "user" and "user file only" in (
        windsurf[("mcp",)].note or ""
    )
    assert windsurf[("hooks",)].scope == "project" and windsurf[("hooks",)].note is None
    # an opencode.jsonc of the user's is the file used
    (proj / "opencode.jsonc").write_text("{}\n")
    assert where("opencode", "project") == {"mcp": proj / "opencode.jsonc"}


@pytest.mark.parametrize("platform", ["darwin", "win32", "linux"])
def test_vscode_user_folder_per_os(
    fake: dict[str, Any], platform: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cn.sys, "platform", platform)
    env, home = fake["env"], fake["home"]
    want = {
        "darwin": home / "Library" / "Application Support" / "Code" / "User",
        "win32": Path(env["APPDATA"]) / "Code" / "User",
        "linux": home / ".config" / "Code" / "User",
    }[platform]
    assert cn.vscode_user_dir(env) == want


def test_a_changed_command_is_updated_in_place(fake: dict[str, Any]) -> None:
    path = fake["project"] / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    original = ORIGINALS[("cursor", ("hooks",))]
    path.write_text(original)
    cn.connect(plan(fake, "cursor", "project"))
    mcp = fake["project"] / ".cursor" / "mcp.json"
    mcp.write_text(ORIGINALS[("cursor", ("mcp",))])
    cn.connect(plan(fake, "cursor", "project"))
    res = cn.connect(
        cn.plan(
            "cursor",
            "project",
            fake["project"],
            fake["env"],
            mcp_argv=["/new/reos-memory", "mcp"],
            hook_base="/new/reos-memory",
        )
    )
    assert res[0].updated and not res[0].added and not res[0].removed
    assert res[1].updated == ("mcpServers.reos-memory",)
    assert load("cursor", mcp)["mcpServers"]["reos-memory"]["command"] == "/new/reos-memory"
    assert_only_inserted(ORIGINALS[("cursor", ("mcp",))], mcp.read_text())
    data = load("cursor", path)
    assert data["hooks"]["stop"][0] == {"command": "./audit.sh"}
    assert data["hooks"]["stop"][1]["command"] == "/new/reos-memory hook cursor"
    # the post-tool events keep the tool results Cursor's transcripts lack: a short timeout
    for event in ("postToolUse", "postToolUseFailure", "afterShellExecution"):
        assert data["hooks"][event] == [{"command": "/new/reos-memory hook cursor", "timeout": 2}]
    cn.connect(plan(fake, "cursor", "project"), remove=True)
    assert path.read_text() == original
    assert mcp.read_text() == ORIGINALS[("cursor", ("mcp",))]


def test_a_hook_of_ours_on_an_event_no_longer_used_is_removed(fake: dict[str, Any]) -> None:
    path = fake["home"] / ".cursor" / "hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "hooks": {
                    "afterFileEdit": [
                        {"command": "fmt"},
                        {"command": "/old/reos-memory hook cursor"},
                    ]
                },
            },
            indent=2,
        )
    )
    res = cn.connect(plan(fake, "cursor", "user"))[0]
    assert res.removed == ("hooks.afterFileEdit",)
    assert load("cursor", path)["hooks"]["afterFileEdit"] == [{"command": "fmt"}]


def test_sqrl_hooks_install_entries_are_recognised(fake: dict[str, Any]) -> None:
    """What `sqrl hooks install` wrote is what connect writes: nothing to change."""
    settings = fake["project"] / ".claude" / "settings.json"
    hs.install(settings, HOOK_BASE)
    installed = settings.read_bytes()
    res = cn.connect(plan(fake, "claude-code", "project"))
    assert not res[0].changed and settings.read_bytes() == installed
    assert hs.status(settings)["installed"]


BAD = [
    ("cursor", "mcp.json", "{ not json"),
    ("cursor", "mcp.json", '{"mcpServers": []}'),
    ("cursor", "hooks.json", '{"version": 1, "hooks": {"stop": {"command": "x"}}}'),
    ("cursor", "hooks.json", '{"hooks": {}, "hooks": {}}'),
    ("cursor", "mcp.json", "[1, 2]"),
    ("codex", "config.toml", "model = \n"),
    ("codex", "config.toml", "mcp_servers = 3\n"),
    ("codex", "config.toml", 'mcp_servers = { other = { command = "x" } }\n'),
]


@pytest.mark.parametrize(("tool", "name", "content"), BAD)
def test_a_file_it_cannot_edit_is_refused_and_left_alone(
    fake: dict[str, Any], tool: str, name: str, content: str
) -> None:
    planned = plan(fake, tool, "user")
    path = next(p.file.path for p in planned if p.file.path.name == name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    others = [p.file.path for p in planned if p.file.path != path]
    with pytest.raises(ConfigError) as err:
        cn.connect(planned)
    assert str(path) in str(err.value) and "not changed" in str(err.value)
    assert path.read_text() == content and backups(path) == []
    assert not any(p.exists() for p in others)  # nothing was written before the refusal
    assert sorted(os.listdir(path.parent)) == [name]


def test_symlinked_file_is_written_through_and_mode_kept(fake: dict[str, Any]) -> None:
    real = fake["home"] / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {"x": {"command": "x"}}}\n')
    real.chmod(0o600)
    link = fake["home"] / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    planned = [p for p in plan(fake, "cursor", "user") if p.kinds == ("mcp",)]
    cn.connect(planned)
    assert link.is_symlink() and "reos-memory" in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o600
    cn.connect(planned, remove=True)
    assert link.is_symlink() and real.read_text() == '{"mcpServers": {"x": {"command": "x"}}}\n'


def test_jsonc_tokenizer_spans() -> None:
    text = '{"a": "x // not a comment", /* c */ "b": [1, 2,], // end\n}'
    root = parse_jsonc(text)
    assert root.value == {"a": "x // not a comment", "b": [1, 2]}
    b = root.get("b")
    assert b is not None and text[b.start : b.end] == "[1, 2,]"
    for bad in ('{"a": 1} x', '{"a" 1}', '{"a": 1,, "b": 2}', '{"a": NaN}', "/* open"):
        with pytest.raises(ValueError):
            parse_jsonc(bad)


# ---------------------------------------------------------------------------------------------
# The real command


def run(fake: dict[str, Any], *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in ("REOS_MEMORY_DB", "REOS_MEMORY_HOME")}
    env.update(fake["env"], PATH=os.environ.get("PATH", ""), REOS_MEMORY_EMBEDDER="hash")
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")])
    )
    return sqrl(env, *args, cwd=fake["project"] / "src", timeout=60)


@pytest.mark.parametrize("tool", cn.TOOLS)
def test_sqrl_connect_cli(fake: dict[str, Any], tool: str) -> None:
    planned = plan(fake, tool, "project" if tool != "cline" else "user")
    for item in planned:
        text = ORIGINALS.get((tool, item.kinds))
        if text is not None:
            item.file.path.parent.mkdir(parents=True, exist_ok=True)
            item.file.path.write_bytes(text.encode())
    first = run(fake, "connect", tool, "--json")
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert out["tool"] == tool and out["project_root"] == str(fake["project"])
    assert [f["path"] for f in out["files"]] == [str(p.file.path) for p in planned]
    assert all(f["changed"] and f["added"] for f in out["files"])
    for item in planned:
        data = load(tool, item.file.path)
        if "mcp" in item.kinds:
            jsonschema.validate(data, MCP_SCHEMA[tool])
            server = json.dumps(data)
            assert "reos-memory" in server and '"mcp"' in server
    second = run(fake, "connect", tool)
    assert second.returncode == 0 and second.stdout.count("unchanged") == len(planned)
    gone = run(fake, "connect", tool, "--remove")
    assert gone.returncode == 0, gone.stderr
    assert "removed" in gone.stdout
    for item in planned:
        text = ORIGINALS.get((tool, item.kinds))
        if text is None:
            assert not item.file.path.exists()
        else:
            assert item.file.path.read_bytes() == text.encode()


def test_sqrl_connect_names_the_database_and_refuses_a_bad_file(fake: dict[str, Any]) -> None:
    db = fake["home"] / "my.db"
    done = run(fake, "connect", "codex", "--user", "--db", str(db))
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((fake["home"] / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["reos-memory"]["args"] == ["mcp", "--db", str(db)]
    windsurf = run(fake, "connect", "windsurf", "--project")
    assert "user file only" in windsurf.stdout
    bad = fake["project"] / ".cursor" / "mcp.json"
    bad.parent.mkdir()
    bad.write_text('{"mcpServers": "x"}')
    refused = run(fake, "connect", "cursor")
    assert refused.returncode == 1 and "not an object" in refused.stderr
    assert bad.read_text() == '{"mcpServers": "x"}'
    assert not (fake["project"] / ".cursor" / "hooks.json").exists()
