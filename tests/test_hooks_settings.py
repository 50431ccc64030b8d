"""Squirrel's hooks in Claude Code's settings files: install, uninstall, status."""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from reos_memory.cli import hooks_settings as hs

CMD = shlex.quote("/opt/reos tools/bin/reos-memory")  # a path with a space, quoted by the caller
CMD2 = "/home/dev/.local/bin/reos-memory --db /home/dev/mem.db"

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
        ],
        "SessionStart": [
            {
                "matcher": "startup",
                "hooks": [{"type": "command", "command": "cat ~/notes.md", "timeout": 3}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "afplay /System/Sounds/Glass.aiff"}]}],
    },
    "env": {"FOO": "1"},
}


def write_json(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(data, indent=4) + "\n").encode()
    path.write_bytes(raw)
    return raw


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def ours(data: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for g in data["hooks"].get(event, []) for h in g["hooks"] if hs.is_our_hook(h)]


def ordered(value: Any) -> Any:
    """A form whose equality also checks the order of object keys."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def leftovers(path: Path) -> list[Path]:
    return [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------------------------
# Paths


def test_settings_paths(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proj = tmp_path / "proj"
    assert hs.settings_path("user", home=home, env={}) == home / ".claude" / "settings.json"
    assert hs.settings_path("project", proj) == proj / ".claude" / "settings.json"
    assert hs.settings_path("local", proj) == proj / ".claude" / "settings.local.json"
    cfg = tmp_path / "cfg"
    env = {"CLAUDE_CONFIG_DIR": str(cfg)}
    assert hs.settings_path("user", home=home, env=env) == cfg / "settings.json"
    assert hs.settings_path("user", home=home, env={"CLAUDE_CONFIG_DIR": " "}).parent.name == (
        ".claude"
    )
    with pytest.raises(ValueError):
        hs.settings_path("global", proj)  # type: ignore[arg-type]


def test_project_scope_install(tmp_path: Path) -> None:
    path = hs.settings_path("project", tmp_path / "repo")
    result = hs.install(path, CMD)
    assert result.changed and path == tmp_path / "repo" / ".claude" / "settings.json"
    assert set(read_json(path)["hooks"]) == set(hs.EVENTS)


# ---------------------------------------------------------------------------------------------
# Install


def test_install_into_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".claude" / "settings.json"  # the directory does not exist yet
    result = hs.install(path, CMD)
    assert result.changed and result.backup is None
    assert result.added == hs.EVENTS and result.updated == () and result.removed == ()
    data = read_json(path)
    assert list(data) == ["hooks"] and list(data["hooks"]) == list(hs.EVENTS)
    for event in hs.EVENTS:
        assert data["hooks"][event] == [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": CMD + " hook claude-code",
                        "timeout": hs.DEFAULT_TIMEOUTS[event],
                    }
                ]
            }
        ]
    assert all(0 < t <= 10 for t in hs.DEFAULT_TIMEOUTS.values())
    assert leftovers(path) == [] and backups(path) == []


def test_install_keeps_user_hooks_and_keys_in_order(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    raw = write_json(path, USER_SETTINGS)
    result = hs.install(path, CMD, timeouts={"UserPromptSubmit": 3})
    assert result.changed and result.added == hs.EVENTS
    data = read_json(path)
    assert list(data) == ["model", "permissions", "hooks", "env"]
    assert data["model"] == "opus" and data["env"] == {"FOO": "1"}
    assert data["permissions"] == USER_SETTINGS["permissions"]
    # The user's events first, in their order, then ours that were missing.
    assert list(data["hooks"]) == [
        "PreToolUse",
        "SessionStart",
        "Stop",
        "UserPromptSubmit",
        "PreCompact",
        "SessionEnd",
    ]
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    # Same event: the user's group stays first and untouched, ours is a group of its own.
    for event in ("SessionStart", "Stop"):
        groups = data["hooks"][event]
        assert groups[0] == USER_SETTINGS["hooks"][event][0]
        assert len(groups) == 2 and "matcher" not in groups[1]
        assert groups[1]["hooks"][0]["command"] == CMD + " hook claude-code"
    assert ours(data, "UserPromptSubmit")[0]["timeout"] == 3
    # The previous bytes were backed up, exactly.
    assert result.backup is not None and backups(path) == [result.backup]
    assert result.backup.read_bytes() == raw
    assert result.backup.name.startswith("settings.json.bak-")


def test_install_twice_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write_json(path, USER_SETTINGS)
    hs.install(path, CMD)
    after_first = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    again = hs.install(path, CMD)
    assert not again.changed and again.backup is None
    assert again.added == again.updated == again.removed == ()
    assert path.read_bytes() == after_first and path.stat().st_mtime_ns == mtime
    assert len(backups(path)) == 1 and leftovers(path) == []


def test_install_with_new_command_replaces_ours_in_place(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write_json(path, USER_SETTINGS)
    hs.install(path, CMD)
    before = read_json(path)
    result = hs.install(path, CMD2)
    assert result.changed and result.updated == hs.EVENTS and result.added == ()
    data = read_json(path)
    for event in hs.EVENTS:
        assert [h["command"] for h in ours(data, event)] == [CMD2 + " hook claude-code"]
    # Nothing moved: same events in the same order, same number of groups per event.
    assert list(data["hooks"]) == list(before["hooks"])
    assert {e: len(g) for e, g in data["hooks"].items()} == {
        e: len(g) for e, g in before["hooks"].items()
    }
    assert len(backups(path)) == 2  # one per change (two installs that changed the file)
    assert not hs.install(path, CMD2).changed


def test_install_changes_timeout_and_collapses_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    old = "/usr/bin/reos-memory hook claude-code"
    write_json(
        path,
        {
            "hooks": {
                # The user moved our hook into a group of theirs and gave it a matcher.
                "SessionStart": [
                    {
                        "matcher": "startup|resume",
                        "hooks": [
                            {"type": "command", "command": "echo hi"},
                            {"type": "command", "command": old, "timeout": 30},
                        ],
                    },
                    {"hooks": [{"type": "command", "command": old}]},  # a duplicate
                ],
                # An event an older version used: our hook goes, the user's stays.
                "Notification": [
                    {"hooks": [{"type": "command", "command": old}]},
                    {"hooks": [{"type": "command", "command": "notify-send hi"}]},
                ],
                "SubagentStop": [{"hooks": [{"type": "command", "command": old}]}],
            }
        },
    )
    result = hs.install(path, CMD)
    assert result.updated == ("SessionStart",)
    assert result.removed == ("Notification", "SubagentStop")
    data = read_json(path)
    assert data["hooks"]["SessionStart"] == [
        {
            "matcher": "startup|resume",
            "hooks": [
                {"type": "command", "command": "echo hi"},
                {"type": "command", "command": CMD + " hook claude-code", "timeout": 10},
            ],
        }
    ]
    assert data["hooks"]["Notification"] == [
        {"hooks": [{"type": "command", "command": "notify-send hi"}]}
    ]
    assert "SubagentStop" not in data["hooks"]


def test_install_refuses_unrecognisable_command_and_bad_timeouts(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    with pytest.raises(ValueError):
        hs.install(path, "/usr/bin/other-tool")
    with pytest.raises(ValueError):
        hs.install(path, "   ")
    with pytest.raises(ValueError):
        hs.install(path, CMD + "\nrm -rf ~")
    with pytest.raises(ValueError):
        hs.install(path, CMD, timeouts={"PreToolUse": 5})
    with pytest.raises(ValueError):
        hs.install(path, CMD, timeouts={"Stop": 0})
    assert not path.exists()


def test_empty_file_counts_as_empty_object(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("\n")
    result = hs.install(path, CMD)
    assert result.changed and result.backup is not None
    assert set(read_json(path)) == {"hooks"}


# ---------------------------------------------------------------------------------------------
# Uninstall


def test_uninstall_restores_the_users_settings(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write_json(path, USER_SETTINGS)
    original = copy.deepcopy(USER_SETTINGS)
    hs.install(path, CMD)
    result = hs.uninstall(path)
    assert result.changed and set(result.removed) == set(hs.EVENTS)
    assert result.backup is not None and len(backups(path)) == 2
    assert ordered(read_json(path)) == ordered(original)
    again = hs.uninstall(path)
    assert not again.changed and again.backup is None and len(backups(path)) == 2


def test_uninstall_after_install_into_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    hs.install(path, CMD)
    hs.uninstall(path)
    assert read_json(path) == {}  # `hooks` emptied by us is dropped; the file itself stays


def test_uninstall_only_drops_what_it_empties(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    data = {
        "hooks": {
            "Stop": [
                {"hooks": []},  # the user's empty group: not ours to clean up
                {
                    "hooks": [
                        {"type": "command", "command": "/x/reos-memory hook claude-code"},
                        {"type": "command", "command": "say done"},
                    ]
                },
            ],
            "Notification": [],  # the user's empty event: stays
        }
    }
    write_json(path, data)
    hs.uninstall(path)
    assert read_json(path) == {
        "hooks": {
            "Stop": [{"hooks": []}, {"hooks": [{"type": "command", "command": "say done"}]}],
            "Notification": [],
        }
    }


def test_uninstall_missing_file_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "settings.json"
    result = hs.uninstall(path)
    assert not result.changed and not path.parent.exists()


# ---------------------------------------------------------------------------------------------
# Refusals


@pytest.mark.parametrize(
    "content",
    [
        '{"hooks": {',  # truncated
        '{"model": "opus",}',  # trailing comma
        "[1, 2]",  # not an object
        '{"hooks": []}',  # hooks not an object
        '{"hooks": {"Stop": {"hooks": []}}}',  # one of our events not a list
        '{"model": "a", "model": "b"}',  # duplicate key a rewrite would lose
        '{"x": NaN}',  # Python reads it, Claude Code would not
    ],
)
def test_invalid_file_is_refused_untouched(tmp_path: Path, content: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(content)
    raw = path.read_bytes()
    with pytest.raises(hs.SettingsError) as info:
        hs.install(path, CMD)
    assert str(path) in str(info.value) and "not changed" in str(info.value)
    if content != '{"hooks": {"Stop": {"hooks": []}}}':
        with pytest.raises(hs.SettingsError):
            hs.uninstall(path)
        with pytest.raises(hs.SettingsError):
            hs.status(path)
    assert path.read_bytes() == raw
    assert backups(path) == [] and leftovers(path) == []


def test_concurrent_change_aborts_the_write(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "settings.json"
    write_json(path, {"model": "opus"})
    real_backup = hs._backup

    def backup_then_someone_writes(target: Path, raw: bytes) -> Path:
        made = real_backup(target, raw)
        target.write_text('{"model": "sonnet"}\n')
        return made

    monkeypatch.setattr(hs, "_backup", backup_then_someone_writes)
    with pytest.raises(hs.SettingsError):
        hs.install(path, CMD)
    assert read_json(path) == {"model": "sonnet"} and leftovers(path) == []


# ---------------------------------------------------------------------------------------------
# File handling


def test_file_mode_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write_json(path, USER_SETTINGS)
    os.chmod(path, 0o600)
    result = hs.install(path, CMD)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert result.backup is not None and stat.S_IMODE(result.backup.stat().st_mode) == 0o600
    os.chmod(path, 0o640)
    hs.uninstall(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_symlinked_settings_are_written_through(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude-settings.json"
    write_json(real, {"model": "opus"})
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    hs.install(link, CMD)
    assert link.is_symlink() and set(read_json(real)) == {"model", "hooks"}


# ---------------------------------------------------------------------------------------------
# Status


def test_status(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    st = hs.status(path)
    assert not st["exists"] and not st["installed"]
    assert all(not e["installed"] and e["commands"] == [] for e in st["events"].values())

    write_json(path, USER_SETTINGS)
    hs.install(path, CMD2)
    st = hs.status(path)
    assert st["exists"] and st["installed"] and st["stray_events"] == []
    assert list(st["events"]) == list(hs.EVENTS)
    assert st["events"]["Stop"]["commands"] == [CMD2 + " hook claude-code"]
    assert st["events"]["Stop"]["timeouts"] == [hs.DEFAULT_TIMEOUTS["Stop"]]
    assert st["events"]["SessionStart"]["foreign_hooks"] == 1
    assert st["events"]["PreCompact"]["foreign_hooks"] == 0

    data = read_json(path)
    data["hooks"]["Notification"] = [
        {"hooks": [{"type": "command", "command": "/x/reos-memory hook claude-code"}]}
    ]
    del data["hooks"]["PreCompact"]
    write_json(path, data)
    st = hs.status(path)
    assert not st["installed"] and not st["events"]["PreCompact"]["installed"]
    assert st["stray_events"] == ["Notification"]


def test_recognition() -> None:
    assert hs.is_our_hook({"type": "command", "command": "/a/b/reos-memory hook claude-code"})
    assert hs.is_our_hook(
        {"type": "command", "command": "'/a b/reos-memory' --db /m.db hook claude-code "}
    )
    assert hs.is_our_hook({"type": "command", "command": "python -m reos_memory hook claude-code"})
    assert not hs.is_our_hook({"type": "command", "command": "other hook claude-code"})
    assert not hs.is_our_hook({"type": "command", "command": "reos-memory hook claude-code; x"})
    assert not hs.is_our_hook({"type": "prompt", "command": "reos-memory hook claude-code"})
    assert not hs.is_our_hook("reos-memory hook claude-code")
