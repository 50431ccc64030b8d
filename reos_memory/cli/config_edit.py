"""Edit an agent's JSON(C) or TOML config file in place: add, update and remove entries we own,
keeping every other byte of the file as it was.

The file is never re-serialised. A JSON(C) file is read by a small tokenizer that knows strings,
`//` and `/* */` comments and trailing commas, and that records where each value starts and
ends; our entries are inserted as text at the end of their container, indented like the
container's other children (or one step deeper than the container when it is empty), with the
file's own line ending. Removing an entry deletes exactly the text an insertion adds (the comma
before it, the line break and indentation, the entry), and a container that removal leaves empty
on our path is removed the same way, so `insert` then `remove` gives back the original bytes. A
TOML file gets our table as a block of its own at the end (`[mcp_servers.reos-memory]`), removed
with the blank line put before it.

What is ours:
- a `Keyed` entry: the member named `key` of the object at `path` (e.g. `mcpServers` /
  `reos-memory`);
- a `Listed` entry: an element of the array at `path` that the file's `owns` predicate accepts
  (hook entries, recognised by their command). Elements of ours on other arrays under
  `strays_under` (events an older version used) are removed on install too.

Rules, all predictable:
- A missing file, or one holding only white space, is an empty document (`skeleton`: e.g.
  Cursor's `{"version": 1}`). A file that does not parse, that is not an object at the top, has
  a duplicate key, or whose container on our path has the wrong type is refused (`ConfigError`)
  and left alone.
- Nothing is written when nothing changes. Before an existing file changes, its previous bytes
  are copied to `<name>.bak-<UTC timestamp>` beside it. The new content goes to a temporary file
  in the same directory with the old file's mode and replaces it with `os.replace`; a symlinked
  file is written through to its target. If the file changed while we edited it, nothing is
  written.
- Each edit is checked by parsing the result: what is not ours must parse to what it was, and
  ours to what we wanted; otherwise the file is refused (an inline TOML table we cannot extend,
  say).
- A file that is left holding only the skeleton we would have created it with is deleted on
  removal, with the directories above it that this leaves empty (up to `stop_at`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from reos_memory.json_types import JSONMapping, JSONObject

__all__ = [
    "ConfigError",
    "ConfigFile",
    "FileResult",
    "Keyed",
    "Listed",
    "apply",
    "backup",
    "present",
    "target_of",
    "write_atomic",
]


class ConfigError(Exception):
    """A config file we refuse to change (or cannot read); it was left as it was."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}; the file was not changed")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class Keyed:
    """The member `key` of the object at `path`, with `value`."""

    path: tuple[str, ...]
    key: str
    value: object  # a JSON value (a TOML file takes a table: a dict)

    @property
    def label(self) -> str:
        return ".".join((*self.path, self.key))


@dataclass(frozen=True)
class Listed:
    """One element of ours, `value`, in the array at `path`."""

    path: tuple[str, ...]
    value: object  # a JSON value

    @property
    def label(self) -> str:
        return ".".join(self.path)


Entry = Keyed | Listed


@dataclass(frozen=True)
class ConfigFile:
    """One file and what of it is ours."""

    path: Path
    entries: tuple[Entry, ...]
    format: Literal["json", "toml"] = "json"
    owns: Callable[[object], bool] = lambda value: False  # which array elements are ours
    strays_under: tuple[str, ...] | None = None  # arrays below this object may hold old ones
    skeleton: JSONMapping = field(default_factory=dict)
    stop_at: Path | None = None  # never remove this directory or one above it


@dataclass(frozen=True)
class FileResult:
    path: Path
    changed: bool
    backup: Path | None = None
    created: bool = False
    deleted: bool = False
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# JSON with comments: values with their spans


@dataclass
class Node:
    start: int
    end: int
    value: object  # the JSON value: a dict for an object, a list for an array
    keys: list[str] | None = None  # objects: member names, in order
    key_starts: list[int] | None = None  # objects: where each member's name starts
    children: list[Node] = field(default_factory=list)  # members' values, or array items

    def child_start(self, i: int) -> int:
        return self.key_starts[i] if self.key_starts is not None else self.children[i].start

    def get(self, key: str) -> Node | None:
        if self.keys is None or key not in self.keys:
            return None
        return self.children[self.keys.index(key)]


