"""Whether a value is a literal secret or stands for one (a reference, mask, template, word)."""

from __future__ import annotations

import itertools
import re
import string

from reos_memory.squirrel.redaction.names import TIER_SECRET, TIER_WEAK, TOP_LEVEL_DOMAINS, NameInfo
from reos_memory.squirrel.redaction.randomness import NON_ALNUM, SPACE_RE, randomish

DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+")
IDENT_RE = re.compile(r"[A-Za-z_]\w*")
# Words in snake, kebab, dotted, Pascal or UPPER case: names of things, not random secrets.
WORDY_RE = re.compile(
    r"[A-Za-z][a-z]*+(?:(?:[_.\-]++[A-Za-z]|[A-Z])[a-z]*+)*+|[A-Z]++(?:[_\-]++[A-Z]++)*+"
)
NEXT_WORD_RE = re.compile(r"[ \t]+([A-Za-z0-9][^\s]*)")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_UUID_RE = re.compile(_UUID)
# an id under a weak name (session_id, sid): a UUID, one with the day it was made before it
# (2026-01-05-<uuid>, as agents name their sessions), or a hex number
_UUID_OR_HEX_RE = re.compile(r"(?:\d{4}-\d{2}-\d{2}-)?" + _UUID + r"|[0-9a-f]{8,64}")
_HEX_RE = re.compile(r"[0-9a-f]+")
# what a weak name's value may look like and still be no secret: a hex number, a camelCase name
_NOT_RANDOM_WEAK_RE = re.compile(r"0[xX][0-9a-fA-F]+|[a-z]+(?:[A-Z][a-z]*)+[0-9]*")
# letters and digits, pieces joined by _ or -, or by base64's . + = (a run of them)
_TOKEN_LITERAL_RE = re.compile(r"[A-Za-z0-9]+(?:(?:[_-]|[.+=]+)[A-Za-z0-9]+)*")
_TOKEN_PART_RE = re.compile(r"[_.+=-]+")
_BASE64_JOINED_MAX = 256  # a value joined by . + = is read only this long (linear time)
# a dot's piece of a token holds a capital or a digit: not a word (a file's extension, a host)
_DOT_PIECE_RE = re.compile(r"[A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*")
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
    if len(s) <= 8 and s.isalpha() and len(set(s)) == 1:
        return True  # "yyy", "zzzz": one letter typed over and over (a repeated digit is a PIN)
    if low.startswith(("your", "insert", "enter-", "enter_", "replace", "put-", "my-")):
        return True
    if all(w in _PLACEHOLDER_WORDS or w in _DEFAULT_WORDS for w in _WORD_SPLIT_RE.split(low)):
        return True  # "example-password", "postgres": an example or a service's documented default
    return s[-1] == "}" and "{" in s


# a token's body: the longest run of letters and digits after its prefix
_ALNUM_RUN_RE = re.compile(r"[A-Za-z0-9]+")
_CAMEL_WORDS_RE = re.compile(r"[a-z]*(?:[A-Z][a-z]{2,}){2,}[A-Z]?[a-z]*")
_CAMEL_WORD_RE = re.compile(r"[A-Z]?[a-z]+")
_CONSONANTS_RE = re.compile(r"[b-df-hj-np-tv-xz]{4}", re.I)
SEQUENCE_SHARE = 0.3  # of a fake token's letters and digits in runs like "abcd" or "3456"
_NOT_ALNUM_RE = re.compile(r"[^A-Za-z0-9]+")
# six ascending letters or digits (the fast test before a sequence is measured)
_SIX_ASCENDING_RE = re.compile(
    "|".join(
        [string.digits[i : i + 6] for i in range(5)]
        + [string.ascii_lowercase[i : i + 6] for i in range(21)]
    )
)


