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
   the password flags of archivers, ``openssl``, ``htpasswd``, Samba and ``net use``, SQL's
   ``PASSWORD '...'``/``IDENTIFIED BY '...'``, a value given to a secret store (``gh secret set
   --body``, echoed into ``wrangler secret put``) or to ``ConvertTo-SecureString``,
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
   followed by more words is a sentence ("invalid password: must be 12 characters"). In a
   Kubernetes Secret manifest (``kind: Secret``, YAML or JSON) every value of its ``data`` and
   ``stringData`` maps, whatever its key is called.
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

Where each rule lives: ``tokens`` (rules 1, 2 and 5, and the anchored signatures), ``urls`` (rule 3
and webhook URLs), ``named`` (rule 4's assignments, headers, XML and flags) with ``prose`` (its chat
phrases), ``flags`` (its command lines) and ``manifests`` (Kubernetes Secrets); ``names`` says
which names are secret, ``values`` which values are literals and ``randomness`` which look
machine-generated; ``findings`` holds the span type. This module runs them and merges what they find.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any

from reos_memory.squirrel.redaction.findings import P_ENTROPY, P_PROVIDER, PLACEHOLDER_RE, Span
from reos_memory.squirrel.redaction.flags import scan_flags
from reos_memory.squirrel.redaction.manifests import scan_secret_manifests
from reos_memory.squirrel.redaction.named import AUTH_SCHEME_RE, scan_named
from reos_memory.squirrel.redaction.names import NameInfo, name_info
from reos_memory.squirrel.redaction.normalize import normalized, to_original
from reos_memory.squirrel.redaction.providers import cut_token, elided_token
from reos_memory.squirrel.redaction.token_runs import scan_anchors, scan_pem, scan_runs
from reos_memory.squirrel.redaction.urls import scan_go_dsn, scan_urls, scan_webhooks
from reos_memory.squirrel.redaction.values import (
    fake_token,
    fits_tier,
    is_placeholder,
    mask_follows,
    masked,
)

__all__ = [
    "PLACEHOLDER_RE",
    "find_secrets",
    "redact",
    "redact_folded",
    "redact_found",
    "redact_value",
]


def _analyse(text: str) -> tuple[str, list[Span]]:
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


def _collect_ascii(text: str) -> list[Span]:
    if len(text) < 6:
        return []
    b = text.encode("ascii") if text.isascii() else text.encode("ascii", "replace")
    spans: list[Span] = []
    # Each rule runs only where a C-level byte search found its anchor; a regex over the whole
    # text costs ~20-40 ns per character in CPython, several times this whole pass.
    if scan_named(text, b, spans) and b"PRIVATE KEY" in b:
        scan_pem(text, spans)
    scan_runs(text, b, spans)
    if b"://" in b:
        scan_urls(text, b, spans)
    scan_webhooks(text, b, spans)  # (also written without the scheme)
    if b"@" in b:
        scan_go_dsn(text, b, spans)
    scan_flags(text, b, spans)
    scan_anchors(text, b, spans)
    if b"ecret" in b:
        scan_secret_manifests(text, b, spans)
    if b"EXAMPLE" in b:
        # a provider's documented example value (AWS's AKIAIOSFODNN7EXAMPLE): never a credential
        # (one value, not a block or the rest of a dense text that happens to hold the word)
        spans = [x for x in spans if not _documented_example(text[x.start : x.end])]
    if not spans:
        return spans
    spans = _without_stand_ins(text, spans)
    if any(x.prio == P_ENTROPY for x in spans):
        spans = _without_public(text, b, spans)
    spans = _merge(spans)
    if b"[REDACTED:" in b:
        spans = _carve(spans, [m.span() for m in PLACEHOLDER_RE.finditer(text)])
    return spans