_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"', re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> ValueError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ValueError(f"{what} at line {line}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.pos = end + 2
            else:
                return

    def document(self) -> Node:
        self.skip()
        node = self.value(0)
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the document")
        return node

    def value(self, depth: int) -> Node:
        if depth > 256:
            raise self.fail("nesting too deep")
        text, start = self.text, self.pos
        ch = text[start : start + 1]
        if ch == "{":
            return self.container(depth, "}")
        if ch == "[":
            return self.container(depth, "]")
        if ch == '"':
            m = _STRING.match(text, start)
            if not m:
                raise self.fail("bad string")
            self.pos = m.end()
            return Node(start, self.pos, json.loads(m.group()))
        m = _NUMBER.match(text, start)
        if m and m.end() > start:
            self.pos = m.end()
            return Node(start, self.pos, json.loads(m.group()))
        for word, val in _LITERALS.items():
            if text.startswith(word, start):
                self.pos = start + len(word)
                return Node(start, self.pos, val)
        raise self.fail("unexpected character" if ch else "unexpected end")

    def container(self, depth: int, close: str) -> Node:
        is_object = close == "}"
        members: JSONObject = {}
        items: list[object] = []
        node = Node(self.pos, -1, members if is_object else items)
        if is_object:
            node.keys, node.key_starts = [], []
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                break
            if node.children:
                if not self.text.startswith(",", self.pos):
                    raise self.fail(f"expected ',' or '{close}'")
                self.pos += 1
                self.skip()
                if self.text.startswith(close, self.pos):  # a trailing comma (JSONC)
                    break
            if is_object:
                assert node.keys is not None and node.key_starts is not None
                key_start = self.pos
                key = self.value(depth + 1)
                if not isinstance(key.value, str) or key.start == key.end:
                    raise self.fail("expected a member name")
                if key.value in node.keys:
                    raise self.fail(f"duplicate key {key.value!r}")
                self.skip()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("expected ':'")
                self.pos += 1
                self.skip()
                child = self.value(depth + 1)
                node.keys.append(key.value)
                node.key_starts.append(key_start)
                members[key.value] = child.value
            else:
                child = self.value(depth + 1)
                items.append(child.value)
            node.children.append(child)
        self.pos += 1
        node.end = self.pos
        return node


def parse_jsonc(text: str) -> Node:
    """The document's tree of values with their spans (ValueError when it is not JSONC)."""
    return _Parser(text).document()


def _kind(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


# ---------------------------------------------------------------------------------------------
# Textual edits


@dataclass(frozen=True)
class _Style:
    newline: str
    unit: str  # one level of indentation

    @classmethod
    def of(cls, text: str) -> _Style:
        newline = "\r\n" if "\r\n" in text else "\n"
        m = re.search(r"\n([ \t]+)\S", text)
        return cls(newline, m.group(1) if m else "  ")

    def render(self, value: object, indent: str, inline: bool) -> str:
        if inline:
            return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        lines = json.dumps(value, ensure_ascii=False, indent=self.unit).split("\n")
        return (self.newline + indent).join(lines)


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[start:pos])
    return m.group() if m else ""


def _ws_before(text: str, pos: int) -> str:
    start = pos
    while start > 0 and text[start - 1] in " \t\r\n":
        start -= 1
    return text[start:pos]


def _insert(text: str, node: Node, key: str | None, value: object, style: _Style) -> str:
    """Add a member (`key`) or an element at the end of the container `node`."""

    def child(indent: str, inline: bool) -> str:
        rendered = style.render(value, indent, inline)
        return rendered if key is None else json.dumps(key, ensure_ascii=False) + ": " + rendered

    if node.children:
        last = len(node.children) - 1
        sep = _ws_before(text, node.child_start(last))
        inline = "\n" not in sep
        sep = sep if not inline else " "
        indent = sep.rsplit("\n", 1)[-1] if not inline else ""
        at = node.children[last].end
        return text[:at] + "," + sep + child(indent, inline) + text[at:]
    outer = _line_indent(text, node.start)
    inner = text[node.start + 1 : node.end - 1]
    new = style.newline + outer + style.unit + child(outer + style.unit, False)
    if not inner.strip():  # `{}` or only white space: ours alone
        return text[: node.start + 1] + new + style.newline + outer + text[node.end - 1 :]
    return text[: node.start + 1] + new + text[node.start + 1 :]


