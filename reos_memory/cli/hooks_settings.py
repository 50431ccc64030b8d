"""Claude Code's settings files: install, remove and inspect Squirrel's hooks.

Claude Code reads hooks from the `hooks` object of its settings files: `~/.claude/settings.json`
(user; the directory moves to `$CLAUDE_CONFIG_DIR` when that is set), `<project>/.claude/
settings.json` (project, meant to be committed) and `<project>/.claude/settings.local.json`
(local, not committed). The shape is

    {"hooks": {"<Event>": [{"matcher": "...", "hooks": [{"type": "command",
                                                          "command": "...", "timeout": 5}]}]}}

`timeout` is in seconds. `matcher` is optional; left out it matches every occurrence, which is
what Squirrel wants on every event it uses (every SessionStart source, every PreCompact trigger;
UserPromptSubmit, Stop and SessionEnd take none). So our matcher groups carry no matcher.

Our entries are recognised by their command alone: a `"type": "command"` hook whose command
ends with ` hook claude-code` and names `reos-memory`/`reos_memory`. No marker key is added,
because Claude Code validates settings files and skips a whole file it finds invalid. Each
event gets one matcher group of its own holding our one hook, appended after the user's groups.

Rules, all predictable:
- A missing file is `{}`, so is an empty one. A file that is not a JSON object, whose `hooks` is
  not an object, or whose entry for one of our events is not a list is refused (`SettingsError`)
  and left alone; so is a file with a duplicate key or NaN/Infinity, which a rewrite would lose
  or Claude Code would reject.
- Every other key, event, group and hook is kept, in its order. Only our hooks are touched; a
  group is dropped only when removing our hook empties it, an event only when that empties it,
  and `hooks` only when that empties it.
- Nothing is written when nothing changes. Before an existing file changes its previous bytes
  are copied to `<name>.bak-<UTC timestamp>` beside it. The new content goes to a temporary file
  in the same directory, takes the old file's mode, and replaces the file with `os.replace`; a
  symlinked settings file (dotfile managers) is written through to its target.
- The new file is written as JSON with two-space indentation; the user's own formatting of the
  file is not kept (the content is).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, NoReturn, TypedDict, TypeGuard

from reos_memory.cli.config_edit import ConfigError, backup, target_of, write_atomic
from reos_memory.json_types import JSONMapping, JSONObject

__all__ = [
    "DEFAULT_TIMEOUTS",
    "EVENTS",
    "HOOK_SUFFIX",
    "EventStatus",
    "Result",
    "Scope",
    "SettingsError",
    "Status",
    "hook_command",
    "install",
    "is_our_command",
    "is_our_hook",
    "settings_path",
    "status",
    "uninstall",
]

Scope = Literal["user", "project", "local"]

EVENTS: Final[tuple[str, ...]] = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "PreCompact",
    "SessionEnd",
)

# Seconds. SessionStart and UserPromptSubmit put context in front of the model while the user
# waits; Stop, PreCompact and SessionEnd only hand the session to a detached worker.
DEFAULT_TIMEOUTS: Final[Mapping[str, int]] = {
    "SessionStart": 10,
    "UserPromptSubmit": 5,
    "Stop": 5,
    "PreCompact": 5,
    "SessionEnd": 5,
}

HOOK_SUFFIX: Final = " hook claude-code"
_PROGRAM_NAMES: Final = ("reos-memory", "reos_memory")
_INDENT: Final = 2


# The one error of config files, under the name this module has always given it.
SettingsError = ConfigError


@dataclass(frozen=True)
class Result:
    """What `install` or `uninstall` did.

    `added`: events that got our hook where they had none. `updated`: events whose hook of ours
    was replaced (another command or timeout, or duplicates collapsed to one). `removed`: events
    our hooks were taken out of without a replacement.
    """

    changed: bool
    path: Path
    backup: Path | None
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


class EventStatus(TypedDict):
    installed: bool  # exactly one hook of ours on this event
    commands: list[str]  # the commands of our hooks here, in file order (normally one)
    timeouts: list[int | float | None]  # their timeouts, same order
    foreign_hooks: int  # every other hook entry on this event


class Status(TypedDict):
    path: str
    exists: bool
    installed: bool  # every event in EVENTS has exactly one hook of ours
    events: dict[str, EventStatus]  # one per name in EVENTS
    stray_events: list[str]  # other events that hold hooks of ours (left from older versions)


# ---------------------------------------------------------------------------------------------
# Paths and commands


def settings_path(
    scope: Scope,
    project_dir: Path | None = None,
    home: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The settings file of a scope.

    user: `$CLAUDE_CONFIG_DIR/settings.json` when that variable is set and not empty, else
    `<home>/.claude/settings.json` (home defaults to `Path.home()`). project:
    `<project_dir>/.claude/settings.json`; local: `<project_dir>/.claude/settings.local.json`
    (project_dir defaults to the current directory). `env` defaults to `os.environ`.
    """
    if scope == "user":
        environ = os.environ if env is None else env
        config_dir = environ.get("CLAUDE_CONFIG_DIR", "").strip()
        if config_dir:
            return Path(os.path.abspath(os.path.expanduser(config_dir))) / "settings.json"
        return (Path.home() if home is None else home) / ".claude" / "settings.json"
    if scope in ("project", "local"):
        base = Path.cwd() if project_dir is None else project_dir
        name = "settings.json" if scope == "project" else "settings.local.json"
        return base / ".claude" / name
    raise ValueError(f"unknown scope {scope!r}; expected 'user', 'project' or 'local'")