def masked(value: str) -> bool:
    """Whether half of a value of 8+ letters and digits is x, X, * or # (``sk_test_xxxx...``,
    ``AKIAXXXXXXXXXXXXXXXX``), or a run of 8 or more of them (or of bullets) hides its secret
    part (``xoxp-<team>-<user>-<bot>-####################``): a mask, whatever name or prefix
    it has. ("1QQQQ..." and "511111111" are real formats: only the mask characters count; no
    provider's alphabet holds *, # or a bullet, and 8 x's in a row have a chance of about 1 in
    10^14 in a random token.)"""
    if "0" * 16 in value:
        # "sgp_local_0000...0000": no random token holds 16 zeros in a row; the zeros must be
        # half of its letters and digits at least, as a mask of x's must be (a real key's head
        # before 16 zeros, ``SECRET_KEY=<24 random>0000...``, stays a secret)
        zeros = max((len(m.group()) for m in _ZEROS_RE.finditer(value)), default=0)
        if zeros and zeros * 2 >= len(_NOT_ALNUM_RE.sub("", value)):
            return True
    marks = value.count("x") + value.count("X")
    stars = value.count("*") + value.count("#") + value.count("\u2022")
    if marks + stars < 4:
        return False  # (most values: a mask of 8+ characters has 4 marks at least)
    if _MASK_RUN_RE.search(value) is not None:
        return True
    chars = len(_NOT_ALNUM_RE.sub("", value))
    return chars >= 8 and (marks + stars) * 2 >= chars + stars


# zeros that fill a token's part to its end (16 random hex digits are all 0 once in 10^19);
# zeros inside a random run are someone's edit of a real value, which stays redacted
_ZEROS_RE = re.compile(r"0{16,}(?![A-Za-z0-9])")
# the run of mask characters that hides a token's secret part
_MASK_RUN_RE = re.compile("[*#\u2022]{8}|[xX]{8}")


def mask_follows(text: str, end: int) -> bool:
    """Whether a run of mask characters goes on right after a token's finding that ends at
    `end` (a provider's alphabet stops before it: ``xoxb-<ids>-####...``)."""
    return _MASK_RUN_RE.match(text, end) is not None


def fake_token(value: str, prefixed: bool = False) -> bool:
    """Whether a value shaped like an issued token is a stand-in a person typed: a mask
    (``gsk_xxxxxxxx...``, ``AKIAXXXXXXXXXXXXXXXX``: x, X, * or # are half of it), words in
    camelCase after a prefix (``hf_requiredCharacteristicTypesForDisplayMetadata``,
    ``s.AcceptanceTimeoutSeconds``), or - for a random-looking run no provider's prefix names
    (not `prefixed`) - a sequence (``0123456789abcdef0123456789abcdef``: a third of it in runs
    of four or more ascending letters or digits, one of six or more). A machine-made token is
    none of these (a run of six ascending characters has a chance of about 1 in 10^8 in a random
    token). A provider's prefix before a sequence (``FlyV1 fm2_...abcdefghij...``) is how
    scanners' own test secrets are written: still redacted."""
    if masked(value):
        return True
    if (
        not prefixed
        and _SIX_ASCENDING_RE.search(value.lower()) is not None
        and _sequence_share(value) >= SEQUENCE_SHARE
    ):
        return True
    runs = _ALNUM_RUN_RE.findall(value)
    body = max(runs, key=len) if runs else ""
    return (
        len(body) >= 20
        and _CAMEL_WORDS_RE.fullmatch(body) is not None
        # each word says its vowels: "Rmwpua" is no word
        and not any(_CONSONANTS_RE.search(w) for w in _CAMEL_WORD_RE.findall(body))
    )


def _sequence_share(value: str) -> float:
    """The share of a value's letters and digits in runs of 4+ ascending ones ("abcd", "3456")."""
    chars = _NOT_ALNUM_RE.sub("", value)
    in_runs, run = 0, 1
    for a, b in itertools.pairwise(chars):
        if ord(b.lower()) - ord(a.lower()) == 1 and a.isdigit() == b.isdigit():
            run += 1
            continue
        if run >= 4:
            in_runs += run
        run = 1
    if run >= 4:
        in_runs += run
    return in_runs / max(1, len(chars))


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
    if s.startswith("{{"):
        return False  # {{ .Values.apiKey }}, {{.Values.apiKey|b64enc}}: a template's expression
    inner = s.strip("{} ").lstrip(".")
    if s[-1] != "}" or not inner or DOTTED_RE.fullmatch(inner) or " " in inner:
        return False
    if _CALL_IN_BRACES_RE.fullmatch(inner):
        return False  # {base64(email:password)}: a template that computes the value
    return randomish(inner, 10) and not _TEMPLATE_WORDS_RE.fullmatch(inner)


