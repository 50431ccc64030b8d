"""Rule 4: the value after a secret-named assignment, declaration, mapping entry, header, XML element
or flag."""

from __future__ import annotations

import re
import string

from reos_memory.squirrel.redaction.findings import P_NAMED, Span
from reos_memory.squirrel.redaction.flags import sql_account_before
from reos_memory.squirrel.redaction.in_prose import prose_at
from reos_memory.squirrel.redaction.names import (
    TIER_PASSWORD,
    TIER_WEAK,
    NameInfo,
    name_info,
    names_secret,
)
from reos_memory.squirrel.redaction.randomness import SPACE_RE, randomish, randomness
from reos_memory.squirrel.redaction.values import (
    DOTTED_RE,
    IDENT_RE,
    NEXT_WORD_RE,
    PUBLIC_BY_DESIGN,
    WORDY_RE,
    fits_tier,
    has_digit_or_symbol,
    is_placeholder,
    token_literal,
)

_TRIGGER_WORDS = (b"pwd", b"token", b"key", b"auth")
_TRIGGER_RES = (
    re.compile(rb"ss(?<=pass|sess)"),
    re.compile(rb"cr(?:(?<=secr)et|ed)"),
    re.compile(rb"bundle_[a-z0-9]+__"),  # Bundler's credentials for a host: BUNDLE_GEMS__CORP__IO
    # a personal access token's name: AZURE_DEVOPS_PAT, GITHUB_PAT (not path, pattern)
    re.compile(rb"pat(?<=[_\-]pat)(?![a-z0-9])"),
)
_CAMEL_PAT_RE = re.compile(rb"Pat(?<=[a-z0-9]Pat)(?![a-z0-9])")  # azureDevopsPat (read in case)
_NAME_TABLE = bytes(
    ord("a") if chr(i) in string.ascii_letters + string.digits + "_.-" else ord(" ")
    for i in range(256)
)