def hook_command(command: str) -> str:
    """The full hook command for a base command (already shell-quoted by the caller)."""
    return command.strip() + HOOK_SUFFIX


def is_our_hook(entry: object) -> TypeGuard[JSONObject]:
    """Whether one entry of a matcher group's `hooks` list is ours (a JSON object, then)."""
    if not isinstance(entry, dict) or entry.get("type") != "command":
        return False
    return is_our_command(entry.get("command"))


def is_our_command(command: object, tool: str = "claude-code") -> bool:
    """Whether a hook command is Squirrel's for `tool`: it ends with ` hook <tool>` and names
    reos-memory (every agent's hook file recognises our entries this way)."""
    if not isinstance(command, str):
        return False
    command = command.strip()
    return command.endswith(f" hook {tool}") and any(name in command for name in _PROGRAM_NAMES)


# ---------------------------------------------------------------------------------------------
# Public operations


def install(path: Path, command: str, timeouts: Mapping[str, int] | None = None) -> Result:
    """Put our hook on every event of EVENTS in the settings file at `path`.

    `command` is the base command (an absolute, shell-quoted path to `reos-memory`, maybe with
    `--db PATH`); each hook runs `<command> hook claude-code`. `timeouts` overrides
    DEFAULT_TIMEOUTS per event (seconds). Idempotent: an event whose one hook of ours already
    matches is left as it is. Otherwise the first hook of ours on the event is replaced in place
    (so its group, and any matcher the user gave it, stays), further ones are removed, and an
    event without one gets a new group at the end. Hooks of ours on events outside EVENTS (left
    by an older version) are removed.
    """
    full = _checked_command(command)
    seconds = _checked_timeouts(timeouts)
    target = _target(path)
    raw, data = _load(target)
    before = _dump(data)

    hooks = _hooks(data)
    if hooks is None:
        hooks = {}
        data["hooks"] = hooks
    for event in EVENTS:
        if event in hooks and not isinstance(hooks[event], list):
            raise SettingsError(target, f"`hooks.{event}` is a {_kind(hooks[event])}, not a list")

    added: list[str] = []
    updated: list[str] = []
    removed: list[str] = []
    for event in EVENTS:
        wanted: JSONObject = {"type": "command", "command": full, "timeout": seconds[event]}
        groups = hooks.get(event)
        if not isinstance(groups, list):  # no list yet (any other value was refused above)
            hooks[event] = [{"hooks": [wanted]}]
            added.append(event)
            continue
        ours = [hook for entries in _hook_lists(groups) for hook in entries if is_our_hook(hook)]
        if len(ours) == 1 and ours[0] == wanted:
            continue
        if ours:
            _replace_ours(groups, wanted)
            updated.append(event)
        else:
            groups.append({"hooks": [wanted]})
            added.append(event)
    for event in [name for name in hooks if name not in EVENTS]:
        if _strip_ours(hooks, event):
            removed.append(event)

    return _finish(target, path, raw, before, data, added=added, updated=updated, removed=removed)


def uninstall(path: Path) -> Result:
    """Remove every hook of ours (on any event) from the settings file at `path`."""
    target = _target(path)
    raw, data = _load(target)
    before = _dump(data)
    removed: list[str] = []
    hooks = _hooks(data)
    if hooks is not None:
        for event in list(hooks):
            if _strip_ours(hooks, event):
                removed.append(event)
        if removed and not hooks:
            del data["hooks"]
    return _finish(target, path, raw, before, data, removed=removed)


def status(path: Path) -> Status:
    """Which events carry our hook, with which command, and how many other hooks sit beside it."""
    target = _target(path)
    raw, data = _load(target)
    hooks = _hooks(data) or {}
    events: dict[str, EventStatus] = {}
    for event in EVENTS:
        groups = hooks.get(event)
        ours: list[JSONObject] = []
        foreign = 0
        if isinstance(groups, list):
            for group in groups:
                entries = group.get("hooks") if isinstance(group, dict) else None
                if not isinstance(entries, list):
                    foreign += 1  # a malformed group of someone else's: count it as one
                    continue
                for hook in entries:
                    if is_our_hook(hook):
                        ours.append(hook)
                    else:
                        foreign += 1
        events[event] = {
            "installed": len(ours) == 1,
            "commands": [str(hook["command"]) for hook in ours],
            "timeouts": [_timeout(hook.get("timeout")) for hook in ours],
            "foreign_hooks": foreign,
        }
    stray = [
        str(event)
        for event, groups in hooks.items()
        if event not in EVENTS
        and isinstance(groups, list)
        and any(is_our_hook(hook) for entries in _hook_lists(groups) for hook in entries)
    ]
    return {
        "path": str(path),
        "exists": raw is not None,
        "installed": all(e["installed"] for e in events.values()),
        "events": events,
        "stray_events": stray,
    }