# a host name: labels and dots, a top-level domain last
_HOST_NAME_RE = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:" + TOP_LEVEL_DOMAINS.lower() + ")"
)
# a package and its version: lowercase words, then -1.2.3 (three numbers: "walrus-7.42" and
# "secret_v2.1" may be a person's secret)
_VERSIONED_RE = re.compile(r"[a-z][a-z0-9]*(?:[-_.][a-z][a-z0-9]*)*-[0-9]+\.[0-9]+\.[0-9]+")
_CALL_IN_BRACES_RE = re.compile(r"[A-Za-z_][\w.]*\(.*\)")
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
    if info.uuid_only:
        return _UUID_RE.fullmatch(value.strip()) is not None
    if info.tier == TIER_SECRET:
        # EXPIRED_TOKEN = "expired_token" and IMAGE_TOKEN = "<|image|>" name no credential
        return not (
            len(value) < 8
            or SPACE_RE.search(value)
            or WORDY_RE.fullmatch(value)
            or len(value.encode("ascii", "replace").translate(None, NON_ALNUM))
            < max(8, 0.4 * len(value))
            or _VERSIONED_RE.fullmatch(value) is not None  # jjwt-jackson-0.11.2: a package
            or _HOST_NAME_RE.fullmatch(value) is not None  # project-one-12345.hasura.app
            or _settings_query(value)  # sv=2023-08-03&sp=rl&se=...: a SAS token without sig
        )
    return True  # any literal can be a password


# a URL query's parameters, three or more; a value of dates, addresses and short codes
_QUERY_RE = re.compile(r"[a-z][a-z_]{0,11}=[^&=\s]{0,60}(?:&[a-z][a-z_]{0,11}=[^&=\s]{0,60}){2,40}")
_SETTING_VALUE_RE = re.compile(
    r"[A-Za-z]{0,12}|[0-9.\-]{1,40}|[\w.\-]{1,8}"
    r"|\d{4}-\d{2}-\d{2}(?:T\d{2}(?::|%3A)\d{2}(?:(?::|%3A)\d{2}(?:\.\d{1,7})?)?Z?)?"
)
_SECRET_PARAM_RE = re.compile(r"sig|key|token|secret|pass|pwd|auth|code|cred")


def _settings_query(value: str) -> bool:
    """Whether `value` is a query of settings only (``sv=2023-08-03&sp=rl&se=2027-...Z``, the
    parameters of an Azure SAS token with no ``sig``): no parameter named for a secret, none
    with a random value. Such a "token" grants nothing."""
    if "&" not in value or _QUERY_RE.fullmatch(value) is None:
        return False
    for pair in value.split("&"):
        name, _eq, v = pair.partition("=")
        if _SECRET_PARAM_RE.search(name) or not _SETTING_VALUE_RE.fullmatch(v):
            return False
    return True


def token_literal(value: str) -> bool:
    """Letters and digits (with ``_`` or ``-`` between, or base64's ``.``, ``+`` and ``=``),
    long and random: an issued token, not an id whose random part is a ULID
    (``req_01HXYZ8K2M...``: time-ordered, meant to be shown), nor a dated build id
    (``build-20240512-3f1a9d2``: no long random run), nor a file's name (``3f9a2c1b7e4d.pem``,
    ``part-00001-<uuid>-c000.snappy.parquet``: a dot's pieces of a token are 5 characters or
    more, with a capital or a digit), nor base64 padded with ``=`` (data encoded, or a key
    under a name that says so)."""
    joined = any(c in value for c in ".+=")
    if joined and len(value) > _BASE64_JOINED_MAX:
        return False
    return (
        _TOKEN_LITERAL_RE.fullmatch(value) is not None
        and max(map(len, _TOKEN_PART_RE.split(value))) >= 12
        and randomish(value, 16)
        and _TYPED_ULID_RE.fullmatch(value) is None
        and ("." not in value or all(_dot_piece(x) for x in value.split(".")))
    )


def _dot_piece(piece: str) -> bool:
    """Whether a piece between a token's dots is one of its random pieces (5 characters or more,
    a capital or a digit in it): ``parquet`` of a file's name, ``pem``, a host's words are not."""
    return len(piece) >= 5 and any(
        _DOT_PIECE_RE.fullmatch(p) for p in _TOKEN_PART_RE.split(piece) if p
    )


def has_digit_or_symbol(v: str) -> bool:
    body = v.rstrip(".,;:!?)")
    return any(not c.isalpha() for c in body) and len(body) >= 4
