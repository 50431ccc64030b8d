"""Rule 4 on command lines: passwords given to ``curl -u``, ``mysql -p``, ``sshpass -p``, ``docker
login -p``, ``az login -p``, ``redis-cli -a``, ``sqlcmd -P``, ``ldap* -w``, Oracle's ``user/password@db``,
and echoed into a ``--password-stdin`` or ``chpasswd``; and the password field of a ``.pgpass``
line."""

from __future__ import annotations

import re

from reos_memory.squirrel.redaction.findings import P_NAMED, Span
from reos_memory.squirrel.redaction.values import NEXT_WORD_RE, is_placeholder

_CURL_USER_RE = re.compile(
    r"""u(?:ser)?(?:[ \t]+|=)(["']?)(?P<user>[^\s:"'`]+):(?P<pw>[^\s"'`]+)\1"""
)
_LDAP_CMD_RE = re.compile(
    r"(?:^|[\s;&|(>`'\"])ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn)\b"
)
_P_FLAG_CMD_RE = re.compile(
    r"(?:^|[\s;&|(>`'\"])(?:(?P<attached>mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)"
    r"|(?P<spaced>sshpass|(?:docker|podman|buildah|skopeo|nerdctl|az)\s+login))\b",
    re.MULTILINE,
)
# other one-letter password flags, each of its own commands (the value after blanks)
_OTHER_FLAGS = (
    (b" -a ", re.compile(r"(?:^|[\s;&|(>`'\"])redis-cli\b", re.MULTILINE)),
    (b" -P ", re.compile(r"(?:^|[\s;&|(>`'\"])(?:sqlcmd|bcp|osql)\b", re.MULTILINE)),
)
# echo 'X' | docker login -u ci --password-stdin
_ECHOED_RE = re.compile(
    r"""(?:^|[\s;&(])(?:echo(?:[ \t]+-[ne]+)?|printf(?:[ \t]+(["'])%s\1)?)[ \t]+"""
    r"""(["']?)(?P<pw>[^\s"'|$]+)\2[ \t]*\|[^|\n]*$"""
)
# echo 'deploy:X' | chpasswd
_CHPASSWD_RE = re.compile(
    r"""(?:^|[\s;&(])echo[ \t]+(["']?)[A-Za-z0-9_.\-]{1,64}:(?P<pw>[^\s"'|]{1,256})\1[ \t]*\|"""
    r"""[ \t]*(?:sudo[ \t]+)?chpasswd\b"""
)
# Oracle's user/password@database: sqlplus scott/X@ORCL, jdbc:oracle:thin:scott/X@db:1521/ORCL
_FLAG_AP_RE = re.compile(rb" -[aP] ")
_ORACLE_RE = re.compile(
    r"(?:\b(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)(?:[ \t]+-[A-Za-z]+)*[ \t]+|jdbc:oracle:\w+:)"
    r"[A-Za-z0-9_$#]{1,128}/(?P<pw>[^@\s/\"']{1,256})@"
)
# a .pgpass line, host:port:database:user:password: alone on its line, or anywhere after the
# file's name (its lines joined by blanks)
_PGPASS_RE = re.compile(
    r"^[ \t]*[A-Za-z0-9_.\-*]{1,253}:(?:[0-9]{1,5}|\*):[^:\s]{1,128}:[^:\s]{1,128}"
    r":(?P<pw>\S{1,256})[ \t]*\r?$",
    re.MULTILINE,
)
_PGPASS_HINT_RE = re.compile(rb":(?:[0-9]{1,5}|\*):[^:\s\"',{}]{1,128}:[^:\s\"',{}]{1,128}:")
_PGPASS_NAMED_RE = re.compile(
    r"(?:pgpass|PGPASSFILE)\b[^\n]{0,300}?(?<![^\s>])[A-Za-z0-9_.\-*]{1,253}:(?:[0-9]{1,5}|\*)"
    r":[^:\s]{1,128}:[^:\s]{1,128}:(?P<pw>[^\s<]{1,256})"
)


