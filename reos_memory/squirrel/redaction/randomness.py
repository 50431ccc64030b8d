"""Whether a string looks machine-generated: character classes, vowels, entropy, encoded text."""

from __future__ import annotations

import base64
import binascii
import math
import re
import string

CLASS_TABLE = bytes(
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
SPACE_RE = re.compile(r"\s")
_NON_VOWELS = bytes(i for i in range(256) if chr(i) not in "aeiouAEIOU")
NON_ALNUM = bytes(i for i in range(256) if not chr(i).isascii() or not chr(i).isalnum())
_CLASS_RUNS_RE = re.compile(rb"U+|l+|D+")
_HEX_RE = re.compile(r"[0-9a-fA-F]+")
_SEPARATORS_RE = re.compile(r"[\-_/.+=]+")
_WORDLIKE_RE = re.compile(
    r"[A-Z]?[a-z]{2,}\d{0,2}|[A-Z]{2,}\d{0,2}s?|\d{1,4}[A-Za-z]{0,2}|[A-Za-z]\d{1,3}[A-Za-z]?"
)


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s)))


def _class_profile(s: str) -> tuple[bytes, int, int, int]:
    """(class string without separators, uppercase, lowercase, digit counts) of ASCII `s`."""
    cls = s.encode("ascii", "replace").translate(CLASS_TABLE).replace(b" ", b"")
    return cls, cls.count(b"U"), cls.count(b"l"), cls.count(b"D")


def randomness(s: str) -> float:
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


def looks_random(tok: str) -> bool:
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
    if randomness(tok) < 0.15 or _entropy(tok) < threshold:
        return False
    return not _is_encoded_text(tok)


def _mostly_words(tok: str) -> bool:
    """Qwen/Qwen3-Next-80B-A3B-Instruct, types-auth0-python: separated words and short codes."""
    if "-" not in tok and "_" not in tok and "/" not in tok and "." not in tok:
        return False
    parts = _SEPARATORS_RE.split(tok)
    wordy = sum(len(p) for p in parts if _WORDLIKE_RE.fullmatch(p))
    return wordy >= 0.5 * sum(map(len, parts))


def randomish(v: str, min_len: int = 12) -> bool:
    """A value that looks machine-generated: long enough, no spaces, mixed classes, not words."""
    if len(v) < min_len or SPACE_RE.search(v) or _mostly_words(v):
        return False
    _, up, low, dig = _class_profile(v)
    if (up > 0) + (low > 0) + (dig > 0) < 2:
        return False
    return dig > 0 or randomness(v) >= 0.15
