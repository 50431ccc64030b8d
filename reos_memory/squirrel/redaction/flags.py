"""Rule 4 on command lines: passwords given to ``curl -u``, ``mysql -p``, ``sshpass -p``, ``docker
login -p``, ``az login -p``, ``redis-cli -a``, ``sqlcmd -P``, ``ldap* -w``, Oracle's ``user/password@db``,
an archiver (``zip -P``, ``zip -rP``, ``7z -p``), ``openssl -k``, ``htpasswd -b``, Samba's ``-U
user%password``, ``net use`` and ``net user NAME PASSWORD``, poetry's ``http-basic`` and
``pypi-token`` settings, echoed into a ``--password-stdin`` or ``chpasswd``; secrets given to a
store (``gh secret set --body``, echoed into ``wrangler secret put``) or made a PowerShell secure
string (``ConvertTo-SecureString '...'``); SQL's ``IDENTIFIED BY '...'`` and MySQL's ``SET
PASSWORD = '...'``; and the password field of a ``.pgpass`` line."""

from __future__ import annotations

import re
from collections.abc import Iterator

from reos_memory.squirrel.redaction.findings import P_NAMED, Span
from reos_memory.squirrel.redaction.randomness import randomish
from reos_memory.squirrel.redaction.values import (
    NEXT_WORD_RE,
    has_digit_or_symbol,
    is_placeholder,
)