# ---------------------------------------------------------------------------------------------
# Editing


def _hooks(data: JSONObject) -> JSONObject | None:
    """The file's `hooks` object, None when it has none (`_load` refused any other value)."""
    hooks = data.get("hooks")
    return hooks if isinstance(hooks, dict) else None


def _hook_lists(groups: list[object]) -> list[list[object]]:
    """The `hooks` lists of an event's well-formed matcher groups (dicts whose `hooks` is a
    list)."""
    out: list[list[object]] = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(entries, list):
            out.append(entries)
    return out


def _replace_ours(groups: list[object], wanted: JSONObject) -> None:
    """Put `wanted` where the first hook of ours is; remove the others (and groups they empty)."""
    placed = False
    kept_groups: list[object] = []
    for group in groups:
        if isinstance(group, dict):
            entries = group.get("hooks")
            if isinstance(entries, list) and any(is_our_hook(hook) for hook in entries):
                kept: list[object] = []
                for hook in entries:
                    if not is_our_hook(hook):
                        kept.append(hook)
                    elif not placed:
                        kept.append(dict(wanted))
                        placed = True
                if not kept:
                    continue
                group["hooks"] = kept
        kept_groups.append(group)
    groups[:] = kept_groups


def _strip_ours(hooks: JSONObject, event: str) -> bool:
    """Remove our hooks from one event; drop what that empties. Whether anything was removed."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return False
    kept_groups: list[object] = []
    removed = False
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(group, dict) and isinstance(entries, list):
            kept = [hook for hook in entries if not is_our_hook(hook)]
            if len(kept) != len(entries):
                removed = True
                if not kept:
                    continue
                group["hooks"] = kept
        kept_groups.append(group)
    if not removed:
        return False
    if kept_groups:
        hooks[event] = kept_groups
    else:
        del hooks[event]
    return True


def _checked_command(command: str) -> str:
    if not isinstance(command, str) or not command.strip():
        raise ValueError("command must be a non-empty string")
    if any(ch in command for ch in "\r\n\x00"):
        raise ValueError("command must be one line without NUL characters")
    full = hook_command(command)
    if not is_our_hook({"type": "command", "command": full}):
        raise ValueError(
            f"command {command!r} would not be recognised as ours later: it must name "
            "reos-memory (the executable's path) so that uninstall and re-install can find it"
        )
    return full


def _checked_timeouts(timeouts: Mapping[str, int] | None) -> dict[str, int]:
    seconds = dict(DEFAULT_TIMEOUTS)
    for event, value in (timeouts or {}).items():
        if event not in DEFAULT_TIMEOUTS:
            raise ValueError(f"unknown event {event!r} in timeouts; expected one of {EVENTS}")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"timeout for {event} must be a positive whole number of seconds")
        seconds[event] = value
    return seconds


def _timeout(value: object) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------
# Reading and writing


# The file handling every config file of an agent shares (config_edit); named here as before.
_target = target_of
_backup = backup
_write_atomic = write_atomic


def _kind(value: object) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def _no_duplicates(pairs: list[tuple[str, object]]) -> JSONObject:
    obj: JSONObject = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _load(target: Path) -> tuple[bytes | None, JSONObject]:
    """The file's bytes (None when missing) and its parsed object."""
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise SettingsError(target, f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SettingsError(target, "is not UTF-8 text") from None
    if not text.strip():
        return raw, {}
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise SettingsError(target, f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SettingsError(target, f"holds a JSON {_kind(data)}, not an object")
    hooks = data.get("hooks")
    if "hooks" in data and not isinstance(hooks, dict):
        raise SettingsError(target, f"`hooks` is a {_kind(hooks)}, not an object")
    return raw, data


def _dump(data: JSONMapping) -> str:
    return json.dumps(data, indent=_INDENT, ensure_ascii=False) + "\n"


def _finish(
    target: Path,
    path: Path,
    raw: bytes | None,
    before: str,
    data: JSONMapping,
    *,
    added: list[str] | None = None,
    updated: list[str] | None = None,
    removed: list[str] | None = None,
) -> Result:
    after = _dump(data)
    if after == before:
        return Result(changed=False, path=path, backup=None)
    saved = _backup(target, raw) if raw is not None else None
    _write_atomic(target, after.encode("utf-8"), expected=raw)
    return Result(
        changed=True,
        path=path,
        backup=saved,
        added=tuple(added or ()),
        updated=tuple(updated or ()),
        removed=tuple(removed or ()),
    )