# Matched right after a secret-looking name (the scanner already knows where the name ends).
_KV_TAIL_RE = re.compile(
    r"""
    (?P<nq>\\?["'])?+(?:\]|(?<=\w)\})?
    (?:
        (?P<sp1>[ \t]*)(?P<sep>:=|=>|\+=(?![=~>])|=(?![=~>])|:(?![:/]|\\(?!"))|(?<=["']),|,(?=[^\s,])|\((?=[ \t]*[bBrRuUfF]{0,2}["'`])
                         |(?<=[ \t])-(?=[ \t]+(?P<dq>["'])[^\s"'`]+(?P=dq)))
        (?P<sp2>[ \t]*)
        # YAML's anchor and core tag: password: &pw value, password: !!str value (a local tag,
        # Home Assistant's !secret name, names where the value is)
        (?:(?<=:[ \t])(?:(?:&[^\s,\[\]{}]{1,128}|!![a-z]{1,16})[ \t]+){1,2})?
      | (?P<xml>>(?:[ \t]*\r?\n[ \t]*)?)
      | (?P<ws>[ \t]+)
    )
    (?:
        [|>][-+]?[ \t]*\r?\n[ \t]+(?P<bv>\S{1,4096})(?=[ \t]*(?:\r?\n|\Z))  # YAML's block: a word
      | [bBrRuUfF]{0,2}\\"(?P<eqv>(?:(?!\\")[^\n]){0,4096})(?:\\")?
      | (?:[bBrRuUfF]{1,2}|@)?(?P<q>["'`])(?P<qv>(?:\\.|(?!(?P=q))[^\\\n]){0,4096})(?P=q)?
      | (?P<bare>[^\s"'`;&<>()\[\]{}|]{1,4096})
    )?
    """,
    re.VERBOSE,
)
AUTH_SCHEME_RE = re.compile(
    r"(?i)(?P<scheme>bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|key|jwt|oauth"
    r"|ssws|splunk|api-token|apitoken|sso-key|[A-Za-z][A-Za-z0-9_-]{1,24})[ \t]+[\"'\u201c\u2018]?"
    r"(?P<cred>[^\s\"'`,;\u201d\u2019]+)"
)
# <add key="Password" value="..."/>, <param name="apiToken" value="..."/>
_XML_VALUE_RE = re.compile(r"""["'][ \t]+value[ \t]*=[ \t]*(["'])(?P<v>[^"'\n]{1,4096})\1""")
# - name: API_KEY / value: ... (a Kubernetes container's env, a CI step's inputs)
# (its lines may have been joined by blanks: whitespace collapsed, an error line)
# (also as JSON, {"name": "API_KEY", "value": "..."}, and in flow style, {name: X, value: ...})
_NAME_KEY_RE = re.compile(r"""(?:^|[\s{,])(?:-[ \t]+)?["']?[Nn]ame["']?[ \t]*:[ \t]*["']?\Z""")
_PAIR_VALUE_RE = re.compile(
    r"""["']?(?:[ \t]*\r?\n[ \t]*|[ \t]+|[ \t]*,[ \t]*)(?:-[ \t]+)?["']?[Vv]alue["']?[ \t]*:"""
    r"""[ \t]*"""
    r"""(?:(["'])(?P<qv>[^"'\n]{1,4096})\1|(?P<bare>[^\s"'#,}]{1,4096}))"""
)
# a string type's constructor around a literal: Rust's String::from("..."), Python's str("...")
_WRAPPERS = (
    r"(?:String::from|SecretString::from|SecretString::new|Secret::new|String|str|SecretStr"
    r"|SecretString|Secret)"
)
_QUOTED_LITERAL = (
    r"""[ \t]*(?:""" + _WRAPPERS + r"""\()?"""
    r"""(?:[bBrRuUfF]{1,2}|@)?(?P<q>["'`])(?P<qv>(?:(?!(?P=q))[^\\\n]){1,4096})(?P=q)"""
)
# the operator and the literal after a name: a type between (Go's `apiToken string =`, VB's `As
# String =`, the annotation of TypeScript, Rust, Kotlin or Python), C's `[] =`, R's `<-`, Ruby's
# `||=`; make's `?=`, `::=` and `:::=`, its value quoted or bare (a literal may be Objective-C's
# or C#'s @"...")
_DECLARED_RE = re.compile(
    r"""(?:["']?\]|(?<=\w)\})?(?:
          \??[ \t]*::?[ \t]*[&*\[\]]{0,4}(?:'\w+[ \t]+)?[A-Za-z_][\w.<>\[\];, ?|]{0,60}?[ \t]+=(?![=~>])
        | [ \t]*\{[ \t]*get;[^}\n]{0,24}\}[ \t]*=(?![=~>])
        | [ \t]+(?:[Aa]s[ \t]+)?\*?[A-Za-z_][\w.*\[\]]{0,40}[ \t]*=(?![=~>])
        | [ \t]*\[[0-9]*\][ \t]*=(?![=~>])
        | [ \t]*(?:<<?-|\|\|=|(?:\?|:::?)=)
    )"""
    + _QUOTED_LITERAL
    + r"""|[ \t]*(?:\?|:::?)=[ \t]*(?P<bare>[^\s"'`]{1,4096})""",
    re.VERBOSE,
)
# fish's `set -x NAME value` (-gx, -Ux) and csh's `setenv NAME value`: the value after a blank
# (and Windows' `setx NAME value`, a tool's settings: `aws configure set [--profile p] NAME value`,
# `kubectl config set NAME value`, a package manager's `npm config set //host/:_authToken value`)
_SET_ENV_RE = re.compile(
    r"(?:^|[\s;&|(])(?:set(?:[ \t]+-[a-zA-Z]+)+[ \t]+|setenv[ \t]+|setx[ \t]+"
    r"|[\w.\-]{1,40}[ \t]+config(?:ure)?[ \t]+set[ \t]+"
    r"(?:--[\w\-]{1,30}[ \t]+[^\s-]\S{0,60}[ \t]+){0,3}(?://[^\s:]+:)?)\Z"
)
_DECLARED_OPENERS = frozenset(" \t:<|[?{]}\"'")
# "twilio auth token - '...'": a name in words, a dash between blanks, the value quoted
_DASH_QUOTE_RE = re.compile(r"-[ \t]+[\"']")
_WORD_RE = re.compile(r"(?<!\S)[A-Za-z][a-z]+[,.:;!?]?(?!\S)")
_PLAIN_ASSIGN_RE = re.compile(r"[ \t]*[:.]?=(?![=~>])" + _QUOTED_LITERAL)
# a plain = with a string type's constructor around the literal: let password = String::from("...")
_WRAPPED_RE = re.compile(r"[ \t]*:?=[ \t]*" + _WRAPPERS + r"\([ \t]*[bBrRuUfF]{0,2}[\"'`]")
_LISP_VALUE_RE = re.compile(r"(?:[ \t]+|[ \t]*\r?\n[ \t]*)@?(?P<q>\")(?P<qv>[^\"\\\n]{1,4096})\"")
_LISP_DEF_RE = re.compile(
    r"(?:\((?:def|defonce|defvar|defparameter|defconst|setq|setf|define)(?:[ \t]+\^[\w:.-]+)*"
    r"|#[ \t]*define)[ \t]+\Z"
)
_AUTH_TUPLE_RE = re.compile(r"""\(\s*(["'])[^"'\n]*\1\s*,\s*(["'])(?P<pw>[^"'\n]*)\2\s*\)""")
_LINE_START_RE = re.compile(r"[ \t]*(?:(?:export|set|setenv|ENV|-|\+|declare -x)[ \t]+)?[\"']?")
_CAMEL_IDENT_RE = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+")
_ANNOTATED_RE = re.compile(r"[ \t]*(?:\[[^\]\n]*\])?[ \t]*(?:\|[ \t]*\w+[ \t]*)*=(?!=)")
# values that name or date something rather than hold a secret, given beside a secret's name
_NOT_A_LITERAL_SECRET_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}|[a-z][a-z0-9+.\-]*://|arn:|[\w.\-]+/[\w.\-]+/"
)
_TYPE_NAME_RE = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]*)*")
_FILE_NAME_RE = re.compile(r"[\w.\-/]+\.[A-Za-z0-9]{1,5}")
_PATH_RE = re.compile(
    r"(?:~|\.{1,2})?/[\w.\-/@]+|[A-Za-z]:[\\/][\w.\-\\/ ]+|(?:[\w.\-]+/)+[\w\-]+\.[A-Za-z0-9]{1,5}"
)
_TYPE_CALL_CHARS = frozenset("([")
# the arguments or subscripts that follow a name in code, closed before a blank or the line's
# end: ("X"), ["KEY"], ().get("a"); not the rest of x[[]]{}()x1, a password
_CALL_RE = re.compile(
    r"(?:\([^()\n]*\)|\[[^\[\]\n]*\])(?:\.?[\w.]*(?:\([^()\n]*\)|\[[^\[\]\n]*\]))*(?![^\s,;)\]}])"
)


