"""Rules 1, 2 and 5: private key blocks, provider formats and high-entropy strings, found in
runs of 20+ token characters or from a literal anchor."""

from __future__ import annotations

import re
import string

from reos_memory.squirrel.redaction.findings import P_BLOCK, P_ENTROPY, P_PROVIDER, Span
from reos_memory.squirrel.redaction.providers import scan_prefixed
from reos_memory.squirrel.redaction.randomness import CLASS_TABLE, looks_random, randomish
from reos_memory.squirrel.redaction.values import PUBLIC_BY_DESIGN, is_placeholder

_TOKEN_CHARS = string.ascii_letters + string.digits + "_-+/.=~"
_RUN_TABLE = bytes(ord("a") if chr(i) in _TOKEN_CHARS else ord(" ") for i in range(256))
_RUN_MIN = 20  # the shortest provider token (an AWS key id) has 20 characters
_RUN_END = b"a" * _RUN_MIN + b" "


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
      | (?<=r)(?P<stripe_key__2>k_(?:live|test)_[A-Za-z0-9]{16,})
      | (?<=w)(?P<stripe_key__3>hsec_[A-Za-z0-9+/=]{24,})
      | (?<=A)(?:(?P<aws_access_key>(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)[A-Z0-9]{16}
                    (?![A-Za-z0-9]))
                |(?P<google_api_key>Iza[A-Za-z0-9_\-]{35}))
      | (?<=g)(?:(?P<github_token>h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})
                |(?P<gitlab_token>l(?:pat|dt|ptt|rt|cbt|oas|soat|ft|imt|ffct)-[A-Za-z0-9_\-]{20,}))
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
# ids of LLM API objects (Anthropic's messages and tool calls, on Bedrock and Vertex too; OpenAI's
# completions, calls, responses, assistants, threads and runs): agents' logs are full of them
_API_OBJECT_ID_RE = re.compile(
    r"(?:(?:msg|toolu|srvtoolu|agent_msg|req|call|resp|asst|thread|run|batch)_(?:bdrk_|vrtx_)?"
    r"|chatcmpl-)[A-Za-z0-9]{16,40}"
)
_LONG_TOKEN = 1024
# Hash-labelled values and public keys are not secrets: sha256:..., go.sum h1:..., data URIs.
_HASH_LABEL_BEFORE_RE = re.compile(
    r"(?i)(?:(?:sha\d{1,3}|md5|h1|blake2b?|base64)[:,]"
    r"|(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)[ \t]+)$"
)
_HASH_LABEL_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-", "md5-")