def _delete(text: str, node: Node, index: int) -> str:
    """Remove child `index` of `node`: the inverse of `_insert` for the last child."""
    start, end = node.child_start(index), node.children[index].end
    if index > 0:
        return text[: node.children[index - 1].end] + text[end:]
    if len(node.children) > 1:
        return text[:start] + text[node.child_start(1) :]
    left = start - len(_ws_before(text, start))
    m = re.compile(r"[ \t\r\n]*,?[ \t\r\n]*").match(text, end)
    right = m.end() if m else end
    return text[: max(left, node.start + 1)] + text[right:]


def _find(root: Node, path: Sequence[str]) -> Node | None:
    node: Node | None = root
    for key in path:
        node = node.get(key) if node is not None else None
    return node


# ---------------------------------------------------------------------------------------------
# The JSON engine


class _Json:
    def __init__(self, spec: ConfigFile, text: str) -> None:
        self.spec = spec
        self.style = _Style.of(text) if text.strip() else _Style("\n", "  ")
        self.empty = self.style.render(dict(spec.skeleton), "", False) + self.style.newline
        self.text = text if text.strip() else self.empty
        self.root = self.parse(self.text)
        for entry in spec.entries:
            self.check(entry)

    def parse(self, text: str) -> Node:
        try:
            root = parse_jsonc(text)
        except ValueError as exc:
            raise ConfigError(self.spec.path, f"is not valid JSON ({exc})") from None
        if not isinstance(root.value, dict):
            raise ConfigError(self.spec.path, f"holds a JSON {_kind(root.value)}, not an object")
        return root

    def check(self, entry: Entry) -> None:
        node = self.root
        for depth, key in enumerate(entry.path):
            child = node.get(key)
            if child is None:
                return
            want = list if isinstance(entry, Listed) and depth == len(entry.path) - 1 else dict
            if not isinstance(child.value, want):
                where = ".".join(entry.path[: depth + 1])
                kind = "an array" if want is list else "an object"
                raise ConfigError(
                    self.spec.path, f"`{where}` is a {_kind(child.value)}, not {kind}"
                )
            node = child

    def edit(self, text: str) -> None:
        self.text = text
        self.root = self.parse(text)

    def ours(self, path: Sequence[str]) -> list[int]:
        node = _find(self.root, path)
        if node is None or not isinstance(node.value, list):
            return []
        return [i for i, item in enumerate(node.value) if self.spec.owns(item)]

    def put(self, entry: Entry) -> str | None:
        """Make the file hold `entry` once: 'added', 'updated', or None when it already does."""
        container = _find(self.root, entry.path)
        if isinstance(entry, Keyed):
            have = container.get(entry.key) if container is not None else None
            if have is None:
                self.insert(entry)
                return "added"
            if have.value == entry.value:
                return None
            assert container is not None and container.key_starts is not None
            at = container.key_starts[container.children.index(have)]
            inline = "\n" not in _ws_before(self.text, at)
            new = self.style.render(entry.value, _line_indent(self.text, at), inline)
            self.edit(self.text[: have.start] + new + self.text[have.end :])
            return "updated"
        found = self.ours(entry.path)
        have_items = container.value if container is not None else None
        if isinstance(have_items, list) and len(found) == 1 and have_items[found[0]] == entry.value:
            return None
        for i in reversed(found):
            self.edit(_delete(self.text, self.container(entry.path), i))
        self.insert(entry)
        return "updated" if found else "added"

    def container(self, path: Sequence[str]) -> Node:
        node = _find(self.root, path)
        assert node is not None
        return node

    def insert(self, entry: Entry) -> None:
        """Add `entry` at the end of its container, creating the containers it lacks."""
        node, depth = self.root, 0
        while depth < len(entry.path) and node.get(entry.path[depth]) is not None:
            node = self.container(entry.path[: depth + 1])
            depth += 1
        missing = entry.path[depth:]
        if isinstance(entry, Keyed):
            key, value = entry.key, entry.value
        else:
            key, value = None, entry.value
        if missing:
            if isinstance(entry, Listed):
                value = [value]
            elif key is not None:
                value = {key: value}
            for name in reversed(missing[1:]):
                value = {name: value}
            key = missing[0]
        self.edit(_insert(self.text, node, key, value, self.style))

    def take_out(self, entry: Entry) -> bool:
        """Remove every one of ours for `entry`, and the containers that leaves empty."""
        container = _find(self.root, entry.path)
        if container is None:
            return False
        if isinstance(entry, Keyed):
            if container.keys is None or entry.key not in container.keys:
                return False
            found = [container.keys.index(entry.key)]
        else:
            found = self.ours(entry.path)
        for i in reversed(found):
            self.edit(_delete(self.text, self.container(entry.path), i))
        if found:
            self.prune(entry.path)
        return bool(found)

    def prune(self, path: Sequence[str]) -> None:
        for depth in range(len(path), 0, -1):
            node = _find(self.root, path[:depth])
            parent = _find(self.root, path[: depth - 1])
            if node is None or parent is None or node.children or parent.keys is None:
                return
            self.edit(_delete(self.text, parent, parent.keys.index(path[depth - 1])))

    def strays(self) -> list[Listed]:
        """Arrays under `strays_under` holding elements of ours, other than our entries' own."""
        under = self.spec.strays_under
        node = _find(self.root, under) if under is not None else None
        if under is None or node is None or node.keys is None:
            return []
        wanted = {e.path for e in self.spec.entries if isinstance(e, Listed)}
        paths = [(*under, key) for key in node.keys]
        return [Listed(p, None) for p in paths if p not in wanted and self.ours(p)]

    def has(self, entry: Entry) -> bool:
        """Whether something of ours is where `entry` goes (any command, any value)."""
        container = _find(self.root, entry.path)
        if isinstance(entry, Keyed):
            return container is not None and container.get(entry.key) is not None
        return bool(self.ours(entry.path))


