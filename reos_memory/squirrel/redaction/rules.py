"""Secret redaction: every Squirrel event passes here before it is stored or shown to an LLM.

A secret is replaced by ``[REDACTED:<kind>]``. Where a secret has a readable frame (``KEY=value``,
``"password": "..."``, ``scheme://user:pass@host``, ``Authorization: Bearer ...``) only the secret
value is replaced, so the memory still says which variable, user or host it was about.

Rules, strongest first (overlapping findings merge, the strongest kind names the result):

1. PEM private key blocks (RSA, EC, DSA, OPENSSH, PGP, ENCRYPTED, PKCS#8), also JSON-escaped; a
   block whose END line was cut off is removed to the end of the text.
2. Provider formats, matched on their prefix and length: OpenAI ``sk-``/``sk-proj-``, Anthropic
   ``sk-ant-``, AWS key ids (``AKIA``/``ASIA``...), GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/
   ``ghr_``/``github_pat_``, GitLab ``glpat-`` and friends, Slack ``xox?-``/``xapp-`` and webhook
   URLs, Stripe ``sk_``/``rk_``/``pk_`` live/test and ``whsec_``, Google ``AIza``/``ya29.``/
   ``GOCSPX-``, npm ``npm_``, Hugging Face ``hf_``, SendGrid, PyPI, DigitalOcean, Discord
   webhooks, JWTs (``eyJ...eyJ...``). A bare ``Bearer <token>``/``Basic <token>`` of 20+
   characters is redacted when the token looks random.
3. Credentials in URLs (``scheme://user:pass@host`` for any scheme, a random-looking token used as
   the user part) and Go DSNs (``user:pass@tcp(...)``).
4. Named secrets: the value of an assignment, mapping entry, header, XML element or CLI flag whose
   name has a secret word as one of its parts (``DB_PASSWORD``, ``api_key``, ``clientSecret``,
   ``X-Api-Key``, ``--token``, ``spring.datasource.password``, ``Password=...;``), plus
   ``curl -u user:pass``, ``mysql -pXXX``, ``sshpass -p``/``docker login -p``, ``.netrc`` lines,
   ``auth=("user", "pw")`` and chat phrases like "my password is hunter2!" or "the api token is
   <random>". Names are split into parts (snake, kebab, dotted - the last dotted segment counts -
   and camelCase). Password words (password, passwd, pwd, passphrase; ``pass``/``pw`` only in
   UPPER_CASE or alone, since ``first_pass`` is an algorithm) take any literal value. Secret,
   token, api-key, credential and ``*_key`` pair words need 8+ characters, no blanks, mostly
   alphanumerics and not just words (``EXPIRED_TOKEN = "expired_token"`` is a constant). Weak
   words (auth, session, cookie, signature, salt, an UPPER_CASE ``*_KEY``) need a random-looking
   value. Ignored: names whose last part says they are about the secret (``TOKEN_URL``,
   ``token_type``, ``password_min_length``, ``api_key_env``, ``TOKEN_TTL_SECONDS``), tokenizer and
   paging tokens (``max_tokens``, ``pad_token``, ``next_page_token``) and public ones
   (``publicKeyToken``, ``STRIPE_PUBLISHABLE_KEY``).
   A value is kept when it is a reference rather than a literal: empty, masked (``***``, ``xxx``),
   a variable (``$DB_PASSWORD``, ``${{ secrets.X }}``, ``{password}``, ``<token>``, ``%s``, a YAML
   alias or tag), a file path (``GOOGLE_APPLICATION_CREDENTIALS=/keys/sa.json``), a call or
   subscript (``getpass()``, ``os.environ["X"]``), a dotted name (``settings.API_KEY``), a type
   (``str``, ``Optional[str]``, ``x: Final = 2``), a keyword or null/true/false, a
   "your-api-key-here" placeholder, or - outside ``.env``/shell lines, where every bare word is a
   literal - a code identifier (``password=password``, ``token=access_token``, ``f(pw=pw_in)``,
   ``token = Punctuation``). After ``name:`` outside a quoted key or a config line, a bare word
   followed by more words is a sentence ("invalid password: must be 12 characters").
5. High-entropy strings: runs of 32+ base64/base64url characters whose non-word parts mix both
   cases and digits, whose class transitions per character minus vowel share of letters is
   >= 0.15 (random base64 scores about 0.4, identifiers and paths about 0 or below), whose Shannon
   entropy is >= 3.8 bits and which are not mostly separated words and short codes
   (``Qwen/Qwen3-Next-80B-A3B-Instruct``). Kept: hex-only strings (git SHAs, sha256/md5 digests,
   UUIDs, ``sha256:`` image digests), hash-labelled values (``sha512-...`` integrity, go.sum
   ``h1:``), data-URI payloads, SSH public keys, base64 that decodes to readable text, and the
   host and path of ``scheme://`` URLs (a URL holds credentials only in its user part, its query
   or a known webhook path). In an absolute path each ``/`` segment is judged alone. Single-case
   random strings (lowercase hex or base36 session ids) are left to rules 2-4, which see their
   names.

The placeholder never matches any rule and later findings are cut around it, so redacting twice
gives the same text as once.

Speed: CPython's regex engine spends 20-40 ns per character when a pattern has no literal start,
more than this whole pass may cost, so no such regex scans the whole text. Every rule is anchored
on something found by a C-level byte search - a secret word, ``://``, ``-u``/``-p``,
``PRIVATE KEY``, a provider host, or a run of 20+ token characters located through
``bytes.translate`` - and its regex only runs there.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import string
from functools import lru_cache
from typing import Any, NamedTuple

from reos_memory.squirrel.redaction.normalize import normalized, to_original
from reos_memory.squirrel.redaction.providers import scan_prefixed

__all__ = ["find_secrets", "redact", "redact_value"]


class _Span(NamedTuple):
    start: int
    end: int
    prio: int
    kind: str


# Priorities decide the kind of merged overlapping findings: the more specific rule names it.
_P_BLOCK = 5
_P_PROVIDER = 4
_P_URL = 3
_P_NAMED = 2
_P_ENTROPY = 1

_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
PLACEHOLDER_RE = _PLACEHOLDER_RE

# ---------------------------------------------------------------------------------------------
# Byte tables for the cheap pre-checks
# ---------------------------------------------------------------------------------------------

_TOKEN_CHARS = string.ascii_letters + string.digits + "_-+/.=~"
_RUN_TABLE = bytes(ord("a") if chr(i) in _TOKEN_CHARS else ord(" ") for i in range(256))
_RUN_MIN = 20  # the shortest provider token (an AWS key id) has 20 characters
_RUN_END = b"a" * _RUN_MIN + b" "
_CLASS_TABLE = bytes(
    ord("U")
    if chr(i) in string.ascii_uppercase
    else ord("l")
    if chr(i) in string.ascii_lowercase
    else ord("D")
    if chr(i) in string.digits
    else ord(" ")
    for i in range(256)
)
_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r"
_SPACE_RE = re.compile(r"\s")
_NON_VOWELS = bytes(i for i in range(256) if chr(i) not in "aeiouAEIOU")
_NON_ALNUM = bytes(i for i in range(256) if not chr(i).isascii() or not chr(i).isalnum())
_CLASS_RUNS_RE = re.compile(rb"U+|l+|D+")

# ---------------------------------------------------------------------------------------------
# Rule 1 and 2: blocks and provider formats
# ---------------------------------------------------------------------------------------------

_PEM_RE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*)",
    re.DOTALL,
)

# The first character is matched outside any lookaround so the regex engine can skip positions
# that cannot start a token; each branch then checks which character that was. A group name's
# suffix after "__" only keeps names unique.
_PROVIDER_RE = re.compile(
    r"""[sSrpwAgxyG1nhde](?<![A-Za-z0-9].)(?:
        (?<=s)(?:(?P<anthropic_key>k-ant-[A-Za-z0-9_\-]{20,})
                |(?P<openai_key>k-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,})
                |(?P<stripe_key>k_(?:live|test)_[A-Za-z0-9]{16,}))
      | (?<=[rp])(?P<stripe_key__2>k_(?:live|test)_[A-Za-z0-9]{16,})
      | (?<=w)(?P<stripe_key__3>hsec_[A-Za-z0-9+/=]{24,})
      | (?<=A)(?:(?P<aws_access_key>(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)[A-Z0-9]{16}
                    (?![A-Za-z0-9]))
                |(?P<google_api_key>Iza[A-Za-z0-9_\-]{35}))
      | (?<=g)(?:(?P<github_token>h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})
                |(?P<gitlab_token>l(?:pat|dt|ptt|rt|cbt|oas|soat|ft|imt)-[A-Za-z0-9_\-]{20,}))
      | (?<=x)(?P<slack_token>ox[abposre]-[A-Za-z0-9\-]{10,}|app-\d-[A-Za-z0-9\-]{10,})
      | (?<=y)(?P<google_oauth>a29\.[A-Za-z0-9_\-]{20,})
      | (?<=G)(?P<google_oauth__2>OCSPX-[A-Za-z0-9_\-]{20,})
      | (?<=1)(?P<google_oauth__3>//0[A-Za-z0-9_\-]{40,})
      | (?<=n)(?P<npm_token>pm_[A-Za-z0-9]{36})
      | (?<=h)(?P<huggingface_token>f_[A-Za-z0-9]{30,})
      | (?<=S)(?P<sendgrid_key>G\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,})
      | (?<=p)(?P<pypi_token>ypi-AgE[A-Za-z0-9_\-]{50,})
      | (?<=d)(?P<digitalocean_token>o[por]_v1_[a-f0-9]{64})
      | (?<=e)(?P<jwt>yJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)
    )""",
    re.VERBOSE,
)
# Prefixes alone are short; these kinds must also show a random tail, or "sk-learn-..." and
# "xoxb-example-token-here"-like prose would go.
_NEEDS_RANDOM_TAIL = frozenset({"openai_key", "anthropic_key", "slack_token", "gitlab_token"})

_B64_RE = re.compile(r"[A-Za-z0-9+/_\-]{32,}")
_LONG_TOKEN = 1024
# Hash-labelled values and public keys are not secrets: sha256:..., go.sum h1:..., data URIs.
_HASH_LABEL_BEFORE_RE = re.compile(
    r"(?i)(?:(?:sha\d{1,3}|md5|h1|blake2b?|base64)[:,]"
    r"|(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)[ \t]+)$"
)
_HASH_LABEL_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-", "md5-")
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
_UUID_OR_HEX_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-f]{8,64}"
)
_SEPARATORS_RE = re.compile(r"[\-_/.+=]+")
_WORDLIKE_RE = re.compile(
    r"[A-Z]?[a-z]{2,}\d{0,2}|[A-Z]{2,}\d{0,2}s?|\d{1,4}[A-Za-z]{0,2}|[A-Za-z]\d{1,3}[A-Za-z]?"
)

# Found from a literal anywhere: (needle, kind, regex matched at the needle with a group "v")
_ANCHOR_RES = (
    (b"sig=", "url_signature", re.compile(r"sig=(?P<v>[A-Za-z0-9%+/=_\-]{16,400})")),
    (
        b"Signature=",
        "url_signature",
        re.compile(r"Signature=(?P<v>[A-Za-z0-9%+/=_\-]{16,1000})"),
    ),
    (b"django-insecure-", "django_secret", re.compile(r"(?P<v>django-insecure-[^\s'\"`]{30,80})")),
)
_ANCHOR_NEEDLES_RE = re.compile(rb"sig=|Signature=|django-insecure-")
_WEBHOOK_RES = (
    (
        b"hooks.slack.com/",
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/\-]+)"),
    ),
    (b"/api/webhooks/", "discord_webhook", re.compile(r"/api/webhooks/(\d+/[A-Za-z0-9_\-]+)")),
)

# ---------------------------------------------------------------------------------------------
# Rule 3: URLs
# ---------------------------------------------------------------------------------------------

# Greedy up to the last "@" before the path, so a password containing "@" is taken whole.
_URL_AUTH_RE = re.compile(r"://([^\s/?#'\"<>`]*)@(?=[^\s@/]*[A-Za-z0-9\]])")
_GO_DSN_RE = re.compile(r"(?<![A-Za-z0-9_.\-])([A-Za-z0-9_.\-]+):([^\s@'\"]+)@tcp\(")

# ---------------------------------------------------------------------------------------------
# Rule 4: named secrets
# ---------------------------------------------------------------------------------------------

_TRIGGER_WORDS = (b"pwd", b"token", b"key", b"auth")
_TRIGGER_RES = (re.compile(rb"ss(?<=pass|sess)"), re.compile(rb"cr(?:(?<=secr)et|ed)"))
_NAME_TABLE = bytes(
    ord("a") if chr(i) in string.ascii_letters + string.digits + "_.-" else ord(" ")
    for i in range(256)
)

# Matched right after a secret-looking name (the scanner already knows where the name ends).
_KV_TAIL_RE = re.compile(
    r"""
    (?P<nq>\\?["'])?+\]?
    (?:
        (?P<sp1>[ \t]*)(?P<sep>:=|=>|=(?![=~>])|:(?![:/\\]))(?P<sp2>[ \t]*)
      | (?P<xml>>)
      | (?P<ws>[ \t]+)
    )
    (?:
        [bBrRuUfF]{0,2}\\"(?P<eqv>(?:(?!\\")[^\n]){0,4096})(?:\\")?
      | [bBrRuUfF]{0,2}(?P<q>["'`])(?P<qv>(?:\\.|(?!(?P=q))[^\\\n]){0,4096})(?P=q)?
      | (?P<bare>[^\s"'`;&<>()\[\]{}|]{1,4096})
    )?
    """,
    re.VERBOSE,
)
_AUTH_SCHEME_RE = re.compile(
    r"(?i)(?P<scheme>bearer|basic|token|bot|digest|negotiate|ntlm|apikey|api-key|key|jwt|oauth"
    r"|ssws|splunk|api-token|apitoken|sso-key|[A-Za-z][A-Za-z0-9_-]{1,24})[ \t]+"
    r"(?P<cred>[^\s\"'`,;]+)"
)
# <add key="Password" value="..."/>, <param name="apiToken" value="..."/>
_XML_VALUE_RE = re.compile(r"""["'][ \t]+value[ \t]*=[ \t]*(["'])(?P<v>[^"'\n]{1,4096})\1""")
_AUTH_TUPLE_RE = re.compile(r"""\(\s*(["'])[^"'\n]*\1\s*,\s*(["'])(?P<pw>[^"'\n]*)\2\s*\)""")
_PROSE_NAMES = ("password", "passphrase", "passcode", "pwd", "key", "token", "secret")
_PROSE_TAIL_RE = re.compile(
    r"(?i)(?:[ \t]+(?:for|of)(?:[ \t]+\S{1,40}){1,3}?)?"
    r"[ \t]+(?:is|was)[ \t]+(?:now[ \t]+|still[ \t]+)?"
    r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[^\s\"'`]{1,200})"
)
_LINE_START_RE = re.compile(r"[ \t]*(?:(?:export|set|setenv|ENV|-|\+|declare -x)[ \t]+)?[\"']?")
_DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+")
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_CAMEL_IDENT_RE = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+")
_ALNUM_RE = re.compile(r"[A-Za-z0-9]")
# Words in snake, kebab, dotted, Pascal or UPPER case: names of things, not random secrets.
_WORDY_RE = re.compile(
    r"[A-Za-z][a-z]*+(?:(?:[_.\-]++[A-Za-z]|[A-Z])[a-z]*+)*+|[A-Z]++(?:[_\-]++[A-Z]++)*+"
)
_ANNOTATED_RE = re.compile(r"[ \t]*(?:\[[^\]\n]*\])?[ \t]*(?:\|[ \t]*\w+[ \t]*)*=(?!=)")
_TYPE_NAME_RE = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]*)*")
_NEXT_WORD_RE = re.compile(r"[ \t]+([A-Za-z0-9][^\s]*)")
_PATH_RE = re.compile(
    r"(?:~|\.{1,2})?/[\w.\-/@]+|[A-Za-z]:\\[\w.\-\\ ]+|(?:[\w.\-]+/)+[\w\-]+\.[A-Za-z0-9]{1,5}"
)
_CAMEL_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_CURL_USER_RE = re.compile(
    r"""u(?:ser)?(?:[ \t]+|=)(["']?)(?P<user>[^\s:"'`]+):(?P<pw>[^\s"'`]+)\1"""
)
_LDAP_CMD_RE = re.compile(
    r"(?:^|[\s;&|(])ldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn)\b"
)
_P_FLAG_CMD_RE = re.compile(
    r"(?:^|[\s;&|(])(?:(?P<attached>mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)"
    r"|(?P<spaced>sshpass|(?:docker|podman|buildah|skopeo|nerdctl)\s+login))\b",
    re.MULTILINE,
)

_PASSWORD_WORDS = frozenset(
    {"password", "passwd", "passwrd", "pwd", "pass", "pw", "passphrase", "passcode", "pword"}
)
_SECRET_WORDS = frozenset(
    {
        "secret", "token", "apikey", "credential", "credentials", "creds", "privatekey",
        "accesskey", "secretkey", "clientsecret", "authtoken", "accesstoken", "refreshtoken",
        "idtoken", "bearer", "apitoken", "authorization", "xsrftoken", "csrftoken",
    }
)  # fmt: skip
_KEY_PAIRS = frozenset(
    {
        "api", "access", "secret", "private", "account", "auth", "master", "encryption",
        "signing", "app", "license", "sas", "shared", "subscription", "consumer", "client",
        "storage", "webhook", "hmac", "jwt", "session", "service", "admin", "write", "deploy",
        "management", "root", "server", "bot", "integration", "personal", "cloud", "live",
    }
)  # fmt: skip
_WEAK_WORDS = frozenset(
    {"auth", "session", "sessionid", "sessid", "cookie", "signature", "sig", "salt", "sid"}
)
# A last part like these means the name is about the secret, not the secret itself.
_NOT_SECRET_SUFFIXES = frozenset(
    {
        "url", "uri", "urls", "endpoint", "host", "hostname", "port", "type", "types", "kind",
        "length", "len", "size", "count", "limit", "min", "max", "expiry", "expires",
        "expiration", "expire", "exp", "ttl", "timeout", "lifetime", "age", "file", "files",
        "path", "dir", "directory", "name", "names", "id", "ids", "header", "prefix", "suffix",
        "field", "fields", "policy", "required", "enabled", "enable", "disabled", "rotation",
        "format", "env", "var", "label", "hint", "placeholder", "style", "input", "mode",
        "version", "algorithm", "alg", "scope", "scopes", "location", "method", "provider",
        "strategy", "store", "manager", "service", "helper", "class", "module", "regex",
        "pattern", "hash", "hashed", "digest", "reset", "validation", "valid", "validator",
        "strength", "score", "error", "errors", "message", "msg", "text", "prompt", "usage",
        "budget", "index", "flag", "flags", "option", "options", "schema", "request",
        "response", "status", "state", "counter", "handler", "callback", "test", "tests",
        "mock", "factory", "loader", "parser", "encoder", "decoder", "cache", "bucket",
        "tokens", "changed", "confirmation", "rules", "check", "checker", "form", "button",
        "page", "view", "route", "template", "lookup", "source", "ref", "command", "cmd",
        "stdin", "prompted", "protected", "less", "based", "seconds", "secs", "sec", "ms",
        "minutes", "mins", "hours", "days", "millis", "retries", "attempts", "offset",
        "through", "thru", "rate", "ratio", "number", "num", "at", "start", "end", "begin",
        "open", "close", "marker", "separator", "delimiter", "sep", "char", "chars", "map",
    }
)  # fmt: skip
# Tokenizer and pagination tokens are not credentials.
_NOT_SECRET_BEFORE_TOKEN = frozenset(
    {
        "page", "next", "prev", "previous", "continuation", "cursor", "sync", "pagination",
        "resume", "eos", "bos", "pad", "unk", "sep", "cls", "mask", "special", "start", "end",
        "stop", "max", "num", "input", "output", "prompt", "completion", "total", "per",
    }
)  # fmt: skip
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
_TYPE_CALL_CHARS = frozenset("([")


class _NameInfo(NamedTuple):
    tier: int  # 0: password words, 1: secret words, 2: weak words (value must look random)
    kind: str
    header: bool  # Authorization-style: the value may start with a scheme word


_TIER_PASSWORD = 0
_TIER_SECRET = 1
_TIER_WEAK = 2


@lru_cache(maxsize=4096)
def _name_info(name: str) -> _NameInfo | None:
    """Classify a variable/key/flag name by the secret word among its parts, or None."""
    bare = name.strip("-.$@:\\\"'").rpartition(".")[2]  # token.map is about a map
    if not bare:
        return None
    parts = [p.lower() for chunk in re.split(r"[_.\-\s]+", bare) for p in _CAMEL_RE.findall(chunk)]
    if not parts:
        return None
    last = parts[-1]
    if last in _NOT_SECRET_SUFFIXES and not (last == "id" and parts[-2:-1] == ["session"]):
        return None
    joined = "".join(parts)
    if "public" in parts or "publishable" in parts:
        return None  # publicKeyToken, STRIPE_PUBLISHABLE_KEY: meant to be seen
    if "authorization" in parts:
        return _NameInfo(_TIER_SECRET, "bearer", True)
    # "pass" and "pw" are also compiler/algorithm passes and powers in code (first_pass,
    # backward_pass); they name a password only in UPPER_CASE env names or on their own.
    loose_ok = bare.isupper() or len(parts) == 1
    if any(
        (p in _PASSWORD_WORDS and (loose_ok or p not in ("pass", "pw")))
        or p.endswith(("password", "passwd"))
        for p in parts
    ):
        return _NameInfo(_TIER_PASSWORD, "password", False)
    if "aws" in parts and "secret" in parts:
        return _NameInfo(_TIER_SECRET, "aws_secret_key", False)
    for i, p in enumerate(parts):
        if p == "token" and i > 0 and parts[i - 1] in _NOT_SECRET_BEFORE_TOKEN:
            return None
        if p in _SECRET_WORDS or (p.endswith(("secret", "token")) and len(p) > 6):
            return _NameInfo(_TIER_SECRET, "env_secret", False)
        if p == "key" and i > 0 and parts[i - 1] in _KEY_PAIRS:
            return _NameInfo(_TIER_SECRET, "env_secret", False)
    if joined.endswith(("apikey", "secretkey", "accesskey", "privatekey")):
        return _NameInfo(_TIER_SECRET, "env_secret", False)
    if any(p in _WEAK_WORDS for p in parts) or (
        last == "key" and len(parts) > 1 and bare.isupper()
    ):
        return _NameInfo(_TIER_WEAK, "env_secret", False)
    return None


def _names_secret(word: str) -> bool:
    """True when an identifier used as a value is itself a secret-named variable."""
    return _name_info(word) is not None


# ---------------------------------------------------------------------------------------------
# Value tests
# ---------------------------------------------------------------------------------------------


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s)))


def _class_profile(s: str) -> tuple[bytes, int, int, int]:
    """(class string without separators, uppercase, lowercase, digit counts) of ASCII `s`."""
    cls = s.encode("ascii", "replace").translate(_CLASS_TABLE).replace(b" ", b"")
    return cls, cls.count(b"U"), cls.count(b"l"), cls.count(b"D")


def _randomness(s: str) -> float:
    """Class transitions per character minus the vowel share of letters: ~0.4 random, <=0 words."""
    cls, up, low, _ = _class_profile(s)
    if len(cls) < 2:
        return -1.0
    transitions = len(_CLASS_RUNS_RE.findall(cls)) - 1
    letters = up + low
    vowels = len(s.encode("ascii", "replace").translate(None, _NON_VOWELS))
    return transitions / (len(cls) - 1) - (vowels / letters if letters else 0.0)


def _is_encoded_text(tok: str) -> bool:
    """True for base64 that decodes to readable prose (data the user pasted, not a key)."""
    body = tok.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            raw = base64.urlsafe_b64decode(padded)
        else:
            raw = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(raw) < 16:
        return False
    unprintable = len(raw.translate(None, _PRINTABLE))
    return unprintable <= len(raw) * 0.05 and raw.count(b" ") >= 2


def _looks_random(tok: str) -> bool:
    """The high-entropy rule for one base64-ish run (32+ characters, or a 20+ path segment)."""
    if "/" in tok:
        # Hex segments are digests inside paths (.git/objects, caches); they are not secrets.
        tok = "/".join(
            seg for seg in tok.split("/") if not (len(seg) >= 6 and _HEX_RE.fullmatch(seg))
        )
        if len(tok) < 32:
            return False
    if _mostly_words(tok):
        return False
    # The mix of cases and digits must come from the parts that are not words: in
    # group__CUDART__TYPES_1g3457b81d... the capitals belong to words, the rest is lowercase hex.
    core = "".join(p for p in _SEPARATORS_RE.split(tok) if not _WORDLIKE_RE.fullmatch(p))
    _, up, low, digits = _class_profile(core)
    if not (up and low and digits):
        return False
    # Short strings cannot reach high entropy: a random 20-character one averages about 4.0 bits.
    threshold = min(3.8, math.log2(len(tok)) - 0.7)
    if _randomness(tok) < 0.15 or _entropy(tok) < threshold:
        return False
    return not _is_encoded_text(tok)


def _mostly_words(tok: str) -> bool:
    """Qwen/Qwen3-Next-80B-A3B-Instruct, types-auth0-python: separated words and short codes."""
    if "-" not in tok and "_" not in tok and "/" not in tok and "." not in tok:
        return False
    parts = _SEPARATORS_RE.split(tok)
    wordy = sum(len(p) for p in parts if _WORDLIKE_RE.fullmatch(p))
    return wordy >= 0.5 * sum(map(len, parts))


def _randomish(v: str, min_len: int = 12) -> bool:
    """A value that looks machine-generated: long enough, no spaces, mixed classes, not words."""
    if len(v) < min_len or _SPACE_RE.search(v) or _mostly_words(v):
        return False
    _, up, low, dig = _class_profile(v)
    if (up > 0) + (low > 0) + (dig > 0) < 2:
        return False
    return dig > 0 or _randomness(v) >= 0.15


def _is_placeholder(v: str) -> bool:
    """Values that stand for a secret without being one: empty, masks, templates, variables."""
    s = v.strip()
    if not s:
        return True
    if s[0] in "${" and _literal_despite_sigil(s):
        return False
    if s[0] in "$%{<#!*&@[\\" or s.startswith(("(", "process.env", "os.environ")):
        return True
    low = s.lower()
    if low in _PLACEHOLDER_WORDS or not s.strip("*xX.•-_#?…"):
        return True
    if low.startswith(("your", "insert", "enter-", "enter_", "replace", "put-", "my-")):
        return True
    return s[-1] == "}" and "{" in s


def _literal_despite_sigil(s: str) -> bool:
    """``$Xk9mP2vQ7`` or ``{Xk9mP2vQ7}``: a random literal that starts with ``$`` or is braced.

    A reference is ``$NAME`` / ``$name`` in one case, ``${...}``, ``$(...)``, ``$1``; a template
    holds a name, a dotted path or words (``{password}``, ``{{ .Values.apiKey }}``)."""
    if s[0] == "$":
        rest = s[1:]
        if not rest or rest[0] in "{(0123456789@*#?!$-_":
            return False
        if _IDENT_RE.fullmatch(rest) and (rest.isupper() or rest.islower()):
            return False
        return _randomish(rest, 8) or not _IDENT_RE.fullmatch(rest)
    inner = s.strip("{} ").lstrip(".")
    if s[-1] != "}" or not inner or _DOTTED_RE.fullmatch(inner) or " " in inner:
        return False
    return _randomish(inner, 10) and not _TEMPLATE_WORDS_RE.fullmatch(inner)


_TEMPLATE_WORDS_RE = re.compile(r"[a-z_]+|[A-Z_]+|[A-Za-z]+[0-9]?|[0-9]+|[A-Za-z_]+\|[a-z_]+")


def _ends_call(text: str, end: int) -> bool:
    return end < len(text) and text[end] in _TYPE_CALL_CHARS


# ---------------------------------------------------------------------------------------------
# Scanners
# ---------------------------------------------------------------------------------------------


def _scan_runs(text: str, b: bytes, spans: list[_Span]) -> None:
    """Provider formats, bare bearer tokens and high-entropy strings inside 20+ character runs."""
    run_map = b.translate(_RUN_TABLE) + b" "
    # Search for the end of a long run: with the space last, the byte search skips along quickly,
    # whereas a needle of only "a" bytes degrades to comparing nearly every window in full.
    i = run_map.find(_RUN_END)
    while i >= 0:
        end = i + _RUN_MIN
        start = run_map.rfind(b" ", 0, i) + 1
        i = run_map.find(_RUN_END, end + 1)
        raw = b[start:end]
        classes = raw.translate(_CLASS_TABLE)
        has_digit = b"D" in classes
        has_upper = b"U" in classes
        # Provider tokens are random: digits and (bar Slack and DigitalOcean) capitals. Lowercase
        # paths, snake_case names and hex digests, the bulk of long runs, stop here.
        if (
            has_digit
            and (has_upper or b"xox" in raw or b"_v1_" in raw)
            and _scan_provider(text, start, end, spans)
        ):
            continue
        # Newer formats, of any case, by their prefix (providers.py). Each has a digit or a
        # capital somewhere; lowercase paths and snake_case names, most long runs, skip this.
        found = (has_digit or has_upper) and scan_prefixed(text, start, end)
        if found:
            spans.extend(_Span(s, e, _P_PROVIDER, kind) for s, e, kind in found)
            continue
        if text[start - 1 : start] == " ":
            before = text[max(0, start - 7) : start].lower()
            if before.endswith(("bearer ", "basic ")):
                tok = text[start:end].rstrip(".")
                if _randomish(tok, 16):
                    kind = "basic_auth" if before.endswith("basic ") else "bearer"
                    spans.append(_Span(start, start + len(tok), _P_PROVIDER, kind))
                    continue
        # Random base64 of 32+ characters has a digit 99.6% of the time; camelCase names do not.
        # A URL's host and path (the run right after "scheme:") hold no credential by syntax.
        if (
            end - start >= 32
            and has_digit
            and has_upper
            and b"l" in classes
            and not (raw.startswith(b"//") and text[start - 1 : start] == ":")
        ):
            _scan_entropy(text, start, end, spans)


def _scan_provider(text: str, start: int, end: int, spans: list[_Span]) -> bool:
    found = False
    for m in _PROVIDER_RE.finditer(text, start, end):
        kind = (m.lastgroup or "secret").partition("__")[0]
        if kind in _NEEDS_RANDOM_TAIL and not _randomish(m.group(), 12):
            continue
        spans.append(_Span(m.start(), m.end(), _P_PROVIDER, kind))
        found = True
    return found


def _scan_entropy(text: str, start: int, end: int, spans: list[_Span]) -> None:
    for m in _B64_RE.finditer(text, start, end):
        s, e = m.span()
        # a blob longer than any key is judged on its head, and kept or redacted whole
        tok = m.group() if e - s <= _LONG_TOKEN else text[s : s + _LONG_TOKEN]
        if tok.startswith(_HASH_LABEL_PREFIXES) or _HASH_LABEL_BEFORE_RE.search(
            text, max(0, s - 20), s
        ):
            continue
        if "/" in tok and (tok[0] == "/" or text[s - 1 : s] in (".", "/")):
            # Inside a URL or path, judge each segment: drive.google.com/file/d/<id>/view keeps
            # everything but the random id.
            pos = s
            for seg in tok.split("/"):
                if len(seg) >= 20 and _looks_random(seg):
                    spans.append(_Span(pos, pos + len(seg), _P_ENTROPY, "high_entropy"))
                pos += len(seg) + 1
            continue
        if not _looks_random(tok):
            continue
        while e < end and e - m.end() < 2 and text[e] == "=":
            e += 1
        spans.append(_Span(s, e, _P_ENTROPY, "high_entropy"))


def _scan_urls(text: str, b: bytes, spans: list[_Span]) -> None:
    """``scheme://user:pass@host`` passwords and random-looking tokens in the user part."""
    i = b.find(b"://")
    while i >= 0:
        m = _URL_AUTH_RE.match(text, i)
        if m is not None:
            userinfo = m.group(1)
            s = m.start(1)
            user, colon, pw = userinfo.partition(":")
            if colon and pw and not _is_placeholder(pw) and pw != user:
                spans.append(_Span(s + len(user) + 1, m.end(1), _P_URL, "url_password"))
            elif not colon and _randomish(user, 16):
                spans.append(_Span(s, m.end(1), _P_URL, "url_token"))
        i = b.find(b"://", i + 3)


def _scan_flags(text: str, b: bytes, spans: list[_Span]) -> None:
    """``curl -u user:pass``, ``mysql -pSECRET``, ``sshpass -p SECRET``, ``docker login -p X``."""
    i = b.find(b"-u")
    while i >= 0:
        if b[i - 1 : i] in (b" ", b"\t", b"-"):
            m = _CURL_USER_RE.match(text, i + 1)
            if (
                m is not None
                and not _is_placeholder(m.group("pw"))
                and not (m.group("pw").isdigit() and m.group("user").isdigit())  # -u 1000:1000
            ):
                spans.append(_Span(m.start("pw"), m.end("pw"), _P_NAMED, "password"))
        i = b.find(b"-u", i + 2)
    i = b.find(b" -p")
    while i >= 0:
        _p_flag(text, len(text), i, spans)
        i = b.find(b" -p", i + 3)
    i = b.find(b" -w ") if b"ldap" in b else -1
    while i >= 0:
        lo = max(0, i - 300)
        line = text[max(text.rfind("\n", lo, i) + 1, lo) : i]
        m = _NEXT_WORD_RE.match(text, i + 3)
        if _LDAP_CMD_RE.search(line) and m is not None and not _is_placeholder(m.group(1)):
            spans.append(_Span(m.start(1), m.end(1), _P_NAMED, "password"))
        i = b.find(b" -w ", i + 4)


def _p_flag(text: str, n: int, i: int, spans: list[_Span]) -> None:
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
    if k > j and text[j] not in " \t" and not _is_placeholder(value):
        spans.append(_Span(j, k, _P_NAMED, "password"))


def _scan_named(text: str, b: bytes, spans: list[_Span]) -> bool:
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
            spans.append(_Span(i, len(text), _P_NAMED, "dense_secret_words"))
            break
        _named_hit(text, name_map, i, spans, reach)
    return saw_key


# Natural text holds a secret word every few hundred characters; past this many in one text (at
# least 4,000, one per 100 characters) it is a crafted or generated blob, and the rest of it is
# redacted as one finding rather than judged word by word in time that adds up to minutes.
_HIT_BUDGET = 4000


def _named_hit(text: str, name_map: bytes, i: int, spans: list[_Span], reach: list[int]) -> None:
    """Read the name around the secret word at `i` and what follows it."""
    start = name_map.rfind(b" ", max(0, i - 81), i) + 1
    end = name_map.find(b" ", i, i + 81)
    if (start == 0 and i > 81) or end < 0 or end - start > 80:
        # no variable is named like that: a blob that happens to contain "key"
        reach[0] = name_map.find(b" ", i)
        return
    reach[0] = end
    info = _name_info(text[start:end])
    if (info is None or not _named_at(text, start, end, info, spans, reach)) and text[
        end : end + 1
    ].isspace():
        _prose_at(text, start, end, spans)


def _line_prefix(text: str, start: int) -> str:
    """What precedes `start` on its line (at most 200 characters: minified lines are long)."""
    lo = max(0, start - 200)
    return text[max(text.rfind("\n", lo, start) + 1, lo) : start]


def _named_at(
    text: str, start: int, end: int, info: _NameInfo, spans: list[_Span], reach: list[int]
) -> bool:
    """Handle ``name <sep> value`` for the name at [start, end); True when it was an assignment.

    `reach` is moved past the value read, so that no later hit reads it again."""
    before = text[max(0, start - 2) : start]
    if before.endswith(("$", "%")) or before == "${":
        return False  # "$API_TOKEN" is a reference, not an assignment
    if text[end : end + 1] in ("'", '"') and text[max(0, start - 6) : start - 1].lower().endswith(
        ("key=", "name=")
    ):
        x = _XML_VALUE_RE.match(text, end)
        if x is not None and not _is_placeholder(x.group("v")) and _fits_tier(info, x.group("v")):
            spans.append(_Span(x.start("v"), x.end("v"), _P_NAMED, info.kind))
            reach[0] = max(reach[0], x.end())
            return True
    if text[end : end + 1] in (" ", "\t") and not (
        text[start] == "-" or text[start:end].lower() in ("password", "passwd")
    ):
        after = text[end : end + 40].lstrip(" \t")[:1]
        if after not in ("=", ":"):
            return False  # "secret token key": words, not an assignment (the fast way out)
    m = _KV_TAIL_RE.match(text, end)
    if m is None:
        return False
    reach[0] = max(reach[0], m.end())
    name = text[start:end]
    xml, ws = m.group("xml", "ws")
    if xml is not None and not before.endswith("<"):
        return False
    if ws is not None:
        flag = name.startswith("-") and len(name) > 2
        netrc = name.lower() in ("password", "passwd") and (
            text.rfind("machine", max(0, start - 300), start) >= 0
            or text.rfind("login", max(0, start - 100), start) >= 0
            or _lone_netrc_line(text, start, m)
        )
        if not (flag or netrc):
            return False
    group = m.lastgroup  # the value groups close last, so this names the one that matched
    if group in ("eqv", "qv", "bare"):
        vs, ve = m.span(group)
        quoted = group != "bare"
        while not quoted and ve > vs and text[ve - 1] == ",":
            ve -= 1  # "token=abc, next" - the comma ends the value
    else:
        if info.tier != _TIER_WEAK or text[m.end() : m.end() + 1] != "(":
            return True
        t = _AUTH_TUPLE_RE.match(text, m.end())  # requests' auth=("user", "password")
        if t is not None and not _is_placeholder(t.group("pw")):
            spans.append(_Span(t.start("pw"), t.end("pw"), _P_NAMED, "password"))
        return True
    if group == "qv" and text[ve : ve + 1] != m.group("q") and ve < len(text):
        # No closing quote before the line ends: the "opening" quote closed a string literal, as
        # in ask("Password: "), unless the event was cut off right here.
        return True
    kind = info.kind
    if info.header:
        a = _AUTH_SCHEME_RE.match(text, vs, ve if quoted else len(text))
        if a is not None:
            vs, ve = a.span("cred")
            kind = "basic_auth" if a.group("scheme").lower() == "basic" else "bearer"
            quoted = True  # a scheme makes the rest a literal credential
    accepted_end = _judge_value(text, m, start, name, info, vs, ve, quoted)
    if accepted_end is not None:
        spans.append(_Span(vs, accepted_end, _P_NAMED, kind))
        reach[0] = max(reach[0], accepted_end)
    return True


def _lone_netrc_line(text: str, start: int, m: re.Match[str]) -> bool:
    """``password Xy7-secret`` alone on its line: a .netrc shown without its machine line."""
    prefix = _line_prefix(text, start)
    if m.group("bare") is None or (prefix and not prefix.isspace()):
        return False
    after = text[m.end() : m.end() + 1]
    return after in ("", "\n", "\r") and _has_digit_or_symbol(m.group("bare"))


def _judge_value(
    text: str,
    m: re.Match[str],
    start: int,
    name: str,
    info: _NameInfo,
    vs: int,
    ve: int,
    quoted: bool,
) -> int | None:
    """End of the secret value at [vs, ve) after `name`, or None when it is not a literal secret."""
    value = text[vs:ve]
    sep = m.group("sep")
    if _is_placeholder(value):
        return None
    if sep is None and not quoted and (value.startswith("-") or _WORDY_RE.fullmatch(value)):
        return None  # "--password requires --user", "--token --verbose"
    if ("/" in value or "\\" in value) and _PATH_RE.fullmatch(value) and _randomness(value) < 0.15:
        return None  # GOOGLE_APPLICATION_CREDENTIALS=/path/to/sa.json names a file
    if not quoted:
        expr = value.lstrip("-+~!")  # -dist.log_prob(x) is an expression too
        code_ref = _DOTTED_RE.fullmatch(expr) or _IDENT_RE.fullmatch(expr)
        if code_ref and _ends_call(text, ve):
            return None  # getpass(), os.environ["X"], env("X"), boto3.Session()
        line_pre = _line_prefix(text, start)
        line_start = _LINE_START_RE.fullmatch(line_pre) is not None
        env_line = (
            sep == "="
            and name.isupper()
            and m.group("sp2") == ""
            and text[m.start() : m.start() + 1] == "="
            and (line_start or line_pre[-1:] in (" ", "\t"))
        )
        if env_line:
            # A shell or .env value runs to the next blank whatever characters it holds.
            stop = min(len(text), vs + 4096)
            while ve < stop and not text[ve].isspace():
                ve += 1
            value = text[vs:ve]
        else:
            if _DOTTED_RE.fullmatch(value):
                return None  # settings.API_KEY, req.body.password, env::var
            if code_ref and (
                _TYPE_NAME_RE.fullmatch(value) or (sep == ":" and _ANNOTATED_RE.match(text, ve))
            ):
                return None  # token = Punctuation, LAST_PASS: Final = 2, x: SecretStr
            if _IDENT_RE.fullmatch(value) and (
                value.lower() == name.lower().strip("-")
                or _names_secret(value)
                or ("_" in value and value.islower())
                or _CAMEL_IDENT_RE.fullmatch(value)
                or (text[ve : ve + 1] in (",", ")", ";") and not _randomish(value))
            ):
                return None  # password=password, token=access_token, f(password=pw, ...)
            if value.isdigit() and len(value) < 4:
                return None
            if (
                sep == ":"
                and m.group("nq") is None
                and (m.group("sp1") or (name.lower() in ("pass", "pw") and not line_start))
            ):
                return None  # "First pass: ...", "Pass :meth:" - the word, not a password
            if sep == ":" and m.group("nq") is None and info.tier != _TIER_WEAK:
                # "Error: invalid password: expected 8 characters" is a sentence; a following
                # "key:" (YAML joined onto one line) is not.
                nxt = _NEXT_WORD_RE.match(text, ve)
                prose = nxt is not None and not nxt.group(1).endswith((":", "="))
                if prose or not (line_start or _has_digit_or_symbol(value)):
                    return None
    return ve if _fits_tier(info, value) else None


def _fits_tier(info: _NameInfo, value: str) -> bool:
    """Whether a literal under a name of this tier looks like the secret the name promises."""
    if info.tier == _TIER_WEAK:
        v = value.strip()
        return _randomish(v) and not _UUID_OR_HEX_RE.fullmatch(v)
    if info.tier == _TIER_SECRET:
        # EXPIRED_TOKEN = "expired_token" and IMAGE_TOKEN = "<|image|>" name no credential
        return not (
            len(value) < 8
            or _SPACE_RE.search(value)
            or _WORDY_RE.fullmatch(value)
            or len(value.encode("ascii", "replace").translate(None, _NON_ALNUM))
            < max(8, 0.4 * len(value))
        )
    return True  # any literal can be a password


def _has_digit_or_symbol(v: str) -> bool:
    body = v.rstrip(".,;:!?)")
    return any(not c.isalpha() for c in body) and len(body) >= 4


def _prose_at(text: str, start: int, end: int, spans: list[_Span]) -> None:
    """ "my password is hunter2!" and "the api key is <random>" in chat messages."""
    name = text[start:end].lower()
    if not name.endswith(_PROSE_NAMES):
        return
    is_password = name.endswith(("password", "passphrase", "passcode", "pwd"))
    m = _PROSE_TAIL_RE.match(text, end)
    if m is None:
        if is_password:
            nxt = _NEXT_WORD_RE.match(text, end)
            if nxt is not None:
                v = nxt.group(1).rstrip(".,;:!?)\"'`")
                if _randomish(v, 8) and _has_digit_or_symbol(v) and not _is_placeholder(v):
                    spans.append(_Span(nxt.start(1), nxt.start(1) + len(v), _P_NAMED, "password"))
        return
    if name.endswith("key") and not (
        _name_info(name) is not None
        or text[max(0, start - 8) : start]
        .lower()
        .endswith(("api ", "access ", "secret ", "private "))
    ):
        return
    vs, ve = m.span("value")
    value = m.group("value")
    if value[0] in "\"'`":
        vs, ve, value = vs + 1, ve - 1, value[1:-1]
        # '"token is " + token' closes a string literal rather than quoting a value
        ok = value == value.strip() and not _is_placeholder(value)
    else:
        stripped = value.rstrip(".,;:!?)")
        ve -= len(value) - len(stripped)
        value = stripped
        ok = is_password and _has_digit_or_symbol(value) and not _is_placeholder(value)
    if not is_password:
        ok = _randomish(value, 12)
    if ok and value:
        spans.append(_Span(vs, ve, _P_NAMED, "password" if is_password else "env_secret"))


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def _analyse(text: str) -> tuple[str, list[_Span]]:
    """(the text the findings index, the findings), read in the NFKC form of `text` without
    zero-width characters. The text is `text` itself unless it was too changed to map back."""
    norm, pos = normalized(text)
    if pos is None:
        return text, _collect_ascii(norm)
    if not pos:
        return norm, _collect_ascii(norm)
    return text, [
        s._replace(start=a, end=b)
        for s in _collect_ascii(norm)
        for a, b in [to_original(pos, s.start, s.end)]
    ]


def _collect_ascii(text: str) -> list[_Span]:
    if len(text) < 6:
        return []
    b = text.encode("ascii") if text.isascii() else text.encode("ascii", "replace")
    spans: list[_Span] = []
    # Each rule runs only where a C-level byte search found its anchor; a regex over the whole
    # text costs ~20-40 ns per character in CPython, several times this whole pass.
    if _scan_named(text, b, spans) and b"PRIVATE KEY" in b:
        for m in _PEM_RE.finditer(text):
            spans.append(_Span(m.start(), m.end(), _P_BLOCK, "private_key"))
    _scan_runs(text, b, spans)
    if b"://" in b:
        _scan_urls(text, b, spans)
        for needle, kind, regex in _WEBHOOK_RES:
            if needle in b:
                for m in regex.finditer(text):
                    spans.append(_Span(m.start(1), m.end(1), _P_PROVIDER, kind))
    i = b.find(b"@tcp(") if b"@" in b else -1
    while i >= 0:
        dsn = _GO_DSN_RE.search(text, max(0, i - 200), i + 5)
        if dsn is not None and not _is_placeholder(dsn.group(2)):
            spans.append(_Span(dsn.start(2), dsn.end(2), _P_URL, "url_password"))
        i = b.find(b"@tcp(", i + 5)
    _scan_flags(text, b, spans)
    for needle, kind, regex in _ANCHOR_RES if _ANCHOR_NEEDLES_RE.search(b) else ():
        i = b.find(needle)
        while i >= 0:
            a = regex.match(text, i)
            if a is not None and len(a.group("v")) >= 16 and not _is_placeholder(a.group("v")):
                spans.append(_Span(a.start("v"), a.end("v"), _P_PROVIDER, kind))
            i = b.find(needle, i + len(needle))
    if not spans:
        return spans
    spans = _merge(spans)
    if b"[REDACTED:" in b:
        spans = _carve(spans, [m.span() for m in _PLACEHOLDER_RE.finditer(text)])
    return spans


def _carve(spans: list[_Span], done: list[tuple[int, int]]) -> list[_Span]:
    """Cut earlier placeholders out of findings: they are never a secret, nor part of one."""
    out: list[_Span] = []
    for span in spans:
        pos = span.start
        for st, e in done:
            if e <= pos or st >= span.end:
                continue
            if st > pos:
                out.append(span._replace(start=pos, end=st))
            pos = max(pos, e)
        if pos < span.end:
            out.append(span._replace(start=pos))
    return out


def _merge(spans: list[_Span]) -> list[_Span]:
    """Union overlapping findings; the highest-priority finding names the merged span."""
    spans.sort()
    out: list[_Span] = []
    for s in spans:
        if s.end <= s.start:
            continue
        if out and s.start < out[-1].end:
            last = out[-1]
            best = last if last.prio >= s.prio else s
            out[-1] = _Span(last.start, max(last.end, s.end), best.prio, best.kind)
        else:
            out.append(s)
    return out


def find_secrets(text: str) -> list[tuple[str, int, int]]:
    """Return (kind, start, end) of every secret in `text`, in order and non-overlapping."""
    return [(s.kind, s.start, s.end) for s in _analyse(text)[1]]


def redact(text: str) -> str:
    """Return `text` with every secret replaced by ``[REDACTED:<kind>]``; idempotent."""
    if len(text) <= _SHORT:
        return _redact_short(text)
    return _redact(text)


# Short strings (tool names, call ids, paths, commands) come back many times in a session: their
# answers are remembered (the function is pure).
_SHORT = 200


@functools.lru_cache(maxsize=4096)
def _redact_short(text: str) -> str:
    return _redact(text)


def _redact(text: str) -> str:
    return _redact_found(text)[0]


def redact_found(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(`text` redacted, the (kind, value) of each secret it held); idempotent like redact()."""
    if len(text) <= _SHORT:
        return _redact_found_short(text)
    return _redact_found(text)


@functools.lru_cache(maxsize=4096)
def _redact_found_short(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return _redact_found(text)


def _redact_found(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    text, spans = _analyse(text)
    if not spans:
        return text, ()
    parts: list[str] = []
    pos = 0
    for s in spans:
        parts.append(text[pos : s.start])
        parts.append(f"[REDACTED:{s.kind}]")
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts), tuple((s.kind, text[s.start : s.end]) for s in spans)


def redact_value(value: Any) -> Any:
    """Redact every string in JSON-like data; keys stay, a secret-named key's value goes."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_item(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v) for v in value)
    return value


def _redact_item(key: Any, value: Any) -> Any:
    if isinstance(key, str) and isinstance(value, str):
        info = _name_info(key)
        if info is not None and _json_value_is_secret(info, value):
            return f"[REDACTED:{info.kind}]"
    return redact_value(value)


def _json_value_is_secret(info: _NameInfo, value: str) -> bool:
    """A string under a secret-named key is a literal (JSON has no variable references)."""
    v = value.strip()
    if info.header:
        a = _AUTH_SCHEME_RE.fullmatch(v)
        v = a.group("cred") if a is not None else v
    return not _is_placeholder(v) and _fits_tier(info, v)