# -u user:pass, -u "user:pass", -u user:'pass', -u ":token" (no user), -u "token:" (an API key
# given as the user name, Stripe's way)
_CURL_USER_RE = re.compile(
    r"""u(?:ser)?(?:[ \t]+|=)(["']?)(?P<user>[^\s:"'`]*):"""
    r"""(?:(?P<q>["'])(?P<qpw>[^"'\s]{1,256})(?P=q)|(?P<pw>[^\s"'`]*))\1"""
)
_LDAP_CMD_RE = re.compile(
    r"(?:^|[\s;&|(>`'\"])ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn)\b"
)
# (an archiver's -p is attached too, 7z a -pX, and its own only in its command: tar -pxf)
_P_FLAG_CMD_RE = re.compile(
    r"(?:^|[\s;&|(>`'\"])(?:(?P<attached>mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)"
    r"|(?P<spaced>sshpass|(?:docker|podman|buildah|skopeo|nerdctl|az)\s+login)"
    r"|(?P<archive>7z|7za|7zr|7zz|rar|unrar))\b",
    re.MULTILINE,
)
# other one-letter password flags, each of its own command: the flag must belong to that
# command (the command is in the segment of the line the flag is in: no pipe or ; between);
# openssl's -k is a passphrase and its -K the key itself, in hex
_OTHER_FLAGS = (
    (b" -a ", re.compile(r"(?<![\w-])redis-cli\b")),
    (b" -P ", re.compile(r"(?<![\w-])(?:sqlcmd|bcp|osql|zip|unzip)\b")),
    (b" -k ", re.compile(r"(?<![\w-])openssl\b")),
    (b" -K ", re.compile(r"(?<![\w-])openssl\b")),
)
_FLAG_AP_RE = re.compile(rb" -[aPkK] ")  # any flag above, found in one scan
_SEGMENT_END_RE = re.compile(r"[\n|;&`\"'$(>][ \t]*")  # what ends the segment before a command
_COMMAND_END_RE = re.compile(r"[\n|;&]")
_FLAG_VALUE_RE = re.compile(r"""[ \t]+(["']?)(?P<v>[^\s"']{1,256})\1(?=\s|$|["'])""")
# where a command may start: a line's start, or after a blank, ; & ( or a quote (JSON logs)
_CMD_START = r"""(?<![^\s;&("'`])"""
# echo 'X' | docker login -u ci --password-stdin
_ECHOED_RE = re.compile(
    _CMD_START + r"""(?:echo(?:[ \t]+-[ne]+)?|printf(?:[ \t]+(["'])%s(?:\\n)?\1)?)[ \t]+"""
    r"""(["']?)(?P<pw>[^\s"'|$]{1,256})\2[ \t]*\|[^|\n]*$"""
)
# what stores a secret it reads from its standard input, right after the pipe: echo X | npx
# wrangler secret put NAME, gh secret set NAME, vercel env add NAME production
_STDIN_STORE_RE = re.compile(
    r"[ \t]*(?:sudo[ \t]+)?(?:(?:npx|bunx|pnpx)[ \t]+)?"
    r"(?:wrangler[ \t]+secret[ \t]+put|gh[ \t]+secret[ \t]+set|vercel[ \t]+env[ \t]+add"
    r"|doppler[ \t]+secrets[ \t]+set|docker[ \t]+secret[ \t]+create"
    r"|gcloud[ \t]+secrets[ \t]+(?:create|versions[ \t]+add)|firebase[ \t]+functions:secrets:set)"
    r"(?![\w-])"
)
_STORE_WORDS = (b"secret", b"env add")
# gh secret set NAME --body X (--body=X, --body "X", -b X, -b"X"): the secret's value; the
# flag is looked for up to the end of the command (--repo and --env may come before it)
_GH_BODY_RE = re.compile(
    r"""[^\n|;&]{0,512}?[ \t](?:--body(?:=|[ \t]+)|-b[ \t]*)"""
    r"""(?:(?P<q>["'])(?P<qv>[^"'\n]{1,4096})(?P=q)|(?P<bare>[^\s"'|;&<>]{1,4096}))"""
)
_GH_COMMAND_RE = re.compile(r"[^\n|;&]{0,512}")  # what the flag is looked for in
# htpasswd's options (-b -c, -bc, -nbB, -C 12): in batch mode (-b) the password is given after
# the file and the user (htpasswd -b -c FILE USER PASSWORD), after the user alone with -n
_HTPASSWD_OPTS_RE = re.compile(r"(?:[ \t]+-(?:[A-Za-z]*[Cr][ \t]+\d{1,3}|[A-Za-z]{1,8})){1,8}")
_ARG_RE = re.compile(r"""[ \t]+(?:(["'])(?P<q>[^"'\n]{1,256})\1|(?P<w>[^\s"'`|;&<>]{1,256}))""")
# a statement about a database account before its password: CREATE or ALTER USER, ROLE or LOGIN,
# MySQL's older GRANT ... IDENTIFIED BY, Oracle's CONNECT TO of a database link
_SQL_ACCOUNT_RE = re.compile(
    r"(?i)\b(?:(?:create|alter)\s+(?:user|role|login)|grant|connect\s+to)\b[^;]{0,300}\Z"
)
# MySQL's and Oracle's IDENTIFIED [WITH plugin] BY 'password' (Oracle's unquoted); BY PASSWORD
# '*<hash>', BY VALUES '<hash>' and BY RANDOM PASSWORD give none
_IDENTIFIED_BY_RE = re.compile(
    r"""(?i)identified(?:[ \t]+with[ \t]+\w{1,64})?[ \t]+by[ \t]+"""
    r"""(?:(["'])(?P<q>[^"'\n]{1,256})\1|(?!(?:password|values|random)\b)(?P<w>[^\s;"'`,)]{1,256}))"""
)
# MySQL's SET PASSWORD [FOR 'user'@'host'] = 'password' (5.x's = PASSWORD('password') too); a
# variable (@new_pw) or a bind parameter is no literal
_SET_PASSWORD_RE = re.compile(
    r"""(?i)set[ \t]+password(?:[ \t]+for[ \t]+[^\s=;]{1,200})?[ \t]*=[ \t]*"""
    r"""(?:(?:old_)?password[ \t]*\([ \t]*)?(["'])(?P<v>[^"'\n]{1,256})\1"""
)
# Samba's user%password: smbclient //host/share -U user%password (rpcclient, smbcacls, net ads
# ... -U, --user=); the command must be in the flag's segment (a -U of another tool takes no %)
_SAMBA_USER_RE = re.compile(
    r"""(?:-U[ \t]*|--user(?:=|[ \t]+))(["']?)[^\s%"']{0,128}%(?P<pw>[^\s"']{1,256})\1"""
)
_SAMBA_CMD_RE = re.compile(
    r"(?<![\w-])(?:smbclient|rpcclient|smbcacls|smbcquotas|smbget|smbtree|smbmap|net|winexe)\b"
)
# poetry's credentials for a repository: poetry config [--local] http-basic.REPO USER PASSWORD,
# pypi-token.REPO TOKEN (the user alone: poetry asks for the password)
_POETRY_CONFIG_RE = re.compile(
    r"[ \t]+config(?:[ \t]+--(?:local|no-interaction|quiet|-?n|-?q))*"
    r"[ \t]+(?:(?P<basic>http-basic)|pypi-token)\.[\w.\-]{1,128}(?=[ \t])"
)
# zip's cluster of one-letter options ending in P, the password's flag: zip -rP X, zip -9erP X
_ZIP_CLUSTER_RE = re.compile(rb" -[A-Za-z0-9]{1,8}P ")
_ZIP_CMD_RE = re.compile(r"(?<![\w-])(?:zip|unzip)\b")
# PowerShell's ConvertTo-SecureString 'X' -AsPlainText -Force (-String 'X', its switches first),
# or the literal piped into it: 'X' | ConvertTo-SecureString -AsPlainText -Force
_SECURE_STRING_RE = re.compile(
    r"""(?i)convertto-securestring(?:[ \t]+-(?:asplaintext|force))*[ \t]+(?:-string[ \t]+)?"""
    r"""(["'])(?P<v>[^"'\n]{1,4096})\1"""
)
_PIPED_LITERAL_RE = re.compile(r"""(["'])(?P<v>[^"'\n]{1,4096})\1[ \t]*\|[ \t]*\Z""")
_SECURE_STRING_WORD = b"onvertto-securestring"  # (read in the case-folded text)
# echo 'deploy:X' | chpasswd
_CHPASSWD_RE = re.compile(
    _CMD_START + r"""echo[ \t]+(["']?)[A-Za-z0-9_.\-]{1,64}:(?P<pw>[^\s"'|]{1,256})\1[ \t]*\|"""
    r"""[ \t]*(?:sudo[ \t]+)?chpasswd\b"""
)
# Oracle's user/password@database: sqlplus scott/X@ORCL, jdbc:oracle:thin:scott/X@db:1521/ORCL
_ORACLE_RE = re.compile(
    r"(?:(?<![\w-])(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)(?:[ \t]+-[A-Za-z]{1,16}){0,4}[ \t]+"
    r"(?:target[ \t]+)?|jdbc:oracle:\w{1,16}:)"
    r"[A-Za-z0-9_$#]{1,128}/(?P<pw>[^@\s/\"']{1,256})@"
)
_ORACLE_WORDS = (b"sqlplus", b"oracle", b"dp ", b"rman", b"sqlldr", b"dgmgrl")
# a .pgpass line, host:port:database:user:password: alone on its line, or anywhere once the
# file is named; the host names a host, the database and user are names, the password has no
# colon (MAC and IPv6 addresses, file:line:function: lines and times are no .pgpass line)
_PGPASS_LINE = (
    r"[A-Za-z0-9_.\-]{0,252}[A-Za-z*][A-Za-z0-9_.\-]{0,252}:(?:[1-9][0-9]{1,4}|\*)"
    r":(?=[^:\s]*[A-Za-z*])[^:\s\"']{1,128}:(?=[^:\s]*[A-Za-z*])[^:\s\"']{1,128}"
    r":(?P<pw>[^:\s<\"']{4,256})"
)
_PGPASS_RE = re.compile(r"^[ \t]*" + _PGPASS_LINE + r"[ \t]*\r?$", re.MULTILINE)
_PGPASS_HINT_RE = re.compile(rb":(?:[0-9]{1,5}|\*):[^:\s\"',{}]{1,128}:[^:\s\"',{}]{1,128}:")
_PGPASS_NAMED_RE = re.compile(r"(?<![^\s>\"'])" + _PGPASS_LINE)


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_PATH_LIKE_RE = re.compile(r"[\w.\-]+(?:/[\w.\-]*)+")


