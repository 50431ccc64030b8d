"""Rule 3: credentials in URLs and Go DSNs, and provider webhook URLs."""

from __future__ import annotations

import re

from reos_memory.squirrel.redaction.findings import P_PROVIDER, P_URL, Span
from reos_memory.squirrel.redaction.randomness import randomish
from reos_memory.squirrel.redaction.values import is_placeholder

# Greedy up to the last "@" before the path, so a password containing "@" is taken whole.
_URL_AUTH_RE = re.compile(r"://([^\s/?#'\"<>`]*)@(?=[^\s@/]*[A-Za-z0-9\]])")
_GO_DSN_RE = re.compile(r"(?<![A-Za-z0-9_.\-])([A-Za-z0-9_.\-]+):([^\s@'\"]+)@tcp\(")
_WEBHOOK_RES = (
    (
        b"hooks.slack.com/",
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/\-]+)"),
    ),
    (b"/api/webhooks/", "discord_webhook", re.compile(r"/api/webhooks/(\d+/[A-Za-z0-9_\-]+)")),
    (
        b".webhook.office.com/",
        "teams_webhook",
        re.compile(r"\.webhook\.office\.com/webhookb2/([A-Za-z0-9@/_\-]+)"),
    ),
)


def scan_urls(text: str, b: bytes, spans: list[Span]) -> None:
    """``scheme://user:pass@host`` passwords and random-looking tokens in the user part."""
    i = b.find(b"://")
    while i >= 0:
        m = _URL_AUTH_RE.match(text, i)
        if m is not None:
            userinfo = m.group(1)
            s = m.start(1)
            user, colon, pw = userinfo.partition(":")
            if colon and pw and not is_placeholder(pw) and pw != user:
                spans.append(Span(s + len(user) + 1, m.end(1), P_URL, "url_password"))
            elif not colon and randomish(user, 16):
                spans.append(Span(s, m.end(1), P_URL, "url_token"))
        i = b.find(b"://", i + 3)


def scan_webhooks(text: str, b: bytes, spans: list[Span]) -> None:
    """Slack and Discord webhook URLs: the path after the host is the credential."""
    for needle, kind, regex in _WEBHOOK_RES:
        if needle in b:
            for m in regex.finditer(text):
                spans.append(Span(m.start(1), m.end(1), P_PROVIDER, kind))


def scan_go_dsn(text: str, b: bytes, spans: list[Span]) -> None:
    """The password of a Go DSN, ``user:pass@tcp(host)``."""
    i = b.find(b"@tcp(")
    while i >= 0:
        dsn = _GO_DSN_RE.search(text, max(0, i - 200), i + 5)
        if dsn is not None and not is_placeholder(dsn.group(2)):
            spans.append(Span(dsn.start(2), dsn.end(2), P_URL, "url_password"))
        i = b.find(b"@tcp(", i + 5)