def scan_flags(text: str, b: bytes, spans: list[Span]) -> None:
    """``curl -u user:pass``, ``mysql -pSECRET``, ``sshpass -p SECRET``, ``docker login -p X``."""
    i = b.find(b"-u")
    while i >= 0:
        if b[i - 1 : i] in (b" ", b"\t", b"-"):
            m = _CURL_USER_RE.match(text, i + 1)
            if (
                m is not None
                and not is_placeholder(m.group("pw"))
                and not (m.group("pw").isdigit() and m.group("user").isdigit())  # -u 1000:1000
                and not m.group("pw").startswith("//")  # -u http://app-id: a URL, no password
            ):
                spans.append(Span(m.start("pw"), m.end("pw"), P_NAMED, "password"))
        i = b.find(b"-u", i + 2)
    i = b.find(b" -p")
    while i >= 0:
        _p_flag(text, len(text), i, spans)
        i = b.find(b" -p", i + 3)
    if (
        _FLAG_AP_RE.search(b) is not None
        or b"passw" in b
        or (b"@" in b and (b"sqlplus" in b or b"oracle" in b))
    ):
        _rare_commands(text, b, spans)
    named = b"pgpass" in b or b"PGPASSFILE" in b
    if named or _PGPASS_HINT_RE.search(b) is not None:
        found = list(_PGPASS_RE.finditer(text))
        if named:
            found += _PGPASS_NAMED_RE.finditer(text)
        for m in found:
            pw = m.group("pw")
            if len(pw) >= 4 and not pw.isdigit() and not is_placeholder(pw):
                spans.append(Span(m.start("pw"), m.end("pw"), P_NAMED, "password"))
    i = b.find(b" -w ") if b"ldap" in b else -1
    while i >= 0:
        lo = max(0, i - 300)
        line = text[max(text.rfind("\n", lo, i) + 1, lo) : i]
        m = NEXT_WORD_RE.match(text, i + 3)
        if _LDAP_CMD_RE.search(line) and m is not None and not is_placeholder(m.group(1)):
            spans.append(Span(m.start(1), m.end(1), P_NAMED, "password"))
        i = b.find(b" -w ", i + 4)


def _rare_commands(text: str, b: bytes, spans: list[Span]) -> None:
    """``redis-cli -a``, ``sqlcmd -P``, a password echoed into ``--password-stdin`` or
    ``chpasswd``, Oracle's ``user/password@db`` (the text holds one of their words)."""
    for flag, cmd_re in _OTHER_FLAGS:
        i = b.find(flag)
        while i >= 0:
            lo = max(0, i - 300)
            m = NEXT_WORD_RE.match(text, i + 3)
            if (
                cmd_re.search(text, max(text.rfind("\n", lo, i) + 1, lo), i) is not None
                and m is not None
                and not is_placeholder(m.group(1))
            ):
                spans.append(Span(m.start(1), m.end(1), P_NAMED, "password"))
            i = b.find(flag, i + 3)
    i = b.find(b"--password-stdin")
    while i >= 0:
        lo = max(0, i - 300)
        e = _ECHOED_RE.search(text, max(text.rfind("\n", lo, i) + 1, lo), i)
        if e is not None and not is_placeholder(e.group("pw")):
            spans.append(Span(e.start("pw"), e.end("pw"), P_NAMED, "password"))
        i = b.find(b"--password-stdin", i + 16)
    if b"chpasswd" in b:
        for m in _CHPASSWD_RE.finditer(text):
            if not is_placeholder(m.group("pw")):
                spans.append(Span(m.start("pw"), m.end("pw"), P_NAMED, "password"))
    if b"@" in b and (b"sqlplus" in b or b"oracle" in b):
        for m in _ORACLE_RE.finditer(text):
            if not is_placeholder(m.group("pw")):
                spans.append(Span(m.start("pw"), m.end("pw"), P_NAMED, "password"))


def _p_flag(text: str, n: int, i: int, spans: list[Span]) -> None:
    """``-p`` is a password only after mysql-like commands (attached) or sshpass/login (spaced)."""
    lo = max(0, i - 300)
    cmd = _P_FLAG_CMD_RE.search(text, max(text.rfind("\n", lo, i) + 1, lo), i)
    if cmd is None:
        return
    j = i + 3
    if cmd.group("spaced"):
        while j < n and text[j] in " \t":
            j += 1
    k = j
    while k < n and not text[k].isspace():
        k += 1
    value = text[j:k].strip("\"'")
    if k > j and text[j] not in " \t" and not is_placeholder(value):
        spans.append(Span(j, k, P_NAMED, "password"))