# the HTTP clients whose -u / --user takes "user:password" in its rarer spellings
_CURL_LINE_RE = re.compile(r"(?<![\w-])(?:curl|wget|http|https|xh|curlie)\b")


def _curl_user(m: re.Match[str], line: str, spans: list[Span]) -> None:
    """The password of ``curl -u user:pass`` (or the key given as the user, ``-u "KEY:"``);
    `line`: what precedes the flag on its line (the quoted and user-less spellings are
    read only after an HTTP client's name)."""
    group = "qpw" if m.group("qpw") is not None else "pw"
    pw, user = m.group(group), m.group("user")
    if not pw:
        # (a key of 12+ random characters; "jenkins2:", "admin123:" name a user)
        if m.group(1) and randomish(user, 12) and has_digit_or_symbol(user):
            spans.append(Span(m.start("user"), m.end("user"), P_NAMED, "password"))
        return
    if (group == "qpw" or not user) and not _CURL_LINE_RE.search(line):
        return  # su -u app:'sh', htpasswd -u admin:'$apr1$', docker -u :1000: not curl's
    if group == "qpw" and (pw.startswith(("/", "~", "-", ".")) or _PATH_LIKE_RE.fullmatch(pw)):
        return  # rsync -u host:'/srv/site/', git diff -u HEAD~1:'src/app.py': a path
    if (
        not is_placeholder(pw)
        and not (pw.isdigit() and (user.isdigit() or not user))  # -u 1000:1000, -u :1000
        and not pw.startswith("//")  # -u http://app-id: a URL, no password
        # -u <user:password>, -u USER[:PASSWORD]: a usage line's template
        and not (user.startswith("<") and pw.endswith(">") and is_placeholder(pw[:-1]))
        and not (user.endswith("[") and pw.endswith("]"))
        and not user.startswith("s/")  # sed -u 's/:debug/:info/': an expression
    ):
        spans.append(Span(m.start(group), m.end(group), P_NAMED, "password"))