# ---------------------------------------------------------------------------------------------
# The TOML engine: our table is a block of lines of its own


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_key_pattern(key: str) -> str:
    return "(?:" + "|".join(map(re.escape, (key, f'"{key}"', f"'{key}'"))) + ")"


class _Toml:
    def __init__(self, spec: ConfigFile, text: str) -> None:
        self.spec = spec
        self.text = text
        self.empty = ""
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.data = self.parse(text)
        for entry in spec.entries:
            if not isinstance(entry, Keyed):
                raise TypeError("a TOML file takes keyed entries only")
            node: object = self.data
            for depth, key in enumerate((*entry.path, entry.key)):
                if not isinstance(node, dict):
                    where = ".".join((*entry.path, entry.key)[:depth])
                    raise ConfigError(spec.path, f"`{where}` is not a table")
                node = node.get(key, {})

    def parse(self, text: str) -> JSONObject:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(self.spec.path, f"is not valid TOML ({exc})") from None

    def lookup(self, entry: Keyed) -> object:
        node: object = self.data
        for key in (*entry.path, entry.key):
            node = node.get(key) if isinstance(node, dict) else None
        return node

    def block(self, entry: Keyed) -> tuple[int, int] | None:
        """Where the table's header line starts and where its block ends (the next other
        table's header, or the end)."""
        names = [_toml_key_pattern(k) for k in (*entry.path, entry.key)]
        dotted = r"[ \t]*\.[ \t]*".join(names)
        header = re.compile(r"^[ \t]*\[[ \t]*" + dotted + r"[ \t]*\][ \t]*(?:#.*)?\r?$", re.M)
        m = header.search(self.text)
        if not m:
            return None
        sub = re.compile(r"^[ \t]*\[[ \t]*" + dotted + r"[ \t]*\.", re.M)
        pos = m.end()
        for other in re.finditer(r"^[ \t]*\[", self.text[pos:], re.M):
            at = pos + other.start()
            if not sub.match(self.text, at):
                return m.start(), at
        return m.start(), len(self.text)

    def render(self, entry: Keyed) -> str:
        nl = self.newline
        head = "[" + ".".join(_toml_key(k) for k in (*entry.path, entry.key)) + "]"
        table = entry.value
        if not isinstance(table, dict):
            raise TypeError("a TOML file takes tables (dicts) as its entries' values")
        lines = [head, *(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items())]
        return nl.join(lines) + nl

    def edit(self, text: str) -> None:
        self.text = text
        self.data = self.parse(text)

    def put(self, entry: Entry) -> str | None:
        assert isinstance(entry, Keyed)
        have = self.lookup(entry)
        if have == entry.value:
            return None
        if have is None:
            text, nl = self.text, self.newline
            if not text.strip():
                new = self.render(entry)
            elif text.endswith("\n"):
                new = text + nl + self.render(entry)
            else:  # no line break at the end: ours has none either, so removal finds the end
                new = text + nl + nl + self.render(entry)[: -len(nl)]
            try:
                self.edit(new)
            except ConfigError:
                where = ".".join(entry.path)
                raise ConfigError(
                    self.spec.path, f"`{where}` is written so that a [table] cannot be added to it"
                ) from None
            return "added"
        span = self.block(entry)
        if span is None:
            raise ConfigError(
                self.spec.path, f"`{entry.label}` is not written as a [table] we can edit"
            )
        start, end = span
        block = self.text[start:end]
        rendered = self.render(entry)
        body = block.rstrip("\r\n")
        tail = block[len(body) :]
        self.edit(self.text[:start] + rendered.rstrip("\r\n") + tail + self.text[end:])
        return "updated"

    def take_out(self, entry: Entry) -> bool:
        assert isinstance(entry, Keyed)
        if self.lookup(entry) is None:
            return False
        span = self.block(entry)
        if span is None:
            raise ConfigError(
                self.spec.path, f"`{entry.label}` is not written as a [table] we can remove"
            )
        start, end = span
        before, after = self.text[:start], self.text[end:]
        nl = self.newline
        if not after:
            if not self.text.endswith("\n") and before.endswith(nl + nl):
                before = before[: -2 * len(nl)]
            elif before.endswith(nl + nl):
                before = before[: -len(nl)]
        elif before.endswith(nl + nl):
            before = before[: -len(nl)]
        self.edit(before + after)
        return True

    def strays(self) -> list[Listed]:
        return []

    def has(self, entry: Entry) -> bool:
        return isinstance(entry, Keyed) and self.lookup(entry) is not None


