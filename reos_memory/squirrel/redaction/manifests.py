"""Kubernetes Secret manifests: every value under ``data:`` or ``stringData:`` is the secret.

``kubectl get secret db -o yaml`` prints ``data:`` entries named anything (``key:``, ``extra:``,
``tls.crt:``) holding base64 of the secret; ``stringData:`` holds it in clear. Neither name says
"secret", so the named rules miss them: the manifest's ``kind: Secret`` does. The YAML form
(block mapping under the ``data:`` line, comments skipped) and the JSON form (``"kind":
"Secret"``, ``"data": {...}``) are read; a value that is a reference or a placeholder is kept.
"""

from __future__ import annotations

import re

from reos_memory.squirrel.redaction.findings import P_NAMED, Span
from reos_memory.squirrel.redaction.values import is_placeholder

_KIND_YAML = re.compile(r"(?im)^[ \t]*kind:[ \t]*[\"']?secret[\"']?[ \t]*$")
_KIND_JSON = re.compile(r"\"kind\"[ \t]*:[ \t]*\"Secret\"")
_DATA_YAML = re.compile(r"(?m)^(?P<ind>[ \t]*)(?P<map>data|stringData):[ \t]*$")
_DOCUMENT_END = re.compile(r"(?m)^---")
_ENTRY_YAML = re.compile(
    r"(?P<ind>[ \t]+)[\w./-]{1,253}:[ \t]*(?P<q>[\"']?)(?P<v>[^\s\"'#]{1,65536})(?P=q)[ \t]*$"
)
_DATA_JSON = re.compile(r"\"(?P<map>data|stringData)\"[ \t]*:[ \t]*\{(?P<body>[^{}]{0,200000})\}")
_ENTRY_JSON = re.compile(r"\"[\w./-]{1,253}\"[ \t]*:[ \t]*\"(?P<v>[^\"\\\s]{1,65536})\"")
# shorter is no secret of a manifest: base64 under data ("YmFyCg==" is "bar"), clear text under
# stringData
MIN_VALUE = {"data": 10, "stringData": 4}
MAX_ENTRIES = 10_000  # a manifest's entries read, at most
MAX_MANIFESTS = 100  # Secrets read in one text, at most


def scan_secret_manifests(text: str, b: bytes, spans: list[Span]) -> None:
    """The values of the data and stringData maps of each Kubernetes Secret in `text` (the
    caller found "ecret" in it)."""
    if b"ind" not in b or (b"kind:" not in b.lower() and b'"kind"' not in b):
        return
    read = -1  # the end of the last document read
    for n, kind in enumerate(_KIND_YAML.finditer(text)):
        if n >= MAX_MANIFESTS:
            break
        if kind.start() < read:
            continue  # (its document was read)
        # the data of the YAML document that says it is a Secret (not a ConfigMap beside it)
        lo = text.rfind("\n---", 0, kind.start()) + 1
        end = text.find("\n---", kind.end())
        read = len(text) if end < 0 else end
        _yaml_values(text, lo, read, spans)
    if b'"Secret"' in b and _KIND_JSON.search(text) is not None:
        for block in _DATA_JSON.finditer(text):
            least = MIN_VALUE[block.group("map")]
            for m in _ENTRY_JSON.finditer(text, block.start("body"), block.end("body")):
                _keep(text, m.start("v"), m.end("v"), least, spans)


def _yaml_values(text: str, lo: int, hi: int, spans: list[Span]) -> None:
    for block in _DATA_YAML.finditer(text, lo, hi):
        own = len(block.group("ind").expandtabs())
        least = MIN_VALUE[block.group("map")]
        pos = block.end() + 1
        for _ in range(MAX_ENTRIES):
            if pos >= hi:
                break
            nl = text.find("\n", pos, hi)
            line_end = hi if nl < 0 else nl
            line = text[pos:line_end].rstrip("\r")
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                indent = line[: len(line) - len(line.lstrip(" \t"))].expandtabs()
                if len(indent) <= own:
                    break  # the map ended: a key at the data line's depth or less
                m = _ENTRY_YAML.fullmatch(line)
                if m is not None:
                    _keep(text, pos + m.start("v"), pos + m.end("v"), least, spans)
            pos = line_end + 1


def _keep(text: str, start: int, end: int, least: int, spans: list[Span]) -> None:
    if end - start >= least and not is_placeholder(text[start:end]):
        spans.append(Span(start, end, P_NAMED, "kubernetes_secret"))