def _places(b: bytes, word: bytes, step: int = 0) -> Iterator[int]:
    """Every place of `word` in `b`, left to right; the next search starts `step` past a hit
    (default: the word's length)."""
    i = b.find(word)
    while i >= 0:
        yield i
        i = b.find(word, i + (step or len(word)))


def _literal(
    m: re.Match[str], group: int | str, spans: list[Span], label: str = "password"
) -> None:
    """The secret a match's `group` holds (a password unless `label` says), unless it is a
    placeholder."""
    if not is_placeholder(m.group(group)):
        spans.append(Span(m.start(group), m.end(group), P_NAMED, label))


def scan_flags(text: str, b: bytes, spans: list[Span]) -> None:
    """``curl -u user:pass``, ``mysql -pSECRET``, ``sshpass -p SECRET``, ``docker login -p X``."""
    for i in _places(b, b"-u"):
        if b[i - 1 : i] in (b" ", b"\t", b"-"):
            m = _CURL_USER_RE.match(text, i + 1)
            if m is not None:
                _curl_user(m, text[_line_start(text, i) : i], spans)
    for i in _places(b, b" -p"):
        _p_flag(text, len(text), i, spans)
    if _FLAG_AP_RE.search(b) is not None or b"passw" in b or _may_name_oracle(b):
        _rare_commands(text, b, spans)
    if _PGPASS_HINT_RE.search(b) is not None:
        # once the file is named, an entry anywhere; else one alone on its line
        named = b"pgpass" in b or b"PGPASSFILE" in b
        found = _PGPASS_NAMED_RE.finditer(text) if named else _PGPASS_RE.finditer(text)
        for m in found:
            pw = m.group("pw")
            if not pw.isdigit() and not is_placeholder(pw) and (named or has_digit_or_symbol(pw)):
                spans.append(Span(m.start("pw"), m.end("pw"), P_NAMED, "password"))
    i = b.find(b"gh secret set")
    while i >= 0:
        # (a command read to its end is not read again from a later hit inside it)
        i = b.find(b"gh secret set", _gh_body(text, i + 13, spans))
    if b"|" in b:
        for word in _STORE_WORDS:
            for i in _places(b, word):
                _echoed_into_store(text, i, spans)
    # the words of commands and statements any case may spell ("IDENTIFIED BY", "Net Use")
    low = b.lower()
    for i in _places(low, b"htpasswd"):
        if text[i - 1 : i] not in _WORD_CHARS:  # (not a longer name's end)
            _htpasswd(text, i + 8, spans)
    for i in _places(low, b"identified"):
        _identified_by(text, i, spans)
    if b"%" in b:
        for flag in (b"-U", b"--user"):
            for i in _places(b, flag, 2):
                _samba_user(text, i, spans)
    for i in _places(low, b"net use"):
        if i == 0 or text[i - 1] not in _WORD_CHARS:
            # (net user's arguments are others: the account's name, then its password)
            if text[i + 7 : i + 8] in ("r", "R"):
                _net_user(text, i + 8, spans)
            else:
                _net_use(text, i + 7, spans)
    for i in _places(low, b"set password"):
        _set_password(text, i, spans)
    for i in _places(low, b"poetry"):
        _poetry_config(text, i + 6, spans)
    if b"zip" in b:
        for z in _ZIP_CLUSTER_RE.finditer(b):
            _flag_value(text, z.end() - 1, _ZIP_CMD_RE, spans)
    for i in _places(low, _SECURE_STRING_WORD):
        if i >= 1:
            _secure_string(text, i - 1, spans)
    for i in _places(b, b" -w ") if b"ldap" in b else ():
        line = text[_line_start(text, i) : i]
        m = NEXT_WORD_RE.match(text, i + 3)
        if _LDAP_CMD_RE.search(line) and m is not None:
            _literal(m, 1, spans)