def scan_named(text: str, b: bytes, spans: list[Span]) -> bool:
    """Secret-named assignments, headers, flags and phrases, found from their secret word.

    Returns whether "key" occurs at all (the PEM rule needs it)."""
    low = b.lower()
    saw_key = b"key" in low
    hits: list[int] = []
    for word in _TRIGGER_WORDS:
        i = low.find(word)
        while i >= 0:
            hits.append(i)
            i = low.find(word, i + len(word))
    # Words sharing a rarer pair of letters go through one literal-prefix regex each, which the
    # regex engine scans about as fast as bytes.find.
    for regex in _TRIGGER_RES:
        hits.extend(m.start() for m in regex.finditer(low))
    hits.extend(m.start() for m in _CAMEL_PAT_RE.finditer(b))
    if not hits:
        return saw_key
    hits.sort()
    name_map = b.translate(_NAME_TABLE) + b" "
    # Each hit's work is bounded (names of 80 characters, values of 4,096), and a hit inside what
    # an earlier one read (its name or its value) is not read again, so the pass is linear in
    # the text: "token:token:token:..." reads its first value and skips the rest.
    reach = [0]
    budget = max(_HIT_BUDGET, len(text) // 100)
    for i in hits:
        if i < reach[0]:
            continue
        budget -= 1
        if budget < 0:
            # a crafted or generated blob: the rest is one finding, not judged word by word
            spans.append(Span(i, len(text), P_NAMED, "dense_secret_words"))
            break
        _named_hit(text, name_map, i, spans, reach)
    return saw_key


# Natural text holds a secret word every few hundred characters; past this many in one text (at
# least 4,000, one per 100 characters) it is a crafted or generated blob, and the rest of it is
# redacted as one finding rather than judged word by word in time that adds up to minutes.
_HIT_BUDGET = 4000
# what follows a bare key that gives it a value (key=, Key: , "key": ) - the name is a word
# of prose and code far more often
_BARE_KEY_SEP_RE = re.compile(r"""["']?[ \t]*[:=]""")


def _named_hit(text: str, name_map: bytes, i: int, spans: list[Span], reach: list[int]) -> None:
    """Read the name around the secret word at `i` and what follows it."""
    start = name_map.rfind(b" ", max(0, i - 81), i) + 1
    end = name_map.find(b" ", i, i + 81)
    if (start == 0 and i > 81) or end < 0 or end - start > 80:
        # no variable is named like that: a blob that happens to contain "key"
        reach[0] = name_map.find(b" ", i)
        return
    reach[0] = end
    name = text[start:end]
    bare_key = name.lower() == "key"
    info = name_info(name)
    if bare_key and not _BARE_KEY_SEP_RE.match(text, end):
        info = None  # a bare "key" in words or code (the common case, read no further)
    if (
        info is not None
        and info.quoted_only
        and text[start - 1 : start] not in ('"', "'", "<")  # (or an element's name)
        and text[start : start + 1] != "-"
        and text[end : end + 1] != ":"  # a YAML key, or "key: value" said in a line
        and not (text[end : end + 1] == "," and _opens_line(text, start))  # a CSV row
        and not _table_cell(text, start, end)
        and not _set_by_shell(text, start)  # aws configure set <name> ...: a setting's key
    ):
        # a variable in code, not a config file's key or a flag: its value is a secret only
        # when it is a string literal shaped like a token (etsy_key = "0f3a..."), not an id
        # with a type's prefix or a hash with its algorithm (image_key = "sha256:...")
        if not _declared_at(text, start, end, info, spans, reach, token_only=True):
            info = None
        else:
            return
    found = len(spans)
    if (info is None or not _named_at(text, start, end, info, spans, reach)) and text[
        end : end + 1
    ].isspace():
        prose_at(text, start, end, spans)
    if len(spans) == found and (bare_key or _QUOTED_VALUE_RE.match(text, end)):
        # a value that is no secret may hold one under a name of its own: a bare key's
        # (<add key="Password" value="..."/>), a string given to a token's name
        # (token = 'Server=...;Password=...;'; a bare value ends at the first ";" anyway)
        reach[0] = end


_QUOTED_VALUE_RE = re.compile(r"""["']?[ \t]*(?::=|[:=])[ \t]*["']""")


def _opens_line(text: str, start: int) -> bool:
    """Whether the name at `start` is the first character of its line."""
    return text[max(0, start - 1) : start] in ("", "\n")


def _line_prefix(text: str, start: int) -> str:
    """What precedes `start` on its line (at most 200 characters: minified lines are long)."""
    lo = max(0, start - 200)
    return text[max(text.rfind("\n", lo, start) + 1, lo) : start]


def _named_at(
    text: str, start: int, end: int, info: NameInfo, spans: list[Span], reach: list[int]
) -> bool:
    """Handle ``name <sep> value`` for the name at [start, end); True when it was an assignment.

    `reach` is moved past the value read, so that no later hit reads it again."""
    before = text[max(0, start - 2) : start]
    if before.endswith("$") and before != "${":
        # "$API_TOKEN" is a reference; PHP's and Perl's $apiToken = "..." assigns a literal
        # ($password = $request->input(...) assigns none)
        return _declared_at(text, start, end, info, spans, reach, plain=True)
    if before.endswith("%") or before == "${":
        return False
    if (
        _xml_value_at(text, start, end, info, spans, reach)
        or _pair_value_at(text, start, end, info, spans, reach)
        or _table_value_at(text, start, end, info, spans, reach)
        or _declared_at(text, start, end, info, spans, reach)
    ):
        return True
    if _words_follow(text, start, end) and not _set_by_shell(text, start):
        return False  # "secret token key": words, not an assignment (the fast way out)
    m = _KV_TAIL_RE.match(text, end)
    if m is None:
        return False
    reach[0] = max(reach[0], m.end())
    name = text[start:end]
    if not _separates_value(text, start, name, before, m):
        return False
    group = m.lastgroup  # the value groups close last, so this names the one that matched
    if group not in ("eqv", "qv", "bare", "bv"):
        if _env_line(text, m, name, _line_prefix(text, start), _starts_line(text, start)):
            # DB_PASSWORD=[[]]{}()x1: a .env value may open with a bracket
            vs = ve = m.end()
            group = "bare"
        else:
            _auth_tuple_at(text, m, info, spans)
            return True
    else:
        vs, ve = m.span(group)
    quoted = group != "bare"
    while not quoted and ve > vs and text[ve - 1] == ",":
        ve -= 1  # "token=abc, next" - the comma ends the value
    if group == "qv" and text[ve : ve + 1] != m.group("q") and ve < len(text):
        # No closing quote before the line ends: the "opening" quote closed a string literal, as
        # in ask("Password: "), unless the event was cut off right here.
        return True
    kind = info.kind
    if info.header:
        a = AUTH_SCHEME_RE.match(text, vs, ve if quoted else len(text))
        if a is not None:
            vs, ve = a.span("cred")
            kind = "basic_auth" if a.group("scheme").lower() == "basic" else "bearer"
            quoted = True  # a scheme makes the rest a literal credential
    accepted_end = _judge_value(text, m, start, name, info, vs, ve, quoted)
    if accepted_end is not None:
        spans.append(Span(vs, accepted_end, P_NAMED, kind))
        reach[0] = max(reach[0], accepted_end)
    return True


def _xml_value_at(
    text: str, start: int, end: int, info: NameInfo, spans: list[Span], reach: list[int]
) -> bool:
    """``<add key="Password" value="..."/>``: the value attribute after a secret-named key."""
    if not (
        text[end : end + 1] in ("'", '"')
        and text[max(0, start - 6) : start - 1].lower().endswith(("key=", "name="))
    ):
        return False
    x = _XML_VALUE_RE.match(text, end)
    if x is None or not _literal_fits(info, x.group("v")):
        return False
    spans.append(Span(x.start("v"), x.end("v"), P_NAMED, info.kind))
    reach[0] = max(reach[0], x.end())
    return True


def _pair_value_at(
    text: str, start: int, end: int, info: NameInfo, spans: list[Span], reach: list[int]
) -> bool:
    """``- name: API_KEY`` and ``value: ...`` on the next line (Kubernetes and CI env lists), or
    beside it (JSON, flow style, or its lines joined)."""
    if (
        text[end : end + 1] not in ("\n", "\r", " ", "'", '"', ",")
        or "name" not in text[max(0, start - 14) : start].lower()
        or not _NAME_KEY_RE.search(_line_prefix(text, start))
    ):
        return False
    x = _PAIR_VALUE_RE.match(text, end)
    if x is None:
        return False
    group = "qv" if x.group("qv") is not None else "bare"
    if not _literal_fits(info, x.group(group)):
        return False
    spans.append(Span(x.start(group), x.end(group), P_NAMED, info.kind))
    reach[0] = max(reach[0], x.end())
    return True


# a row of a Markdown or a pasted variables table: the name's cell opens the line, the value's
# cell is next ("| DB_PASSWORD | hunter2Xy9 |", "apiKey |e9e0f062...")
_TABLE_NAME_CELL_RE = re.compile(r"[ \t]*(?:\|[ \t]*)?`?\Z")
_TABLE_VALUE_RE = re.compile(r"`?[ \t]*\|[ \t]*`?(?P<v>[^\s|`]{1,4096})`?[ \t]*(?:\||\r?\n|\Z)")


def _table_cell(text: str, start: int, end: int) -> bool:
    """Whether the name at [start, end) fills the first cell of a table's row."""
    return text[end : end + 3].lstrip("` \t")[:1] == "|" and (
        _TABLE_NAME_CELL_RE.fullmatch(_line_prefix(text, start)) is not None
    )


def _table_value_at(
    text: str, start: int, end: int, info: NameInfo, spans: list[Span], reach: list[int]
) -> bool:
    """The value in the cell after a secret-named cell of a table's row."""
    if not _table_cell(text, start, end):
        return False
    x = _TABLE_VALUE_RE.match(text, end)
    if x is None:
        return False
    value = x.group("v")
    if _not_a_secret_literal(info, value) or not _literal_fits(info, value):
        return False
    spans.append(Span(x.start("v"), x.end("v"), P_NAMED, info.kind))
    reach[0] = max(reach[0], x.end("v"))
    return True


def _declared_at(
    text: str,
    start: int,
    end: int,
    info: NameInfo,
    spans: list[Span],
    reach: list[int],
    *,
    token_only: bool = False,
    plain: bool = False,
) -> bool:
    """A string literal given to the name by a declaration or an assignment operator that the
    ``name <sep> value`` reading does not know: a type between (``var apiToken string = "..."``,
    ``const apiToken: string = "..."``, ``let api_token: &str = "..."``), ``<-`` (R), ``||=``
    (Ruby), ``?=`` (make), ``{ get; set; } =`` (C#), ``(def api-token "...")``, ``:api-token
    "..."`` and ``@api_token "..."`` (Lisps, EDN, Elixir), ``#define API_TOKEN "..."`` (C).
    With `plain` (or `token_only`: and the literal must be shaped like a token), also a plain
    ``=`` or ``:=``."""
    ahead = text[end : end + 72]
    if ahead[:1] not in _DECLARED_OPENERS or ("=" not in ahead and "<-" not in ahead):
        x = None  # (name=value, the common case, is read by _KV_TAIL_RE; a sentence has none)
    else:
        x = _DECLARED_RE.match(text, end)
    if x is None and (text[start - 1 : start] in (":", "@") or _after_definer(text, start)):
        x = _LISP_VALUE_RE.match(text, end)
    if x is None and (token_only or plain or _WRAPPED_RE.match(text, end) is not None):
        x = _PLAIN_ASSIGN_RE.match(text, end)
    if x is None:
        return False
    group = "qv" if x.group("qv") is not None else "bare"
    if group == "bare" and not text[start:end].isupper():
        return False  # make's variables are UPPER_CASE; ?= elsewhere is no assignment
    value = x.group(group)
    if _not_a_secret_literal(info, value):
        return False
    if not _literal_fits(info, value) or (token_only and not token_literal(value)):
        return False
    spans.append(Span(x.start(group), x.end(group), P_NAMED, info.kind))
    reach[0] = max(reach[0], x.end())
    return True


def _after_definer(text: str, start: int) -> bool:
    """Whether ``(def`` (a Lisp) or ``#define`` (C) and blanks come right before the name."""
    lo = max(0, start - 24)
    window = text[lo:start]
    return (
        window[-1:] in (" ", "\t")
        and ("(" in window or "#" in window)
        and _LISP_DEF_RE.search(text, lo, start) is not None
    )


def _not_a_secret_literal(info: NameInfo, value: str) -> bool:
    """A literal a declaration gives a secret's name that is not the secret: a message or a
    label in words ("Wrong password, try again", "Passwort"), a path (pwd = "/srv/app")."""
    if SPACE_RE.search(value) and len(_WORD_RE.findall(value)) * 2 >= len(value.split()) + 1:
        return True  # mostly words: a sentence
    if info.tier != TIER_WEAK and not has_digit_or_symbol(value) and not randomish(value):
        return True  # one plain word
    return _names_a_path(value)


def _names_a_path(value: str) -> bool:
    """GOOGLE_APPLICATION_CREDENTIALS=/path/to/sa.json, pwd = "/srv/app": a file, no secret."""
    return (
        ("/" in value or "\\" in value)
        and _PATH_RE.fullmatch(value) is not None
        and randomness(value) < 0.15
    )


def _literal_fits(info: NameInfo, value: str) -> bool:
    """Whether a literal given to a secret's name is the secret the name promises."""
    return not (is_placeholder(value) or value.startswith(PUBLIC_BY_DESIGN)) and fits_tier(
        info, value
    )


def _words_follow(text: str, start: int, end: int) -> bool:
    """Whether the name is followed by blanks and no ``=``/``+=``/``:``, and is no flag or bare
    ``password`` (those take a value after blanks)."""
    if text[end : end + 1] not in (" ", "\t") or (
        text[start] == "-" or text[start:end].lower() in ("password", "passwd")
    ):
        return False
    ahead = text[end : end + 40].lstrip(" \t")
    return (
        ahead[:1] not in ("=", ":")
        and not ahead.startswith("+=")
        and _DASH_QUOTE_RE.match(ahead) is None
    )


def _separates_value(text: str, start: int, name: str, before: str, m: re.Match[str]) -> bool:
    """Whether what `m` matched after the name introduces its value: a separator, the ``>`` of an
    element opened right before the name, or the blanks after a flag, a .netrc ``password`` or
    SQL's ``PASSWORD`` (of a database account's statement)."""
    xml, ws = m.group("xml", "ws")
    if m.group("sep") == "," and m.group("nq") is None:
        # "apiToken,<value>," opening a line: a CSV row; elsewhere a list of names
        return _opens_line(text, start) and m.group("bare") is not None
    if xml is not None and not before.endswith("<"):
        return False
    if ws is not None:
        flag = name.startswith("-") and len(name) > 2
        netrc = name.lower() in ("password", "passwd") and (
            text.rfind("machine", max(0, start - 300), start) >= 0
            or text.rfind("login", max(0, start - 100), start) >= 0
            or _lone_netrc_line(text, start, m)
        )
        # CREATE USER app WITH PASSWORD '...', ALTER ROLE app ENCRYPTED PASSWORD '...'
        sql = (
            name.lower() == "password"
            and m.group("qv") is not None
            and sql_account_before(text, start)
        )
        return flag or netrc or sql or _set_by_shell(text, start)
    return True


def _set_by_shell(text: str, start: int) -> bool:
    """Whether fish's ``set -x``, csh's ``setenv``, Windows' ``setx`` or a tool's ``config
    set`` (``configure set``) comes right before the name."""
    return _SET_ENV_RE.search(text, max(0, start - 120), start) is not None


def _auth_tuple_at(text: str, m: re.Match[str], info: NameInfo, spans: list[Span]) -> None:
    """requests' ``auth=("user", "password")``: the password after a weak name with no value."""
    if info.tier != TIER_WEAK or text[m.end() : m.end() + 1] != "(":
        return
    t = _AUTH_TUPLE_RE.match(text, m.end())
    if t is not None and not is_placeholder(t.group("pw")):
        spans.append(Span(t.start("pw"), t.end("pw"), P_NAMED, "password"))


def _lone_netrc_line(text: str, start: int, m: re.Match[str]) -> bool:
    """``password Xy7-secret`` alone on its line: a .netrc shown without its machine line."""
    prefix = _line_prefix(text, start)
    if m.group("bare") is None or (prefix and not prefix.isspace()):
        return False
    after = text[m.end() : m.end() + 1]
    return after in ("", "\n", "\r") and has_digit_or_symbol(m.group("bare"))


def _judge_value(
    text: str,
    m: re.Match[str],
    start: int,
    name: str,
    info: NameInfo,
    vs: int,
    ve: int,
    quoted: bool,
) -> int | None:
    """End of the secret value at [vs, ve) after `name`, or None when it is not a literal secret."""
    sep = m.group("sep")
    env = False
    code_ref = False
    line_start = False
    if not quoted:
        expr = text[vs:ve].lstrip("-+~!")  # -dist.log_prob(x) is an expression too
        code_ref = DOTTED_RE.fullmatch(expr) is not None or IDENT_RE.fullmatch(expr) is not None
        if code_ref and _ends_call(text, ve) and _CALL_RE.match(text, ve):
            return None  # getpass(), os.environ["X"], env("X"), boto3.Session()
        line_pre = _line_prefix(text, start)
        line_start = _LINE_START_RE.fullmatch(line_pre) is not None
        env = _env_line(text, m, name, line_pre, line_start)
        if env:
            # A shell or .env value runs to the next blank whatever characters it holds.
            stop = min(len(text), vs + 4096)
            while ve < stop and not text[ve].isspace():
                ve += 1
    value = text[vs:ve]
    if is_placeholder(value) or value.startswith(PUBLIC_BY_DESIGN):
        return None
    if sep in (",", "(") and not (
        (quoted or (sep == "," and _csv_value(info, value)))
        and randomish(value, 8)
        and not WORDY_RE.fullmatch(value)
        and _NOT_A_LITERAL_SECRET_RE.match(value) is None
    ):
        # ("DB_PASSWORD", "...") and setApiKey("...") in code: a value only when the string
        # looks random; ["password", "email"] is a list of names, ask_password("Password: ") a
        # prompt, getSecret("arn:aws:...") and ("password", "2023-10-01T12:00:00Z") name or date
        return None
    if sep == "-" and not _dashed_value(info, value):
        return None
    if sep is None and not quoted and (value.startswith("-") or WORDY_RE.fullmatch(value)):
        return None  # "--password requires --user", "--token --verbose"
    if _names_a_path(value):
        return None
    if (
        not quoted
        and not env
        and _not_literal(text, m, name, info, value, ve, code_ref, line_start)
    ):
        return None
    return ve if fits_tier(info, value) else None


def _csv_value(info: NameInfo, value: str) -> bool:
    """Whether a bare value in a CSV row after a secret's name is shaped like one: long and
    random, an issued token, or (after a password's name) with a digit or a symbol in it."""
    return (
        randomish(value, 16)
        or token_literal(value)
        or (info.tier == TIER_PASSWORD and has_digit_or_symbol(value))
    )


def _dashed_value(info: NameInfo, value: str) -> bool:
    """Whether a quoted value after "<name> - " is the secret: a token's shape after a token's
    name ("slack token - 'xoxb-6567?96137'", a character no token holds, is a near-copy); after
    a password's, a value with a digit or a symbol that is no identifier or file name ("password
    - 'MinLength8'", "Forgot password - 'ForgotPasswordForm.tsx'" name things)."""
    if info.tier != TIER_PASSWORD:
        return token_literal(value)
    core = value.rstrip("0123456789")
    return (
        has_digit_or_symbol(value)
        and _TYPE_NAME_RE.fullmatch(core) is None
        and _CAMEL_IDENT_RE.fullmatch(core) is None
        and _FILE_NAME_RE.fullmatch(value) is None
    )


def _random_parts(value: str) -> bool:
    """Random parts joined by dots (a signed cookie, session=eyJ1c2Vy...Zx8Kq2.Lm9Pq3...), not a
    dotted name in code (self.oauth2Client.credentials)."""
    parts = value.split(".")
    return parts[0].startswith("eyJ") or sum(randomish(p, 16) for p in parts) >= 2


def _starts_line(text: str, start: int) -> bool:
    return _LINE_START_RE.fullmatch(_line_prefix(text, start)) is not None


def _env_line(text: str, m: re.Match[str], name: str, line_pre: str, line_start: bool) -> bool:
    """``NAME=value`` of a shell or .env line: an UPPER_CASE name, ``=`` with no blank around it."""
    return (
        m.group("sep") == "="
        and name.isupper()
        and m.group("sp2") == ""
        and text[m.start() : m.start() + 1] == "="
        and (line_start or line_pre[-1:] in (" ", "\t"))
    )


def _not_literal(
    text: str,
    m: re.Match[str],
    name: str,
    info: NameInfo,
    value: str,
    ve: int,
    code_ref: bool,
    line_start: bool,
) -> bool:
    """Whether an unquoted value outside a .env line is code or a sentence, not a literal."""
    sep = m.group("sep")
    if DOTTED_RE.fullmatch(value) and not _random_parts(value):
        return True  # settings.API_KEY, req.body.password, env::var
    if code_ref and (
        _TYPE_NAME_RE.fullmatch(value) or (sep == ":" and _ANNOTATED_RE.match(text, ve))
    ):
        return True  # token = Punctuation, LAST_PASS: Final = 2, x: SecretStr
    # (a secret's name with a random tail, secret_7Hq2Lm9Xp4Rt8Vw3, names no variable)
    if IDENT_RE.fullmatch(value) and (
        value.lower() == name.lower().strip("-")
        or (names_secret(value) and not token_literal(value))
        or ("_" in value and value.islower() and not randomish(value))
        or _CAMEL_IDENT_RE.fullmatch(value)
        or (text[ve : ve + 1] in (",", ")", ";") and not randomish(value))
    ):
        return True  # password=password, token=access_token, f(password=pw, ...)
    if value.isdigit() and len(value) < 4:
        return True
    if (
        sep == ":"
        and m.group("nq") is None
        and (m.group("sp1") or (name.lower() in ("pass", "pw") and not line_start))
    ):
        return True  # "First pass: ...", "Pass :meth:" - the word, not a password
    if sep == ":" and m.group("nq") is None and info.tier != TIER_WEAK:
        # "Error: invalid password: expected 8 characters" is a sentence; a following
        # "key:" (YAML joined onto one line) is not.
        nxt = NEXT_WORD_RE.match(text, ve)
        prose = nxt is not None and not nxt.group(1).endswith((":", "="))
        return prose or not (line_start or has_digit_or_symbol(value))
    return False


def _ends_call(text: str, end: int) -> bool:
    return end < len(text) and text[end] in _TYPE_CALL_CHARS