def _without_stand_ins(text: str, spans: list[Span]) -> list[Span]:
    """The findings without a token a person typed in its place (``gsk_xxxx...``,
    ``hf_requiredCharacteristicTypes...``: `values.fake_token`). A provider format's stand-in
    takes the other findings inside it along (its name's reading of the same value); the
    entropy rule's goes alone, so a name still redacts what it names. A value only a name makes
    secret may be a person's weak one (``JWT_SECRET=mysecret123456``), which is still redacted,
    unless it is masked (``STRIPE_KEY=sk_test_xxxxxxxx...``; a password never: its x's may be
    the person's), a provider's prefix before too short a body (``sk-ant-api03-x7Tq2``:
    `providers.cut_token`) or the head of a token cut with an ellipsis (``ops_eyJkZXZp...``:
    `providers.elided_token`)."""
    fake: list[tuple[int, int]] = []
    gone: set[Span] = set()
    for x in spans:
        value = text[x.start : x.end]
        if x.prio == P_PROVIDER and (fake_token(value, prefixed=True) or mask_follows(text, x.end)):
            fake.append((x.start, x.end))
        elif (x.prio == P_ENTROPY and fake_token(value)) or (
            x.kind not in _PASSWORDS
            and (masked(value) or cut_token(value) or elided_token(value, text[x.end : x.end + 3]))
        ):
            gone.add(x)
    if not fake and not gone:
        return spans
    return [
        x for x in spans if x not in gone and not any(a <= x.start and x.end <= b for a, b in fake)
    ]


def _without_public(text: str, b: bytes, spans: list[Span]) -> list[Span]:
    """The findings without the random-looking text that is public by what holds it: a public key
    or a certificate block (``-----BEGIN PGP PUBLIC KEY BLOCK-----``), ciphertext (a PGP message
    or an age file to its END line, a value SOPS encrypted: ``ENC[AES256_GCM,data:...,iv:...,
    tag:...,type:str]``, made to be committed), or a value given to a name that says it is
    public (``public_key = "..."``, ``publicToken: ...``). Only the entropy rule's findings: a
    provider's secret format is a secret whatever it is called."""
    blocks = _public_blocks(text) if b"-----BEGIN " in b else []
    if b"ENC[" in b:
        blocks += [m.span() for m in _SOPS_VALUE_RE.finditer(text)]
    named = b"ubli" in b or b"UBLI" in b
    if not blocks and not named:
        return spans
    blocks.sort()  # (they do not overlap: a block's BEGIN line holds no ENC[)
    starts = [a for a, _z in blocks]
    keep = []
    for x in spans:
        i = bisect.bisect_right(starts, x.start) - 1
        if x.prio == P_ENTROPY and (
            (i >= 0 and x.end <= blocks[i][1]) or (named and _public_name_before(text, x.start))
        ):
            continue
        keep.append(x)
    return keep


def _public_blocks(text: str) -> list[tuple[int, int]]:
    """Where the public key and certificate blocks of `text` are, to their END line (a block
    cut off before it is not known to end anywhere); at most MAX_PUBLIC_BLOCKS of them."""
    out: list[tuple[int, int]] = []
    for m in _PUBLIC_BEGIN_RE.finditer(text):
        if len(out) >= MAX_PUBLIC_BLOCKS or (out and m.start() < out[-1][1]):
            break
        end = text.find(f"-----END {m.group(1)}-----", m.end())
        if end < 0:
            break  # cut off: what follows may be anything
        out.append((m.start(), end))
    return out


_PUBLIC_BEGIN_RE = re.compile(
    r"-----BEGIN (PGP PUBLIC KEY BLOCK|PUBLIC KEY|RSA PUBLIC KEY|SSH2 PUBLIC KEY|CERTIFICATE"
    r"|PGP SIGNATURE|PGP MESSAGE|AGE ENCRYPTED FILE)-----"
)
# a value SOPS encrypted: its ciphertext, nonce and tag in base64, and the plain value's type
_SOPS_VALUE_RE = re.compile(
    r"ENC\[AES256_GCM,data:[A-Za-z0-9+/=]{0,100000},iv:[A-Za-z0-9+/=]{16,64},"
    r"tag:[A-Za-z0-9+/=]{16,64},type:[a-z]{3,8}\]"
)
MAX_PUBLIC_BLOCKS = 64


def _public_name_before(text: str, start: int) -> bool:
    """Whether the value at `start` is given to a name that says it is public and names no
    secret (``vapid_public_key = ...``; not ``NEXT_PUBLIC_API_SECRET=...``)."""
    m = _PUBLIC_NAME_RE.search(text, max(0, start - 64), start)
    if m is None:
        return False
    # a public token by its name (``publicToken``, ``public_token``) is made to be seen; a token
    # a public name only holds (``NEXT_PUBLIC_API_TOKEN``) is judged as a token's
    return _SECRET_WORD_RE.search(_PUBLIC_TOKEN_RE.sub("", m.group())) is None


_PUBLIC_TOKEN_RE = re.compile(r"(?i)\Apubli(?:c|shable)[_.-]?token")