def _gh_body(text: str, i: int, spans: list[Span]) -> int:
    """The value of ``gh secret set NAME --body VALUE`` (or ``-b``) in the command at `i`;
    returns where the reading stopped."""
    m = _GH_BODY_RE.match(text, i)
    if m is None:
        read = _GH_COMMAND_RE.match(text, i)
        return read.end() if read is not None else i
    group = "bare" if m.group("qv") is None else "qv"
    value = m.group(group)
    if not is_placeholder(value) and value[0] != "-":  # "$TOKEN", "$(cat key)"; no flag
        spans.append(Span(m.start(group), m.end(group), P_NAMED, "env_secret"))
    return m.end()


def _echoed_into_store(text: str, i: int, spans: list[Span]) -> None:
    """The value echoed into a secret store at `i` (``echo X | wrangler secret put NAME``):
    the store's command follows a pipe, the echo is the command before it."""
    lo = _line_start(text, i)
    pipe = text.rfind("|", lo, i)
    if pipe < 0:
        return
    store = _STDIN_STORE_RE.match(text, pipe + 1)
    if store is None or store.end() <= i:
        return  # echo hello | grep secret: no store
    # (the echo is read only in its own command: the one before the pipe)
    start = max(text.rfind("|", lo, pipe), text.rfind(";", lo, pipe), text.rfind("&", lo, pipe))
    e = _ECHOED_RE.search(text, max(lo, start + 1), pipe + 1)
    if e is not None:
        _literal(e, "pw", spans, "env_secret")


def _password_arg(arg: re.Match[str], spans: list[Span]) -> None:
    """An argument (`_ARG_RE`) taken as a password: a quoted one always, a bare word only with a
    digit or a symbol (a bare word of letters is as likely the prose after the command)."""
    group = "q" if arg.group("q") is not None else "w"
    value = arg.group(group)
    if not is_placeholder(value) and (group == "q" or has_digit_or_symbol(value)):
        spans.append(Span(arg.start(group), arg.end(group), P_NAMED, "password"))


def _htpasswd(text: str, i: int, spans: list[Span]) -> None:
    """The password of ``htpasswd -b [-c] FILE USER PASSWORD`` (``-nb USER PASSWORD``) whose
    options start at `i`; without -b htpasswd asks for it, and -D deletes a user."""
    opts = _HTPASSWD_OPTS_RE.match(text, i)
    if opts is None or "b" not in opts.group():
        return
    args: list[re.Match[str]] = []
    while len(args) < (2 if "n" in opts.group() else 3):
        arg = _ARG_RE.match(text, args[-1].end() if args else opts.end())
        if arg is None:
            return
        args.append(arg)
    _password_arg(args[-1], spans)  # ("htpasswd -b takes the ...": prose about the flag)


