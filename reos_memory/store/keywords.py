"""Keyword search (FTS5 BM25) for blocks and memories: query words, pruning to a postings
budget, and the block query. Memory keyword search lives with the memories (store/memories.py)
and shares `fts_match` and `prune_words`."""

from __future__ import annotations

import re
from collections.abc import Sequence

import apsw
import msgspec

from reos_memory.store.connection import fetch

_encoder = msgspec.json.Encoder()

_TOKEN = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "you",
        "your",
    ]
)


def query_words(text: str) -> list[str]:
    """Distinct lower-cased words of a query, stopwords dropped unless nothing else is left."""
    words = list(dict.fromkeys(_TOKEN.findall(text.lower())))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:64]


def fts_match(words: Sequence[str]) -> str:
    """An FTS5 query matching any of the words (quoted: user text is never FTS5 syntax)."""
    # quoted terms: user text can never be FTS5 syntax
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _ensure_temp_tables(conn: apsw.Connection) -> None:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.blocks_fts_terms USING fts5vocab(main, blocks_fts, 'row');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_fts_terms"
        " USING fts5vocab(main, memories_fts, 'row');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_stems"
        " USING fts5(w, tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_stems_v USING fts5vocab(temp, query_stems, 'instance');"
    )


def prune_words(
    conn: apsw.Connection, words: Sequence[str], budget: int, index: str = "blocks_fts"
) -> tuple[list[str], list[str]]:
    """(kept, dropped): the rarest words whose postings fit in `budget`, at least one.

    Words are stemmed by the index's own tokenizer, so document frequencies are exact. The
    dropped words are the most common ones, whose BM25 weight (IDF) is the smallest anyway;
    without this an OR query over common words scores most of a large corpus.
    """
    _ensure_temp_tables(conn)
    conn.executemany("INSERT INTO temp.query_stems(rowid, w) VALUES (?, ?)", list(enumerate(words)))
    stems = {int(r[0]): r[1] for r in fetch(conn, "SELECT doc, term FROM temp.query_stems_v")}
    conn.execute("DELETE FROM temp.query_stems")
    dfs = {
        r[0]: int(r[1])
        for r in fetch(
            conn,
            f"SELECT term, doc FROM temp.{index}_terms WHERE term IN (SELECT value FROM json_each(?))",
            (_encoder.encode(sorted(set(stems.values()))).decode(),),
        )
    }
    kept: list[str] = []
    dropped: list[str] = []
    total = 0
    for i in sorted(range(len(words)), key=lambda i: (dfs.get(stems.get(i, ""), 0), i)):
        df = dfs.get(stems.get(i, ""), 0)
        if df == 0:
            continue  # in no document: matches nothing
        if kept and total + df > budget:
            dropped.append(words[i])
            continue
        kept.append(words[i])
        total += df
    return kept, dropped


def keyword_search(
    conn: apsw.Connection, words: Sequence[str], k: int, act_id: str | None
) -> list[tuple[str, float]]:
    """Top-k (block_id, BM25 score; higher is better) for blocks matching any of the words."""
    if not words:
        return []
    # bm25() is computed once per matching row (ORDER BY bm25(...) would call it again)
    act = " JOIN blocks f ON f.rowid = m.r WHERE f.act_id = ?3" if act_id is not None else ""
    rows = fetch(
        conn,
        "WITH m AS MATERIALIZED (SELECT rowid AS r, -bm25(blocks_fts) AS s FROM blocks_fts"
        " WHERE blocks_fts MATCH ?1)"
        f" SELECT b.id, t.s FROM (SELECT m.r, m.s FROM m{act} ORDER BY m.s DESC LIMIT ?2) t"
        " JOIN blocks b ON b.rowid = t.r ORDER BY t.s DESC, b.id",
        (fts_match(words), k, *((act_id,) if act_id is not None else ())),
    )
    return [(r[0], float(r[1])) for r in rows]
