"""Kubernetes Secret manifests: every value under ``data:`` or ``stringData:`` is the secret.

``kubectl get secret db -o yaml`` prints ``data:`` entries named anything (``key:``, ``extra:``,
``tls.crt:``) holding base64 of the secret; ``stringData:`` holds it in clear. Neither name says
"secret", so the named rules miss them: the manifest's ``kind: Secret`` does. Only the maps of
the object that says it is a Secret are read: in YAML those at its ``kind:`` line's depth, within
the object (a document, or an item of a ``kind: List``); in JSON (a whole text that parses) those
of the object whose ``"kind"`` is ``"Secret"``. A ConfigMap beside it keeps its data; a value
that is a reference or a placeholder is kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from reos_memory.squirrel.redaction.findings import P_NAMED, Span
from reos_memory.squirrel.redaction.values import is_placeholder

_KIND_YAML = re.compile(r"(?im)^[ \t]*(?:- )?kind:[ \t]*[\"']?secret[\"']?[ \t]*$")
_DATA_YAML = re.compile(r"(?m)^(?P<ind>[ \t]*)(?P<map>data|stringData):[ \t]*$")
_ENTRY_YAML = re.compile(
    r"(?P<ind>[ \t]+)[\w./-]{1,253}:[ \t]*(?P<q>[\"']?)(?P<v>[^\s\"'#]{1,65536})(?P=q)[ \t]*$"
)
# shorter is no secret of a manifest: base64 under data ("YmFyCg==" is "bar"), clear text under
# stringData
MIN_VALUE = {"data": 10, "stringData": 4}
MAX_ENTRIES = 10_000  # lines of a Secret read, at most
MAX_HEADER = 200  # lines read back from a kind: line to its object's start, at most
MAX_MANIFESTS = 100  # Secrets read in one text, at most
MAX_JSON = 1 << 20  # characters of a JSON text parsed, at most


def scan_secret_manifests(text: str, b: bytes, spans: list[Span]) -> None:
    """The values of the data and stringData maps of each Kubernetes Secret in `text` (the
    caller found "ecret" in it)."""
    if b"ind" not in b or (b"kind:" not in b.lower() and b'"kind"' not in b):
        return
    read = -1  # the end of the last object read
    for n, kind in enumerate(_KIND_YAML.finditer(text)):
        if n >= MAX_MANIFESTS:
            break
        if kind.start() < read:
            continue  # (its object was read)
        lo, read, depth = _object_of(text, kind.start())
        for block in _DATA_YAML.finditer(text, lo, read):
            if _width(block.group("ind")) == depth:
                _yaml_values(text, block, read, spans)
    if b'"Secret"' in b and len(text) <= MAX_JSON and text.lstrip()[:1] in ("{", "["):
        try:
            doc = json.loads(text)
        except ValueError:
            return
        for value, least in _json_secret_values(doc):
            _each(text, json.dumps(value)[1:-1], least, spans)


def _width(indent: str) -> int:
    return len(indent.expandtabs())


def _lines(text: str, start: int, step: int, stop: int) -> list[tuple[int, int, str]]:
    """(start, end, line) of up to `stop` lines from the one holding `start`, forward (step 1)
    or backward (step -1, excluding that line)."""
    out: list[tuple[int, int, str]] = []
    if step > 0:
        pos = start
        while pos < len(text) and len(out) < stop:
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            out.append((pos, end, text[pos:end].rstrip("\r")))
            pos = end + 1
        return out
    end = start - 1
    while end > 0 and len(out) < stop:
        pos = text.rfind("\n", 0, end) + 1
        out.append((pos, end, text[pos:end].rstrip("\r")))
        end = pos - 1
    return out


def _object_of(text: str, at: int) -> tuple[int, int, int]:
    """(start, end, depth) of the YAML object whose ``kind:`` line starts at `at`: its keys'
    depth, and the lines around it at that depth or deeper (the ``- `` line that opens a list
    item included; a line less deep, or ``---``, ends it)."""
    nl = text.find("\n", at)
    line = text[at : len(text) if nl < 0 else nl]
    body = line.lstrip(" \t")
    depth = _width(line[: len(line) - len(body)])
    lo = at
    if body.startswith("- "):
        depth += 2  # ("- kind: Secret" opens its item)
    else:
        for pos, _end, prev in _lines(text, at, -1, MAX_HEADER):
            bare = prev.lstrip(" \t")
            if not bare or bare.startswith("#"):
                continue
            width = _width(prev[: len(prev) - len(bare)])
            if prev.startswith("---") or width < depth - 2:
                break
            if width < depth:
                if bare.startswith("- ") and width == depth - 2:
                    lo = pos  # the line that opens this list item
                break
            lo = pos
    hi = len(text)
    for pos, _end, nxt in _lines(text, at, 1, MAX_ENTRIES)[1:]:
        bare = nxt.lstrip(" \t")
        if not bare or bare.startswith("#"):
            continue
        if nxt.startswith("---") or _width(nxt[: len(nxt) - len(bare)]) < depth:
            hi = pos
            break
    return lo, hi, depth


def _yaml_values(text: str, block: re.Match[str], hi: int, spans: list[Span]) -> None:
    own = _width(block.group("ind"))
    least = MIN_VALUE[block.group("map")]
    for pos, _end, line in _lines(text, block.end() + 1, 1, MAX_ENTRIES):
        if pos >= hi:
            return
        bare = line.strip()
        if not bare or bare.startswith("#"):
            continue
        if _width(line[: len(line) - len(line.lstrip(" \t"))]) <= own:
            return  # the map ended: a key at the data line's depth or less
        m = _ENTRY_YAML.fullmatch(line)
        if m is not None:
            _keep(text, pos + m.start("v"), pos + m.end("v"), least, spans)


def _json_secret_values(doc: Any) -> list[tuple[str, int]]:
    """(value, least length) of the data and stringData maps of every object of `doc` whose
    kind is Secret (a kubectl List holds them under items)."""
    out: list[tuple[str, int]] = []
    todo = [doc]
    while todo and len(out) < MAX_ENTRIES:
        node = todo.pop()
        if isinstance(node, list):
            todo.extend(node)
        elif isinstance(node, dict):
            if node.get("kind") == "Secret":
                for name, least in MIN_VALUE.items():
                    m = node.get(name)
                    if isinstance(m, dict):
                        out += [(v, least) for v in m.values() if isinstance(v, str)]
            todo.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return out


def _each(text: str, value: str, least: int, spans: list[Span]) -> None:
    """Every place of `value` in `text`."""
    if not _secret(value, least):
        return
    pos = text.find(value)
    while pos >= 0:
        spans.append(Span(pos, pos + len(value), P_NAMED, "kubernetes_secret"))
        pos = text.find(value, pos + len(value))


def _keep(text: str, start: int, end: int, least: int, spans: list[Span]) -> None:
    if _secret(text[start:end], least):
        spans.append(Span(start, end, P_NAMED, "kubernetes_secret"))


def _secret(value: str, least: int) -> bool:
    """Whether a value of a Secret's map is one: long enough, no reference or placeholder."""
    return len(value) >= least and not is_placeholder(value)
