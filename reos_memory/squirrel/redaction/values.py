"""Whether a value is a literal secret or stands for one (a reference, mask, template, word)."""

from __future__ import annotations

import re

from reos_memory.squirrel.redaction.names import TIER_SECRET, TIER_WEAK, NameInfo
from reos_memory.squirrel.redaction.randomness import NON_ALNUM, SPACE_RE, randomish

DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+")
IDENT_RE = re.compile(r"[A-Za-z_]\w*")
# Words in snake, kebab, dotted, Pascal or UPPER case: names of things, not random secrets.
WORDY_RE = re.compile(
    r"[A-Za-z][a-z]*+(?:(?:[_.\-]++[A-Za-z]|[A-Z])[a-z]*+)*+|[A-Z]++(?:[_\-]++[A-Z]++)*+"
)
NEXT_WORD_RE = re.compile(r"[ \t]+([A-Za-z0-9][^\s]*)")
_UUID_OR_HEX_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-f]{8,64}"
)
_HEX_RE = re.compile(r"[0-9a-f]+")
# what a weak name's value may look like and still be no secret: a hex number, a camelCase name
_NOT_RANDOM_WEAK_RE = re.compile(r"0[xX][0-9a-fA-F]+|[a-z]+(?:[A-Z][a-z]*)+[0-9]*")
_TOKEN_LITERAL_RE = re.compile(r"[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*")
_TOKEN_PART_RE = re.compile(r"[_-]")
_TYPED_ULID_RE = re.compile(r"(?:[a-z]{2,12}_)?[0-7][0-9A-HJKMNP-TV-Z]{25}")
_PLACEHOLDER_WORDS = frozenset(
    {
        "null", "none", "nil", "undefined", "true", "false", "yes", "no", "on", "off",
        "required", "optional", "str", "string", "int", "bytes", "bool", "any", "secretstr",
        "secretbytes", "password", "passwd", "pass", "pwd", "secret", "token", "redacted",
        "hidden", "masked", "changeme_in_prod", "todo", "tbd", "replace_me", "replaceme",
        "placeholder", "example", "sample", "xxx", "dummy_value", "notset", "unset", "empty",
        "default", "env", "environ", "getpass", "prompt", "stdin", "-", "auto", "self",
        "value", "object", "record", "text", "number", "boolean", "uuid", "opaque", "bearer",
        "basic", "n/a", "na", "missing", "invalid", "expired", "wrong", "incorrect", "set", "pw",
        "final", "classvar", "annotated", "not", "and", "or", "in", "is", "await", "new",
        "lambda", "yield", "typeof", "function", "async", "return", "if", "else",
    }
)  # fmt: skip
# what services ship as their default password, and the words of example values: a value made only
# of these ("postgres", "changeme", "example-password", "my_secret") holds nothing secret
_DEFAULT_WORDS = frozenset(
    {"postgres", "mysql", "root", "admin", "guest", "changeme", "change", "me", "my", "your",
     "demo", "dummy", "fake", "foo", "bar", "baz", "here", "local", "dev", "test"}
)  # fmt: skip
_WORD_SPLIT_RE = re.compile(r"[-_.]")
# keys a provider publishes in client code by design (Stripe's publishable keys): no secret
PUBLIC_BY_DESIGN = ("pk_live_", "pk_test_")


def is_placeholder(v: str) -> bool:
    """Values that stand for a secret without being one: empty, masks, templates, variables."""
    s = v.strip()
    if not s:
        return True
    if s[0] in "${" and _literal_despite_sigil(s):
        return False
    if s[0] in "[{(<" and len(s) >= 8 and sum(c.isalpha() for c in s) <= 2 and " " not in s:
        return False  # "[[]]{}()<>x1": a password of brackets (a template holds a name)
    if s[0] in "$%{<#!*&@[\\" or s.startswith(("(", "process.env", "os.environ")):
        return True
    low = s.lower()
    if low in _PLACEHOLDER_WORDS or not s.strip("*xX.•-_#?…"):
        return True
    if low.startswith(("your", "insert", "enter-", "enter_", "replace", "put-", "my-")):
        return True
    if all(w in _PLACEHOLDER_WORDS or w in _DEFAULT_WORDS for w in _WORD_SPLIT_RE.split(low)):
        return True  # "example-password", "postgres": an example or a service's documented default
    return s[-1] == "}" and "{" in s


def _literal_despite_sigil(s: str) -> bool:
    """``$Xk9mP2vQ7`` or ``{Xk9mP2vQ7}``: a random literal that starts with ``$`` or is braced.

    A reference is ``$NAME`` / ``$name`` in one case, ``${...}``, ``$(...)``, ``$1``; a template
    holds a name, a dotted path or words (``{password}``, ``{{ .Values.apiKey }}``)."""
    if s[0] == "$":
        rest = s[1:]
        if not rest or rest[0] in "{(0123456789@*#?!$-_":
            return False
        if IDENT_RE.fullmatch(rest) and (rest.isupper() or rest.islower()):
            return False
        return randomish(rest, 8) or not IDENT_RE.fullmatch(rest)
    inner = s.strip("{} ").lstrip(".")
    if s[-1] != "}" or not inner or DOTTED_RE.fullmatch(inner) or " " in inner:
        return False
    return randomish(inner, 10) and not _TEMPLATE_WORDS_RE.fullmatch(inner)


_TEMPLATE_WORDS_RE = re.compile(r"[a-z_]+|[A-Z_]+|[A-Za-z]+[0-9]?|[0-9]+|[A-Za-z_]+\|[a-z_]+")


def fits_tier(info: NameInfo, value: str) -> bool:
    """Whether a literal under a name of this tier looks like the secret the name promises."""
    if info.tier == TIER_WEAK:
        v = value.strip()
        if info.token_only and not token_literal(v):
            return False
        if info.hex_ok and 32 <= len(v) < 64 and len(v) != 40 and _HEX_RE.fullmatch(v):
            return True  # (40 and 64 hex digits are git's and SHA-256's ids of content)
        if _NOT_RANDOM_WEAK_RE.fullmatch(v):
            return False  # 0x4AA5C34371567BD2 (a number, a key's public id), shadowMapPassV2
        return randomish(v) and not _UUID_OR_HEX_RE.fullmatch(v)
    if info.tier == TIER_SECRET:
        # EXPIRED_TOKEN = "expired_token" and IMAGE_TOKEN = "<|image|>" name no credential
        return not (
            len(value) < 8
            or SPACE_RE.search(value)
            or WORDY_RE.fullmatch(value)
            or len(value.encode("ascii", "replace").translate(None, NON_ALNUM))
            < max(8, 0.4 * len(value))
        )
    return True  # any literal can be a password


def token_literal(value: str) -> bool:
    """Letters and digits (with ``_`` or ``-`` between), long and random: an issued token, not
    an id whose random part is a ULID (``req_01HXYZ8K2M...``: time-ordered, meant to be shown),
    nor a dated build id (``build-20240512-3f1a9d2``: no long random run)."""
    return (
        _TOKEN_LITERAL_RE.fullmatch(value) is not None
        and randomish(value, 16)
        and _TYPED_ULID_RE.fullmatch(value) is None
        and max(map(len, _TOKEN_PART_RE.split(value))) >= 12
    )


def has_digit_or_symbol(v: str) -> bool:
    body = v.rstrip(".,;:!?)")
    return any(not c.isalpha() for c in body) and len(body) >= 4