# ---------------------------------------------------------------------------------------------
# Checking an edit: what is not ours is what it was


def _without_ours(spec: ConfigFile, data: object) -> object:
    data = json.loads(json.dumps(data))  # a deep copy
    paths: list[tuple[str, ...]] = []
    for entry in spec.entries:
        container = data
        for key in entry.path:
            container = container.get(key) if isinstance(container, dict) else None
        if isinstance(entry, Keyed) and isinstance(container, dict):
            container.pop(entry.key, None)
        elif isinstance(entry, Listed) and isinstance(container, list):
            container[:] = [item for item in container if not spec.owns(item)]
        paths.append(entry.path)
    under = spec.strays_under
    holder = data
    for key in under or ():
        holder = holder.get(key) if isinstance(holder, dict) else None
    if under is not None and isinstance(holder, dict):
        for key, items in holder.items():
            if isinstance(items, list):
                items[:] = [item for item in items if not spec.owns(item)]
                paths.append((*under, key))
    for path in sorted(set(paths), key=len, reverse=True):  # empty containers on our paths
        for depth in range(len(path), 0, -1):
            parent = data
            for key in path[: depth - 1]:
                parent = parent.get(key) if isinstance(parent, dict) else None
            if not isinstance(parent, dict) or parent.get(path[depth - 1], 0) not in ({}, []):
                break
            del parent[path[depth - 1]]
    return data


def _value_of(engine: _Json | _Toml) -> object:
    return engine.root.value if isinstance(engine, _Json) else engine.data


def _check(spec: ConfigFile, before: object, engine: _Json | _Toml, remove: bool) -> None:
    after = _value_of(engine)
    if _without_ours(spec, before) != _without_ours(spec, after):
        raise ConfigError(spec.path, "an edit would have changed settings that are not ours")
    for entry in spec.entries:
        if remove and engine.has(entry):
            raise ConfigError(spec.path, f"`{entry.label}` could not be removed")
        if not remove and not engine.has(entry):
            raise ConfigError(spec.path, f"`{entry.label}` could not be added")