def sql_account_before(text: str, i: int) -> bool:
    """Whether a statement creating or altering a database account comes before `i` (within
    300 characters, no ``;`` between): its ``PASSWORD '...'`` is the account's password."""
    return _SQL_ACCOUNT_RE.search(text, max(0, i - 300), i) is not None


def _identified_by(text: str, i: int, spans: list[Span]) -> None:
    """The password of ``CREATE USER ... IDENTIFIED BY '...'`` at `i` (MySQL, Oracle)."""
    m = _IDENTIFIED_BY_RE.match(text, i)
    if m is None or not sql_account_before(text, i):
        return  # "the key identified by 'deploy-2024'": no account's statement
    group = "q" if m.group("q") is not None else "w"
    value = m.group(group)
    if not is_placeholder(value) and value[0] not in ":?":  # (:pw, ?: a bind parameter)
        spans.append(Span(m.start(group), m.end(group), P_NAMED, "password"))


def _samba_user(text: str, i: int, spans: list[Span]) -> None:
    """The password of Samba's ``-U user%password`` at `i`."""
    if text[i - 1 : i] not in (" ", "\t"):
        return
    m = _SAMBA_USER_RE.match(text, i)
    if (
        m is not None
        and not is_placeholder(m.group("pw"))
        and _SAMBA_CMD_RE.search(text, _segment_start(text, i), i) is not None
    ):
        spans.append(Span(m.start("pw"), m.end("pw"), P_NAMED, "password"))


def _net_use(text: str, i: int, spans: list[Span]) -> None:
    """The password of Windows' ``net use [drive] \\\\host\\share [password] [/user:name]``
    whose arguments start at `i`: the one word after the share that is no switch (``*`` asks
    for it)."""
    pos, share = i, False
    for _ in range(8):
        arg = _ARG_RE.match(text, pos)
        if arg is None:
            return
        pos = arg.end()
        group = "q" if arg.group("q") is not None else "w"
        word = arg.group(group)
        if word.startswith(("\\\\", "//")):
            share = True
        elif share and word[0] != "/":
            _password_arg(arg, spans)
            return


def _net_user(text: str, i: int, spans: list[Span]) -> None:
    """The password of Windows' ``net user NAME PASSWORD [/add]`` whose arguments start at `i`:
    the word after the account's name, no switch (``*`` asks for it)."""
    name = _ARG_RE.match(text, i)
    if name is None or name.group(0).lstrip()[0] == "/":
        return  # net user /domain: the accounts listed
    pw = _ARG_RE.match(text, name.end())
    if pw is not None and (pw.group("q") or pw.group("w"))[0] != "/":  # (no switch)
        _password_arg(pw, spans)


def _set_password(text: str, i: int, spans: list[Span]) -> None:
    """The literal of MySQL's ``SET PASSWORD [FOR user] = '...'`` at `i`."""
    m = _SET_PASSWORD_RE.match(text, i)
    if m is not None:
        _literal(m, "v", spans)


def _poetry_config(text: str, i: int, spans: list[Span]) -> None:
    """The password of ``poetry config http-basic.REPO USER PASSWORD`` (the token of
    ``pypi-token.REPO TOKEN``) whose arguments start at `i`."""
    if text[i - 7 : i - 6] not in ("", " ", "\t", "\n", ";", "&", "|", "(", "`", "'", '"'):
        return  # (a longer name's end)
    m = _POETRY_CONFIG_RE.match(text, i)
    if m is None:
        return
    arg = _ARG_RE.match(text, m.end())
    if arg is not None and m.group("basic"):
        arg = _ARG_RE.match(text, arg.end())  # (the user first)
    if arg is None:
        return
    group = "q" if arg.group("q") is not None else "w"
    value = arg.group(group)
    if value[0] != "-" and not is_placeholder(value):
        label = "password" if m.group("basic") else "env_secret"
        spans.append(Span(arg.start(group), arg.end(group), P_NAMED, label))


