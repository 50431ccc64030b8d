"""Chunks of about `target` tokens with `overlap` tokens carried over, never across a heading.

Paragraphs are kept whole when they fit; longer ones are cut at sentence ends, and only a
sentence longer than a chunk is cut between words. Tokens are counted as words and punctuation
marks (close to, a little under, the model's word pieces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reos_memory.documents.extract import Section

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Chunk:
    text: str
    index: int
    page: int | None
    heading: str | None


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _units(text: str, target: int) -> list[str]:
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        if count_tokens(para) <= target:
            out.append(para)
            continue
        for sentence in _SENTENCE.split(para):
            if count_tokens(sentence) <= target:
                out.append(sentence)
            else:
                words = sentence.split()
                step = max(1, int(target * 0.7))  # words carry a little punctuation
                out += [" ".join(words[i : i + step]) for i in range(0, len(words), step)]
    return out


def _tail(text: str, tokens: int) -> str:
    words = text.split()
    out: list[str] = []
    n = 0
    for w in reversed(words):
        n += count_tokens(w)
        if n > tokens:
            break
        out.append(w)
    return " ".join(reversed(out))


def chunk_sections(sections: list[Section], target: int = 500, overlap: int = 50) -> list[Chunk]:
    """Split sections into chunks; each chunk keeps the page and heading of its section."""
    chunks: list[Chunk] = []
    for section in sections:
        current: list[str] = []  # may start with the tail carried over from the previous chunk
        size = 0
        fresh = 0  # units in `current` that no earlier chunk holds
        for unit in _units(section.text, target):
            n = count_tokens(unit)
            if fresh and size + n > target:
                text = "\n\n".join(current)
                chunks.append(Chunk(text, len(chunks), section.page, section.heading))
                carry = _tail(text, overlap) if overlap else ""
                current, size, fresh = ([carry] if carry else []), count_tokens(carry), 0
            current.append(unit)
            size += n
            fresh += 1
        if fresh:
            chunks.append(Chunk("\n\n".join(current), len(chunks), section.page, section.heading))
    return chunks