_SECRET_WORD_RE = re.compile(r"(?i)secret|passw|private|token")
_PUBLIC_NAME_RE = re.compile(r"(?i)publi(?:c|shable)[\w.-]{0,30}[\"']?[ \t]*[:=][ \t]*[\"'`]?\Z")


# a person's password may hold many x's ("xXx_Dragon_xXx"): only an all-x one is a mask there
_PASSWORDS = frozenset({"password", "url_password", "basic_auth"})


def _documented_example(value: str) -> bool:
    return "EXAMPLE" in value and _EXAMPLE_SHAPE_RE.fullmatch(value) is not None


# one token of a key's alphabet: an env value that ran on over a JSON "\n" into the next lines
# ("DB_PASSWORD=...\nAWS_ACCESS_KEY_ID=AKIA...EXAMPLE") is no documented example
_EXAMPLE_SHAPE_RE = re.compile(r"[A-Za-z0-9/+=_\-.]{8,80}")


def _carve(spans: list[Span], done: list[tuple[int, int]]) -> list[Span]:
    """Cut earlier placeholders out of findings: they are never a secret, nor part of one."""
    out: list[Span] = []
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


def _merge(spans: list[Span]) -> list[Span]:
    """Union overlapping findings; the highest-priority finding names the merged span."""
    spans.sort()
    out: list[Span] = []
    for s in spans:
        if s.end <= s.start:
            continue
        if out and s.start < out[-1].end:
            last = out[-1]
            best = last if last.prio >= s.prio else s
            out[-1] = Span(last.start, max(last.end, s.end), best.prio, best.kind)
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


def redact_folded(text: str) -> str:
    """A memory's text as stored: every run of blanks and line breaks one space, secrets
    redacted in the form they were written in (the value of an XML element or a Kubernetes
    Secret's data on its own line) and again once folded (a value on the line after its name,
    ``password:`` then the value, reads as ``password: value``)."""
    return redact(_BLANKS.sub(" ", redact(text.strip())).strip())


_BLANKS = re.compile(r"\s+")

# Short strings (tool names, call ids, paths, commands) come back many times in a session: their
# answers are remembered (the function is pure).
_SHORT = 200


@functools.lru_cache(maxsize=4096)
def _redact_short(text: str) -> str:
    return _redact(text)


def _redact(text: str) -> str:
    return _redact_found(text)[0]


def forget_short_answers() -> None:
    """Empty the memory of short strings' answers (for a benchmark's first, cold pass)."""
    _redact_short.cache_clear()
    _redact_found_short.cache_clear()


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
    found = tuple((s.kind, text[s.start : s.end]) for s in spans)
    return _echoes_redacted("".join(parts), found), found


def _echoes_redacted(out: str, found: tuple[tuple[str, str], ...]) -> str:
    """`out` with every other place of a value found in it redacted too, where no rule could see
    it ("here is my key: ABC..." after "KEY=ABC..."); longest first, so a value holding another
    is replaced whole. Past _MAX_ECHO_VALUES distinct values (a dump, or a crafted text) they are
    looked up as whole runs in one pass, so the time stays linear in the text."""
    values: dict[str, str] = {}
    for kind, value in found:
        v = value.strip()
        if len(v) >= _MIN_ECHO and v not in values and not PLACEHOLDER_RE.search(v):
            values[v] = kind
    if len(values) <= _MAX_ECHO_VALUES:
        for v in sorted(values, key=len, reverse=True):
            if v in out:
                out = out.replace(v, f"[REDACTED:{values[v]}]")
        return out
    return _ECHO_RUN_RE.sub(lambda m: f"[REDACTED:{values[m[0]]}]" if m[0] in values else m[0], out)


_MIN_ECHO = 6  # a shorter value is too likely an ordinary word to replace everywhere
_MAX_ECHO_VALUES = 64
_ECHO_RUN_RE = re.compile(r"[^\s\"'`,;:&?()<>\[\]{}|]+")


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
        info = name_info(key)
        if info is not None and _json_value_is_secret(info, value):
            return f"[REDACTED:{info.kind}]"
    return redact_value(value)


def _json_value_is_secret(info: NameInfo, value: str) -> bool:
    """A string under a secret-named key is a literal (JSON has no variable references)."""
    v = value.strip()
    if info.header:
        a = AUTH_SCHEME_RE.fullmatch(v)
        v = a.group("cred") if a is not None else v
    return not is_placeholder(v) and fits_tier(info, v)
