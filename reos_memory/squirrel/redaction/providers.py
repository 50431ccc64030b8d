"""Provider token formats found by their prefix, whatever the case of their random body.

Rule 2 of ``rules.py`` knows the oldest formats and wants a capital and a digit in a token
before it looks. Many newer tokens are single-case (``sk-or-v1-<hex>``, ``sntryu_<hex>``,
``lsv2_pt_<hex>_<hex>``, ``hf_<letters>``) or have a shape no rule knew (Azure AD client secrets
``xxx8Q~...``, Discord bot tokens, Airtable ``pat<id>.<hex>``). This table names each format by
its prefix, alphabet and length, facts from the providers' documentation and the public rule sets
of secret scanners. A last, generic rule takes a short word prefix followed by ``_`` or ``-`` and
a long random single-case body (an unknown vendor's token), but never a bare hex digest.

Every pattern starts with a literal or a small class, and runs only inside a run of token
characters that ``tokens.scan_runs`` found, so no regex scans the whole text.
"""

from __future__ import annotations

import itertools
import math
import re

from reos_memory.squirrel.redaction.values import PUBLIC_BY_DESIGN

__all__ = ["scan_prefixed"]

# (kind, regex of the whole token). Bodies are bounded so that a match never runs away.
_FORMATS: list[tuple[str, str]] = [
    ("openrouter_key", r"sk-or-v1-[a-f0-9]{64}"),
    ("openai_key", r"sk-[a-f0-9]{32}(?![A-Za-z0-9])"),  # DeepSeek and OpenAI-compatible hosts
    ("elevenlabs_key", r"sk_[a-f0-9]{48}"),
    ("huggingface_token", r"hf_[A-Za-z]{30,40}"),
    ("huggingface_token", r"api_org_[A-Za-z]{30,40}"),
    ("sentry_token", r"sntry[us]_[A-Za-z0-9_=+/\-]{40,400}"),  # (org tokens: base64 JSON)
    ("langsmith_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("groq_key", r"gsk_[A-Za-z0-9]{48,56}"),
    ("xai_key", r"xai-[A-Za-z0-9]{70,90}"),
    ("perplexity_key", r"pplx-[A-Za-z0-9]{40,56}"),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}"),
    ("tavily_key", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}"),
    ("firecrawl_key", r"fc-[a-f0-9]{32}"),
    ("pinecone_key", r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{50,80}"),
    ("rubygems_key", r"rubygems_[a-f0-9]{48}"),
    ("nuget_key", r"oy2[a-z0-9]{43}"),
    ("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,40}"),
    ("mailgun_key", r"key-[a-f0-9]{32}"),
    ("mailchimp_key", r"[a-f0-9]{32}-us[0-9]{1,2}(?![A-Za-z0-9])"),
    ("shopify_token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", r"ntn_[0-9]{11}[A-Za-z0-9]{32,36}"),
    ("notion_token", r"secret_[A-Za-z0-9]{43}"),
    ("supabase_token", r"sb(?:p|_secret)_[a-zA-Z0-9_\-]{40,64}"),
    ("grafana_token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana_token", r"glc_[A-Za-z0-9+/=_\-]{32,400}"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("doppler_token", r"dp\.(?:st|ct|sa|scim|audit|pt)\.[A-Za-z0-9_\-]{40,44}"),
    ("pulumi_token", r"pul-[a-f0-9]{40}"),
    ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}"),
    ("newrelic_key", r"NR(?:AK|II|JS|RA)-[A-Z0-9]{27,40}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,400}"),  # (batch tokens run past 200)
    ("vault_token", r"s\.[A-Za-z0-9]{24}(?![A-Za-z0-9.])"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("telegram_token", r"[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}"),
    ("netlify_token", r"nf[pc]_[A-Za-z0-9]{36,40}"),
    ("flyio_token", r"fo1_[A-Za-z0-9_\-]{43}"),
    ("flyio_token", r"FlyV1 fm[12][a-z]?_[A-Za-z0-9+/=_\-,]{40,2000}"),
    ("flyio_token", r"fm2_[A-Za-z0-9+/=]{40,2000}"),
    ("render_key", r"rnd_[A-Za-z0-9]{32}"),
    ("figma_token", r"fig[dou]_[A-Za-z0-9_\-]{40}"),
    ("resend_key", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    ("sonar_token", r"sq[uap]_[a-f0-9]{40}"),
    ("buildkite_token", r"bkua_[a-f0-9]{40}"),
    ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}"),
    ("prefect_key", r"pnu_[A-Za-z0-9]{36}"),
    ("readme_key", r"rdme_[a-f0-9]{70}"),
    ("dynatrace_token", r"dt0[a-z][0-9]{2}\.[A-Z0-9]{8,24}\.[A-Z0-9]{40,64}"),
    ("contentful_token", r"CFPAT-[A-Za-z0-9_\-]{43}"),
    ("atlassian_token", r"AT[A-Z]TT3[A-Za-z0-9_\-=]{150,300}"),
    ("artifactory_key", r"AKCp[A-Za-z0-9]{69}"),
    ("square_token", r"EAAA[A-Za-z0-9_\-]{60}"),
    ("square_token", r"sq0(?:csp|atp)-[A-Za-z0-9_\-]{22,43}"),
    ("alibaba_key", r"LTAI[A-Za-z0-9]{20}"),
    ("twilio_key", r"SK[a-f0-9]{32}(?![A-Za-z0-9])"),
    ("azure_ad_secret", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}"),
    ("facebook_token", r"EAA[A-Za-z0-9]{8}[A-Za-z0-9]{80,250}"),
    ("discord_token", r"[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}"),
    ("heroku_key", r"HRKU-AA[A-Za-z0-9_\-]{58}"),
    ("onepassword_token", r"ops_eyJ[A-Za-z0-9+/=_\-]{100,2000}"),
    (
        "onepassword_secret_key",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    ),
    ("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-[0-9])?"),
    ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_\-]{20,200}\.[A-Za-z0-9_\-]{20,30}"),
    ("dropbox_token", r"sl\.[A-Za-z0-9_\-]{130,160}"),
    ("clickup_token", r"pk_[0-9]{6,10}_[A-Z0-9]{32}"),
    # Asana's personal access tokens, old (<n>/<user id>:<32>) and new (<n>/<user>/<app>:<32>)
    ("asana_token", r"[0-9]{1,4}/[0-9]{10,32}(?:/[0-9]{10,32})?:[A-Za-z0-9]{32,80}"),
    ("frameio_token", r"fio-u-[A-Za-z0-9_\-=]{64}"),
    ("typeform_token", r"tfp_[A-Za-z0-9_\-=.]{40,64}"),
    ("vercel_token", r"vc[pkia]_[A-Za-z0-9]{40,60}"),
    ("cloudflare_key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("django_secret", r"django-insecure-[^\s'\"`]{40,60}"),
    ("gitlab_token", r"gl(?:rt|cbt|ptt|dt|ft|agent|oas|soat|imt|wt|ffct)-[A-Za-z0-9_\-]{20,50}"),
    # more of the public scanners' prefixed formats
    ("clojars_token", r"CLOJARS_[a-z0-9]{60}"),
    ("flutterwave_key", r"FLW(?:SECK|PUBK)(?:_TEST)?-[a-hA-H0-9]{32}-X"),
    ("flutterwave_key", r"FLWSECK_TEST-[a-hA-H0-9]{12}(?![A-Za-z0-9])"),
    ("gitlab_token", r"GR1348941[A-Za-z0-9_\-]{20}"),
    ("harness_key", r"pat\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("harness_key", r"sat\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("intra42_secret", r"s-s4t2(?:ud|af)-[a-fA-F0-9]{64}"),
    ("octopus_key", r"API-[A-Z0-9]{26}(?![A-Za-z0-9])"),
    ("sendinblue_key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("settlemint_token", r"sm_[aps]at_[A-Za-z0-9]{16}(?![A-Za-z0-9])"),
    ("shippo_token", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("slack_token", r"xoxe-[0-9]-[A-Za-z0-9]{140,170}"),
    ("sourcegraph_token", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("newrelic_key", r"NRJS-[a-f0-9]{19}(?![A-Za-z0-9])"),
    (
        "hubspot_token",
        r"pat-(?:na|eu)[0-9]-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}",
    ),
    ("mailgun_key", r"pubkey-[a-f0-9]{32}"),
    ("crates_token", r"cio[A-Za-z0-9]{32}(?![A-Za-z0-9])"),
    ("lob_key", r"live_(?:pub_[a-f0-9]{31}|[a-f0-9]{35})(?![A-Za-z0-9./])"),
    ("lob_key", r"test_(?:pub_[a-f0-9]{31}|[a-f0-9]{35})(?![A-Za-z0-9./])"),
    (
        "plaid_token",
        r"access-(?:sandbox|development|production)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}"
        r"-[a-f0-9]{4}-[a-f0-9]{12}",
    ),
    ("twitter_bearer", r"AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{80,110}"),
    ("yandex_token", r"t1\.[A-Za-z0-9_\-]{10,400}={0,2}\.[A-Za-z0-9_\-]{86}={0,2}"),
    ("aws_access_key", r"A3T[A-Z0-9][A-Z2-7]{16}(?![A-Za-z0-9])"),
    ("aws_access_key", r"AKIA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("aws_access_key", r"ASIA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("aws_access_key", r"ABIA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("aws_access_key", r"ACCA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("defined_networking_key", r"dnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}"),
    ("adobe_client_secret", r"p8e-[A-Za-z0-9]{32}(?![A-Za-z0-9])"),
    ("langfuse_key", r"sk-lf-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}"),
    # GitHub's fine-grained PAT as the scanners' rules write it (82 characters of any case)
    ("github_token", r"github_pat_[A-Za-z0-9_]{82}(?![A-Za-z0-9_])"),
    ("tailscale_key", r"tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{10,}"),
    (
        "authress_key",
        r"sc_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120}",
    ),
    (
        "authress_key",
        r"scauth_[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120}",
    ),
    ("bitbucket_app_password", r"ATBB[A-Za-z0-9_=.\-]{24,64}"),
    ("rootly_key", r"rootly_[a-f0-9]{64}"),
    ("neon_key", r"napi_[A-Za-z0-9]{48,64}"),
    ("cerebras_key", r"csk-[a-z0-9]{48}"),
    ("paystack_key", r"sk_(?:live|test)_[a-z0-9]{40}(?![A-Za-z0-9])"),
    ("zoho_token", r"1000\.[a-f0-9]{32}\.[a-f0-9]{32}"),
    ("duffel_token", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}"),
    # an Airtable OAuth access token: "oaa", 14 characters, ".v1.", a base64url payload
    ("airtable_oauth_token", r"oaa[A-Za-z0-9]{14}\.v1\.[A-Za-z0-9_\-]{20,}(?:\.[a-f0-9]{16,})?"),
    # a Facebook app's access token in a URL's query: the app id, %7C ("|"), the app secret
    # (after a bare "|" the same shape is as often a row of pipe-separated output,
    # "1716239023123456|usr_2fXk9LmQ7pR3tV8wY1zB4cD6eF|signup")
    ("facebook_token", r"[0-9]{15,16}%7C[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"),
    # a Tableau personal access token's secret: 16 bytes of base64, ":", 32 characters
    # (mixed case after ":": an MD5 in base64 and hex, "...==:acbd18db...", is none)
    ("tableau_token", r"[A-Za-z0-9+/]{22}==:(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{32}(?![A-Za-z0-9])"),
]

# Kinds whose prefix is also an ordinary word piece: their body must look random too.
_NEEDS_RANDOM = frozenset(
    {"vault_token", "resend_key", "square_token", "facebook_token", "discord_token",
     "notion_token", "terraform_token", "azure_ad_secret", "dropbox_token", "gitlab_token",
     "harness_key", "octopus_key", "crates_token", "lob_key",
     "twitter_bearer", "bitbucket_app_password"}
)  # fmt: skip

_COMPILED = [(kind, re.compile(rx)) for kind, rx in _FORMATS]
_BY_RX = {rx: c for (_k, rx), (_k2, c) in zip(_FORMATS, _COMPILED, strict=True)}
# Formats that start with a literal go in one alternation without groups or lookbehind, so the
# regex engine skips along to a possible first character in C. A token must start where no token
# character precedes it; that is checked on each (rare) match.
_LITERAL_START = [(k, rx) for k, rx in _FORMATS if rx[0].isalnum()]


# by first character: a token starts at a run's start or after + / . = ~, and only the formats
# starting with the character found there are tried
# by their first two characters (every literal-start format begins with two literal ones)
def _lead(rx: str) -> str:
    """The two literal characters a format's regex starts with (``s\\.`` is ``s.``)."""
    out, i = "", 0
    while len(out) < 2:
        if rx[i] == "\\":
            i += 1
        elif not (rx[i].isalnum() or rx[i] in "-_~:/"):
            raise ValueError(f"format {rx!r} does not start with two literal characters")
        out += rx[i]
        i += 1
    return out


_BY_FIRST: dict[str, tuple[re.Pattern[str], list[tuple[str, str]]]] = {}
for _c in sorted({_lead(rx) for _k, rx in _LITERAL_START}):
    _fs = [(k, rx) for k, rx in _LITERAL_START if _lead(rx) == _c]
    _BY_FIRST[_c] = (re.compile("|".join(rx for _k, rx in _fs)), _fs)
_DELIMS_RE = re.compile(r"[+/.=~]")
# Formats that start with a class run only where a piece of them shows: (needle, kind, regex)
_ANCHORED = [
    (".atlasv1.", "terraform_token"),
    ("-us", "mailchimp_key"),
    (":AA", "telegram_token"),
    ("Q~", "azure_ad_secret"),
    (".", "discord_token"),
    (":", "asana_token"),
    ("%7C", "facebook_token"),
    ("==:", "tableau_token"),
]
_ANCHOR_REACH = 72  # how far before a run an anchored format may start
# One search for every needle above (a run holds none of them, mostly), then the exact ones.
_ANCHOR_ANY_RE = re.compile(
    r"\.atlasv1\.|-us[0-9]|:AA|Q~|[MNO][A-Za-z0-9_\-]{23,25}\.|[0-9]/[0-9]{10}|%7C|==:"
)
# anything that could make a run hold a token other than at its start: a delimiter, an anchor
# of the formats above, or the 30-character body of an unknown vendor's token
_ANYTHING_RE = re.compile(r"[+/.=~]|-us[0-9]|:AA|Q~|%7C")
_ALNUM_MAP = bytes(
    ord("a") if chr(i).isascii() and chr(i).isalnum() else ord(" ") for i in range(256)
)
_ALNUM30 = b"a" * 30
_BY_KIND = dict(_COMPILED)
_BOUNDARY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")

# An unknown vendor's token: a short lowercase prefix (optionally versioned) and ``_``/``-``, then
# 30+ characters with digits mixed in. Found from its separator (a class first: fast to skip to).
_GENERIC_BODY_RE = re.compile(r"[_\-](?P<body>[A-Za-z0-9]{30,200})(?![A-Za-z0-9_\-])")
_GENERIC_PREFIX_RE = re.compile(r"(?<![A-Za-z0-9_\-])[a-z][a-z0-9]{1,9}(?:[_\-][a-z0-9]{1,6})?\Z")
_HEX_ONLY = re.compile(r"[a-fA-F0-9]+")
_HASH_WORDS = ("sha", "md5", "blake", "hash", "digest", "commit", "rev", "git", "sum", "crc")


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s)))


def _cls(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.islower() else 2


def _random_body(body: str) -> bool:
    """Digits, lowercase and capitals interleaved as in a random string, with its entropy: a
    random string of one case changes class at ~0.4 of its characters, of both cases ~0.6;
    words and names far less."""
    classes = [_cls(c) for c in body]
    if len(set(classes)) < 2:
        return False
    changes = sum(1 for a, b in itertools.pairwise(classes) if a != b)
    return changes / len(body) >= 0.2 and _entropy(body) >= min(3.5, math.log2(len(body)) - 1.2)


def _kind_of(tok: str, formats: list[tuple[str, str]]) -> str | None:
    for kind, rx in formats:
        if _BY_RX[rx].fullmatch(tok) is not None:
            return kind
    return None


def _literal_at(text: str, pos: int, end: int, out: list[tuple[int, int, str]]) -> None:
    """The literal-prefix format that starts at `pos`, if any, appended to `out`."""
    if pos > 0 and text[pos - 1] in _BOUNDARY:
        return
    first = _BY_FIRST[text[pos : pos + 2]]
    m = first[0].match(text, pos, end)
    if m is None:
        return
    tok = m.group()
    kind = _kind_of(tok, first[1])
    if kind is not None and not (kind in _NEEDS_RANDOM and not _random_body(_alnum(tok))):
        stop = m.end()
        while stop < end and text[stop] in _BOUNDARY:
            stop += 1  # a token longer than its format says: its tail is the secret too
        out.append((pos, stop, kind))


def scan_prefixed(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the prefixed tokens inside the run [start, end) of `text`."""
    out: list[tuple[int, int, str]] = []
    lo, hi = max(0, start - 18), min(len(text), end + 40)  # (an app id and %7C before a run)
    at_start = text[start : start + 2] in _BY_FIRST
    long_body = end - start >= 30 and _ALNUM30 in text[start:end].encode(
        "ascii", "replace"
    ).translate(_ALNUM_MAP)
    if not at_start and not long_body and _ANYTHING_RE.search(text, lo, hi) is None:
        return out  # an id like call_3fafa713cb5d4a6b835d: two C-level searches say so
    # a token starts at the run's start or after + / . = ~ (most runs have none of these)
    if at_start:
        _literal_at(text, start, end, out)
    for d in _DELIMS_RE.finditer(text, start, end):
        if text[d.end() : d.end() + 2] in _BY_FIRST:
            _literal_at(text, d.end(), end, out)
    # these may reach over a character that ends a run (":" in 123:AA..., 2/12/34:abc...), and
    # further back than `lo` (Asana's "<n>/<user id>/<app id>:" may stand 70 characters before
    # the run it prefixes)
    back = max(0, start - _ANCHOR_REACH)
    anchored = _ANCHORED if _ANCHOR_ANY_RE.search(text, back, hi) is not None else []
    run = text[back:hi] if anchored else ""
    for needle, kind in anchored:
        if needle not in run:
            continue
        rx = _BY_KIND[kind]
        for m in rx.finditer(text, back, hi):
            s = m.start()
            if (s > 0 and text[s - 1] in _BOUNDARY) or text[m.end() : m.end() + 1] in _BOUNDARY:
                continue
            if kind in _NEEDS_RANDOM and not _random_body(_alnum(m.group())):
                continue
            out.append((s, m.end(), kind))
    if out or not long_body:
        return out
    for m in _GENERIC_BODY_RE.finditer(text, start, end):
        body = m.group("body")
        p = _GENERIC_PREFIX_RE.search(text, max(0, m.start() - 17), m.start())
        if p is None or _HEX_ONLY.fullmatch(body) or p.group().startswith(_HASH_WORDS):
            continue  # sha256-<hex>, build-<sha>: digests, not credentials
        if text.startswith(PUBLIC_BY_DESIGN, p.start()):
            continue  # a publishable key, made to ship in client code
        if _random_body(body) and not _camel_words(body):
            out.append((p.start(), m.end(), "api_token"))
    return out


# a word in a camel-case name: a capital, then three or more lowercase letters with a vowel
_CAMEL_WORD_RE = re.compile(r"[A-Z][a-z]{3,}")


def _camel_words(body: str) -> bool:
    """Whether most of a body is words run together (`SponsoredProductsRemoteSearchClick`): an
    identifier after a prefix, not a random token (of 100,000 random strings of letters and
    digits, 20 of 30 characters are, none of 40; a body without capitals never is)."""
    words = sum(
        m.end() - m.start()
        for m in _CAMEL_WORD_RE.finditer(body)
        if any(v in m.group().lower() for v in "aeiouy")
    )
    return words >= 0.7 * len(body)


def _alnum(s: str) -> str:
    return "".join(c for c in s if c.isalnum())


def _literal_prefix(rx: str) -> str:
    """The literal characters a format's regex opens with, up to its first class or group."""
    out, i = "", 0
    while i < len(rx):
        if rx[i] == "\\" and i + 1 < len(rx) and not rx[i + 1].isalnum():
            out += rx[i + 1]
            i += 2
        elif rx[i].isalnum() or rx[i] in "-_~:/":
            out += rx[i]
            i += 1
        else:
            break
    if i < len(rx) and rx[i] in "?*{":
        out = out[:-1]  # the last character is optional or repeated
    return out


def _distinct_prefix(p: str) -> bool:
    """A prefix no person's own value opens with: 4+ letters and digits before its separator,
    a letter among them, and no word ("secret_", "test_", "access-" may open a weak secret a
    person chose, which stays redacted)."""
    core = p[:-1]
    return (
        p[-1:] in ("_", "-", ".")
        and sum(c.isalnum() for c in core) >= 4
        and any(c.isalpha() for c in core)
        and core.lower() not in _WORD_PREFIXES
    )


_WORD_PREFIXES = frozenset({"access", "live", "test", "secret", "pubkey"})
# What opens a provider's token: the formats above with a distinct literal prefix ("duffel_",
# "xoxe-", "sk-or-v1-"), and the older formats of `token_runs` (Anthropic, Slack, GitHub, GitLab,
# Stripe, npm, PyPI, DigitalOcean, Google) and SettleMint's three.
_OLDER_PREFIXES = frozenset(
    {
        "sk-ant-", "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxr-", "xoxs-", "xapp-", "ghp_", "gho_",
        "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk_live_", "sk_test_", "rk_live_",
        "rk_test_", "whsec_", "npm_", "pypi-", "dop_v1_", "doo_v1_", "dor_v1_", "ya29.",
        "GOCSPX-", "sm_pat_", "sm_aat_", "sm_sat_",
    }
)  # fmt: skip
_TOKEN_PREFIXES = tuple(
    sorted(
        {p for _k, rx in _FORMATS for p in [_literal_prefix(rx)] if _distinct_prefix(p)}
        | _OLDER_PREFIXES
    )
)
_SHORT_BODY = 12  # every provider's random body is longer (most are 20-64 characters)


def cut_token(value: str) -> bool:
    """Whether `value` opens with a provider's token prefix but has too short a body for any
    token (``sk-ant-api03-x7Tq2``, ``xoxb-42424242``, ``duffel_live_q8w2e4``): a stand-in a
    person typed, or the visible head of a cut token; either way no credential. The body after
    the prefix has fewer than 20 characters, and its runs of letters and digits fewer than 12
    (Django's keys hold symbols: ``django-insecure-`` and 20 of them is one)."""
    v = value.strip().strip("\"'`")
    if not v.startswith(_TOKEN_PREFIXES):
        return False
    prefix = max((p for p in _TOKEN_PREFIXES if v.startswith(p)), key=len)
    body = v[len(prefix) :]
    runs = _ALNUM_RUN_RE.findall(body)
    return bool(runs) and len(body) < 20 and max(map(len, runs)) < _SHORT_BODY


_ALNUM_RUN_RE = re.compile(r"[A-Za-z0-9]+")


def elided_token(value: str, after: str) -> bool:
    """Whether `value`, written with an ellipsis right after it (in `value` or in `after`, the
    text that follows), is the head of a provider's token cut short: a format's distinct prefix
    opens it, and no format with that prefix takes it whole (``ops_eyJkZXZpY2VV...``, a 1Password
    token that needs 100 characters more). A whole token before an ellipsis ("use ghp_<36>...")
    fits its format and stays a secret; so does any head whose format is not known here."""
    head = value.strip().strip("\"'`")
    bare = head.rstrip(".\u2026")
    if bare == head and not after.startswith(("..", "\u2026")):
        return False
    if len(head) - len(bare) == 1 and head[-1] == ".":
        return False  # one dot ends a sentence, not a cut
    if bare.startswith(_OLDER_TUPLE):
        return False  # (their formats are `token_runs`'s: not known here)
    fits = [(rx, least) for prefix, rx, least in _FORMAT_RES if bare.startswith(prefix)]
    # shorter than the shortest token of each format: a head (a longer run is no cut token)
    return bool(fits) and all(len(bare) < least for _rx, least in fits)


def _shortest(rx: str, prefix: str) -> int:
    """The length of the shortest text format `rx` matches (the standard library's own regex
    parser tells it; where an interpreter lacks it, a bound no token head reaches)."""
    try:
        from re import _parser  # type: ignore[attr-defined]

        return int(_parser.parse(rx).getwidth()[0])
    except (ImportError, AttributeError):
        return len(prefix) + 16


# each format by its literal prefix, where that opens with a name of 2+ letters or digits and a
# separator that is no word (for `elided_token`: "gsk_", "ops_eyJ"; not "test_", "key-")
_FORMAT_RES = [
    (p, re.compile(rx), _shortest(rx, p))
    for _k, rx in _FORMATS
    for p in [_literal_prefix(rx)]
    if (m := re.match(r"([A-Za-z0-9]{2,})[_-]", p)) is not None
    and m.group(1).lower() not in _WORD_PREFIXES | {"key", "pat", "api", "sk", "pk", "rk"}
]
_OLDER_TUPLE = tuple(sorted(_OLDER_PREFIXES))