def _secure_string(text: str, i: int, spans: list[Span]) -> None:
    """The literal PowerShell's ``ConvertTo-SecureString`` at `i` is given, after it or piped
    into it (a variable, ``$env:DB_PASSWORD``, is no literal)."""
    m = _SECURE_STRING_RE.match(text, i)
    if m is None:
        m = _PIPED_LITERAL_RE.search(text, _line_start(text, i), i)
    if m is not None:
        _literal(m, "v", spans)


def _rare_commands(text: str, b: bytes, spans: list[Span]) -> None:
    """``redis-cli -a``, ``sqlcmd -P``, ``zip -P``, ``openssl -k``, a password echoed into
    ``--password-stdin`` or ``chpasswd``, Oracle's ``user/password@db`` (the text holds one of
    their words)."""
    for flag, cmd_re in _OTHER_FLAGS:
        for i in _places(b, flag, 3):
            _flag_value(text, i + 3, cmd_re, spans)
    for i in _places(b, b"--password-stdin"):
        e = _ECHOED_RE.search(text, _line_start(text, i), i)
        if e is not None:
            _literal(e, "pw", spans)
    if b"chpasswd" in b:
        for m in _CHPASSWD_RE.finditer(text):
            _literal(m, "pw", spans)
    if _may_name_oracle(b):
        for m in _ORACLE_RE.finditer(text):
            _literal(m, "pw", spans)


def _flag_value(text: str, i: int, cmd_re: re.Pattern[str], spans: list[Span]) -> None:
    """The password given after a flag ending at `i` (its blank), when `cmd_re`'s command is
    the one the flag is in."""
    m = _FLAG_VALUE_RE.match(text, i)
    if (
        m is not None
        and _password_like(m.group("v"))
        and cmd_re.search(text, max(0, i - 303), i) is not None  # (the cheap test first)
        and cmd_re.search(text, _segment_start(text, i - 3), i - 3) is not None
    ):
        spans.append(Span(m.start("v"), m.end("v"), P_NAMED, "password"))


def _may_name_oracle(b: bytes) -> bool:
    """Whether the text could hold Oracle's user/password@database (a tool's word, / and @)."""
    return b"@" in b and b"/" in b and any(w in b for w in _ORACLE_WORDS)


def _line_start(text: str, i: int) -> int:
    """Where the line holding position `i` starts, looking back at most 300 characters."""
    lo = max(0, i - 300)
    return max(text.rfind("\n", lo, i) + 1, lo)


def _segment_start(text: str, i: int) -> int:
    """Where the command segment holding position `i` starts: after the last newline, pipe, ;, &,
    backquote, quote, $, ( or > (a tag around an error) within 300 characters, its blanks
    skipped."""
    lo = max(0, i - 300)
    start = lo
    for m in _SEGMENT_END_RE.finditer(text, lo, i):
        start = m.end()
    while start < i and text[start] in " \t":
        start += 1
    return start


def _password_like(v: str) -> bool:
    """A flag's value that can be a password: no placeholder, no path, a digit or symbol in it
    ("-a flag" in a sentence is a word)."""
    return not is_placeholder(v) and v[:1] not in "/~." and has_digit_or_symbol(v)


def _p_flag(text: str, n: int, i: int, spans: list[Span]) -> None:
    """``-p`` is a password only after mysql-like commands or archivers (attached) or
    sshpass/login (spaced)."""
    cmd = _P_FLAG_CMD_RE.search(text, _line_start(text, i), i)
    if cmd is None:
        return
    j = i + 3
    if cmd.group("spaced"):
        while j < n and text[j] in " \t":
            j += 1
    if cmd.group("archive") and _COMMAND_END_RE.search(text, cmd.end(), i) is not None:
        return  # 7z x a.7z && tar -pxf b.tar: the flag of another command
    k = j
    while k < n and not text[k].isspace():
        k += 1
    value = text[j:k].strip("\"'")
    if cmd.group("spaced") and value[:1] in ("/", "~", "."):
        return  # az login -p /etc/ci/cert.pem: a certificate's path
    if k > j and text[j] not in " \t" and not is_placeholder(value):
        spans.append(Span(j, k, P_NAMED, "password"))