# ---------------------------------------------------------------------------------------------
# Public operations


def _engine(spec: ConfigFile, text: str) -> _Json | _Toml:
    return _Toml(spec, text) if spec.format == "toml" else _Json(spec, text)


def _read(spec: ConfigFile, target: Path) -> tuple[bytes | None, str, str]:
    """The file's bytes (None when missing), its text, and its byte-order mark."""
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return None, "", ""
    except OSError as exc:
        raise ConfigError(spec.path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(spec.path, "is not UTF-8 text") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    return raw, text[len(bom) :], bom


def present(spec: ConfigFile) -> dict[str, bool]:
    """Which entries have something of ours in place (any command or value), by label."""
    _, text, _ = _read(spec, target_of(spec.path))
    engine = _engine(spec, text)
    return {entry.label: engine.has(entry) for entry in spec.entries}


def apply(spec: ConfigFile, *, remove: bool = False) -> FileResult:
    """Put our entries into the file (or take every one of ours out, `remove`)."""
    target = target_of(spec.path)
    raw, text, bom = _read(spec, target)
    engine = _engine(spec, text)
    before = _value_of(engine)
    added: list[str] = []
    updated: list[str] = []
    removed: list[str] = []
    for entry in spec.entries:
        if remove:
            if engine.take_out(entry):
                removed.append(entry.label)
        else:
            done = engine.put(entry)
            (added if done == "added" else updated if done else []).append(entry.label)
    for stray in engine.strays():
        if engine.take_out(stray):
            removed.append(stray.label)
    if not (added or updated or removed):
        return FileResult(spec.path, changed=False)
    _check(spec, before, engine, remove)
    if remove and engine.text == engine.empty and not spec.path.is_symlink():
        _delete_file(target, spec.stop_at)
        return FileResult(spec.path, changed=True, deleted=True, removed=tuple(removed))
    saved = backup(target, raw) if raw is not None else None
    write_atomic(target, (bom + engine.text).encode("utf-8"), expected=raw)
    return FileResult(
        spec.path,
        changed=True,
        backup=saved,
        created=raw is None,
        added=tuple(added),
        updated=tuple(updated),
        removed=tuple(removed),
    )


def _delete_file(target: Path, stop_at: Path | None) -> None:
    """Remove a file left holding only what we created it with, and the folders it empties."""
    try:
        target.unlink()
    except OSError as exc:
        raise ConfigError(target, f"cannot be removed ({exc.strerror or exc})") from None
    if stop_at is None:
        return
    stop = Path(os.path.abspath(stop_at))
    folder = Path(os.path.abspath(target.parent))
    while stop in folder.parents:
        try:
            folder.rmdir()  # only when empty
        except OSError:
            return
        folder = folder.parent


# ---------------------------------------------------------------------------------------------
# Reading and writing files


def target_of(path: Path) -> Path:
    """The file to read and write: a symlink's final target, so the link itself survives."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def backup(target: Path, raw: bytes) -> Path:
    """Copy the previous bytes to `<name>.bak-<UTC timestamp>` (never over an existing file)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    mode = _mode_for(target)
    for n in range(1000):
        name = f"{target.name}.bak-{stamp}" + (f"-{n}" if n else "")
        candidate = target.with_name(name)
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(target, f"backup {candidate} failed ({exc})") from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        return candidate
    raise ConfigError(target, "no free backup name")


def write_atomic(target: Path, content: bytes, *, expected: bytes | None) -> None:
    """Temp file in the same directory, same mode, fsync, then `os.replace`.

    `expected` is what the file held when it was read; if it changed meanwhile (the agent or an
    editor wrote it) the write is abandoned rather than overwriting their change.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(target, f"its directory cannot be created ({exc})") from None
    mode = _mode_for(target)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        try:
            current: bytes | None = target.read_bytes()
        except FileNotFoundError:
            current = None
        if current != expected:
            raise ConfigError(target, "changed while it was being edited; run again")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):  # make the rename durable where directories can be fsynced
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