# Found from a literal anywhere: (needle, kind, regex matched at the needle with a group "v",
# and what must come right before the needle, or None)
_ANCHOR_RES: tuple[tuple[bytes, str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    (b"sig=", "url_signature", re.compile(r"sig=(?P<v>[A-Za-z0-9%+/=_\-]{16,400})"), None),
    (
        b"Signature=",
        "url_signature",
        re.compile(r"Signature=(?P<v>[A-Za-z0-9%+/=_\-]{16,1000})"),
        None,
    ),
    (
        b"django-insecure-",
        "django_secret",
        re.compile(r"(?P<v>django-insecure-[^\s'\"`]{30,80})"),
        None,
    ),
    # a secret Jenkins stores encrypted in its XML (credentials.xml, config.xml): "{AQAAAB...}",
    # decryptable with the controller's key (scanners' fixtures write "{AQAAABAAA <secret>}"):
    # opened by "{", or "{" and a word
    (
        b"AQAAAB",
        "jenkins_secret",
        re.compile(r"(?P<v>AQAAAB[A-Za-z0-9+/=]{0,2000}(?:\s+[^{}\s\"'<>,]{1,2000})?)\}"),
        re.compile(r"\{(?:[\w.\-]{1,40}[ \t]+)?\Z"),
    ),
    # a Salesforce session id: the org id, "!", and a body that "." cuts into short runs
    (
        b"00D",
        "salesforce_token",
        re.compile(r"(?<![A-Za-z0-9])(?P<v>00D[A-Za-z0-9]{12,15}![A-Za-z0-9_.]{40,400})"),
        None,
    ),
)
_ANCHOR_NEEDLES_RE = re.compile(rb"sig=|Signature=|django-insecure-|AQAAAB|00D[A-Za-z0-9]{12,15}!")
_OPENER_REACH = 42  # characters before a needle its opener may take


_OPENING_QUOTES = "\"'\u201c\u2018"
_AFTER_SCHEME = frozenset(" " + _OPENING_QUOTES)  # (what may stand before a scheme's token)


def scan_runs(text: str, b: bytes, spans: list[Span]) -> None:
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
        classes = raw.translate(CLASS_TABLE)
        has_digit = b"D" in classes
        has_upper = b"U" in classes
        # Provider tokens are random: digits and (bar Slack and DigitalOcean) capitals; a random
        # mixed-case body may lack digits (one 24-character Stripe key in 70; a mask repeats
        # one letter). Lowercase paths, snake_case names and hex digests, the bulk of long
        # runs, stop here.
        if (
            (has_digit and (has_upper or b"xox" in raw or b"_v1_" in raw))
            or (has_upper and b"l" in classes and len(set(raw)) >= 16)
        ) and _scan_provider(text, start, end, spans):
            continue
        # Newer formats, of any case, by their prefix (providers.py). Each has a digit or a
        # capital somewhere; lowercase paths and snake_case names, most long runs, skip this.
        found = (has_digit or has_upper) and scan_prefixed(text, start, end)
        if found:
            spans.extend(Span(s, e, P_PROVIDER, kind) for s, e, kind in found)
            continue
        if text[start - 1 : start] in _AFTER_SCHEME:
            # ("Bearer <token>", also quoted: 'Bearer "<token>"')
            before = text[max(0, start - 8) : start].lower().rstrip(_OPENING_QUOTES)
            if before.endswith(("bearer ", "basic ")):
                tok = text[start:end].rstrip(".")
                if randomish(tok, 16):
                    kind = "basic_auth" if before.endswith("basic ") else "bearer"
                    spans.append(Span(start, start + len(tok), P_PROVIDER, kind))
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


def _scan_provider(text: str, start: int, end: int, spans: list[Span]) -> bool:
    found = False
    for m in _PROVIDER_RE.finditer(text, start, end):
        kind = (m.lastgroup or "secret").partition("__")[0]
        if kind in _NEEDS_RANDOM_TAIL and not randomish(m.group(), 12):
            continue
        spans.append(Span(m.start(), m.end(), P_PROVIDER, kind))
        found = True
    return found


def _scan_entropy(text: str, start: int, end: int, spans: list[Span]) -> None:
    found = len(spans)
    _entropy_pieces(text, start, end, spans)
    if len(spans) > found and ("=" in text[start:end] or "." in text[start:end]):
        _across_padding(text, start, end, spans, found)


# A random blob that "=" cuts (two base64 values joined, a generated key with "=" inside) is
# one secret: the random pieces joined to a finding by "=" go with it ("KEY=" stays: a name).
_PIECE_RE = re.compile(r"[A-Za-z0-9+/_\-]+")
# a piece made of words and a version or a number (`Tag2024v1`, `sha1Hex2a`): no random piece
_WORDISH_RE = re.compile(
    r"(?:[A-Z]?(?=[a-z]*[aeiouy])[a-z]{2,}|[A-Z]{2,5}|[0-9]{1,8}|v[0-9]{1,3})+"
)


def _across_padding(text: str, start: int, end: int, spans: list[Span], found: int) -> None:
    pieces = [(m.start(), m.end()) for m in _PIECE_RE.finditer(text, start, end)]
    new = sorted((sp.start, sp.end) for sp in spans[found:])
    hit = []
    j = 0
    for s, e in pieces:
        while j < len(new) and new[j][1] <= s:
            j += 1
        hit.append(j < len(new) and new[j][0] <= s and e <= new[j][1])
    added = [False] * len(pieces)

    def joins(k: int, other: int) -> bool:
        lo, hi = sorted((k, other))
        gap = text[pieces[lo][1] : pieces[hi][0]]
        return (0 < len(gap) <= 2 and set(gap) == {"="}) or gap == "."

    # a finding spreads forward, then back, over the random pieces "=" or "." joins to it; back
    # only over what is base64 itself (closed by "==", or 20+ random characters, 12+ before a
    # dot): a name before "=" (`signingKeyV2=`, `userId42=`) stays, and so does an ETag's
    # `W/0x8DC6...=`; a piece that reads like words joins only after base64's "==" padding
    for order in (range(1, len(pieces)), range(len(pieces) - 2, -1, -1)):
        for k in order:
            other = k - 1 if order.step == 1 else k + 1
            if hit[k] or not hit[other] or not joins(k, other):
                continue
            s, e = pieces[k]
            piece = text[s:e]
            if order.step == -1 and _bridges(text, pieces, k):
                hit[k] = added[k] = True  # ("...db1iQpLM0fsype86LD.Vk.<finding>": "Vk" goes too)
                continue
            padded = order.step == 1 and text[s - 2 : s] == "=="  # (after base64's padding)
            if not randomish(piece, 6) or (_WORDISH_RE.fullmatch(piece) and not padded):
                continue
            dotted = text[e : e + 1] == "."  # (a segment of a dotted token: 12 random do)
            if order.step == -1 and not (
                text[e : e + 2] == "=="
                or (randomish(piece, 12 if dotted else 20) and "/" not in piece)
            ):
                continue
            hit[k] = added[k] = True
    spans.extend(
        Span(s, e, P_ENTROPY, "high_entropy") for (s, e), a in zip(pieces, added, strict=True) if a
    )


def _bridges(text: str, pieces: list[tuple[int, int]], k: int) -> bool:
    """Whether piece `k` is a short segment (1-4 letters or digits) of a dotted token between a
    finding after it and a random segment of 12+ before it: the chain goes on through it."""
    s, e = pieces[k]
    if k == 0 or e - s > 4 or text[e : e + 1] != "." or text[s - 1 : s] != ".":
        return False
    ps, pe = pieces[k - 1]
    return pe == s - 1 and randomish(text[ps:pe], 12) and "/" not in text[ps:pe]


def _entropy_pieces(text: str, start: int, end: int, spans: list[Span]) -> None:
    for m in _B64_RE.finditer(text, start, end):
        s, e = m.span()
        # a blob longer than any key is judged on its head, and kept or redacted whole
        tok = m.group() if e - s <= _LONG_TOKEN else text[s : s + _LONG_TOKEN]
        if tok.startswith(_HASH_LABEL_PREFIXES + PUBLIC_BY_DESIGN) or _HASH_LABEL_BEFORE_RE.search(
            text, max(0, s - 20), s
        ):
            continue
        if "/" in tok and (tok[0] == "/" or text[s - 1 : s] in (".", "/")):
            # Inside a URL or path, judge each segment: drive.google.com/file/d/<id>/view keeps
            # everything but the random id.
            pos = s
            for seg in tok.split("/"):
                if len(seg) >= 20 and looks_random(seg):
                    spans.append(Span(pos, pos + len(seg), P_ENTROPY, "high_entropy"))
                pos += len(seg) + 1
            continue
        if not looks_random(tok) or _API_OBJECT_ID_RE.fullmatch(tok):
            continue
        while e < end and e - m.end() < 2 and text[e] == "=":
            e += 1
        spans.append(Span(s, e, P_ENTROPY, "high_entropy"))


def scan_pem(text: str, spans: list[Span]) -> None:
    """Rule 1: private key blocks (the caller saw "key" and "PRIVATE KEY" in the text). A whole
    block whose body holds no run of key material is a template's stand-in
    (``PASTE-YOUR-KEY-HERE``, ``MIIE...``, ``<your key>``): no key. A block cut off
    before its END line is redacted to the end of the text whatever it holds."""
    for m in _PEM_RE.finditer(text):
        body = text.find("-----", m.start() + 5) + 5  # after the BEGIN line's closing dashes
        end = text.rfind("-----END ", body, m.end())
        if end >= 0 and _KEY_MATERIAL_RE.search(text, body, end) is None:
            continue
        spans.append(Span(m.start(), m.end(), P_BLOCK, "private_key"))


# a line's worth of a key's base64 (a stand-in's words are split by dashes or blanks)
_KEY_MATERIAL_RE = re.compile(r"[A-Za-z0-9+/]{16}")


def scan_anchors(text: str, b: bytes, spans: list[Span]) -> None:
    """URL signatures and Django secret keys, found from their literal prefix."""
    for needle, kind, regex, opener in _ANCHOR_RES if _ANCHOR_NEEDLES_RE.search(b) else ():
        i = b.find(needle)
        while i >= 0:
            if opener is not None and not opener.search(text, max(0, i - _OPENER_REACH), i):
                i = b.find(needle, i + len(needle))
                continue
            a = regex.match(text, i)
            if a is not None and len(a.group("v")) >= 16 and not is_placeholder(a.group("v")):
                spans.append(Span(a.start("v"), a.end("v"), P_PROVIDER, kind))
            i = b.find(needle, max(i + len(needle), a.end() if a is not None else 0))
