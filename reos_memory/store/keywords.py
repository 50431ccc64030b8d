"""Keyword search (FTS5 BM25) for blocks and memories: query words, pruning to a postings
budget, and the block query. Memory keyword search lives with the memories (store/memories.py)
and shares `fts_match` and `prune_words`."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence

import apsw
import msgspec

from reos_memory.stopwords import STOPWORDS
from reos_memory.store.connection import fetch

_encoder = msgspec.json.Encoder()

_TOKEN = re.compile(r"\w+", re.UNICODE)


def query_words(text: str) -> list[str]:
    """Distinct lower-cased words of a query, stopwords dropped unless nothing else is left."""
    words = list(dict.fromkeys(_TOKEN.findall(text.lower())))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:64]


def like_escape(text: str) -> str:
    """`text` matched literally by LIKE with the backslash as its escape character (SQLite's
    `ESCAPE '\\'`, PostgreSQL's default)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def fts_match(words: Sequence[str]) -> str:
    """An FTS5 query matching any of the words (quoted: user text is never FTS5 syntax)."""
    # quoted terms: user text can never be FTS5 syntax
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def ensure_temp_tables(conn: apsw.Connection) -> None:
    """This connection's views of the indexes' vocabularies, and scratch tables that tokenize
    text exactly as the indexes do (for query words, and for changed blocks: keyword_index)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.blocks_fts_terms USING fts5vocab(main, blocks_fts, 'row');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.blocks_fts_instances"
        " USING fts5vocab(main, blocks_fts, 'instance');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_fts_terms"
        " USING fts5vocab(main, memories_fts, 'row');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_stems"
        " USING fts5(w, tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_stems_v USING fts5vocab(temp, query_stems, 'instance');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.block_terms"
        " USING fts5(c, tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.block_terms_v USING fts5vocab(temp, block_terms, 'instance');"
    )


class _Frequencies:
    """Document frequencies of stemmed terms, remembered for DF_TTL_S seconds.

    fts5vocab counts a term's documents by reading its whole doclist: 1.2 ms for a 7-word query
    at 100K blocks. Pruning only ranks words and fits a budget, so a count a minute old serves.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[tuple[str, str], tuple[int, float]] = {}

    def get(self, conn: apsw.Connection, index: str, terms: set[str]) -> dict[str, int]:
        now = time.monotonic()
        with self._lock:
            out = {
                t: hit[0]
                for t in terms
                if (hit := self._known.get((index, t))) is not None and now - hit[1] < DF_TTL_S
            }
        missing = sorted(terms - out.keys())
        if missing:
            rows = fetch(
                conn,
                f"SELECT term, doc FROM temp.{index}_terms"
                " WHERE term IN (SELECT value FROM json_each(?))",
                (_encoder.encode(missing).decode(),),
            )
            fresh = {r[0]: int(r[1]) for r in rows}
            with self._lock:  # a term in no document is never remembered: it may be written next
                if len(self._known) > DF_CACHE_MAX:
                    self._known.clear()
                self._known.update({(index, t): (df, now) for t, df in fresh.items() if df > 0})
            out |= fresh
        return out


DF_TTL_S = 60.0
DF_CACHE_MAX = 100_000
_frequencies = _Frequencies()


def prune_words(
    conn: apsw.Connection,
    words: Sequence[str],
    budget: int,
    index: str = "blocks_fts",
    dfs: Sequence[int] | None = None,
) -> tuple[list[str], list[str]]:
    """(kept, dropped): the rarest words whose postings fit in `budget`, at least one.

    Words are stemmed by the index's own tokenizer, so document frequencies are those of the
    index (up to DF_TTL_S old). The dropped words are the most common ones, whose BM25 weight
    (IDF) is the smallest anyway; without this an OR query over common words scores most of a
    large corpus. `dfs`: the words' document frequencies, when the caller has them already.
    """
    df_of = document_frequencies(conn, words, index) if dfs is None else dfs
    return fit_postings(words, df_of, budget)


def fit_postings(
    words: Sequence[str], dfs: Sequence[int], budget: int
) -> tuple[list[str], list[str]]:
    """(kept, dropped): of words with these document frequencies, the rarest whose postings
    fit in `budget`, at least one; words in no document are in neither (any keyword index:
    the local FTS5 ones, the team server's full text)."""
    kept: list[str] = []
    dropped: list[str] = []
    total = 0
    for i in sorted(range(len(words)), key=lambda i: (dfs[i], i)):
        df = dfs[i]
        if df == 0:
            continue  # in no document: matches nothing
        if kept and total + df > budget:
            dropped.append(words[i])
            continue
        kept.append(words[i])
        total += df
    return kept, dropped


def stem_words(conn: apsw.Connection, words: Sequence[str]) -> list[list[str]]:
    """Each word's terms as the indexes' tokenizer makes them (usually one; none for a word of
    separators only; several for `foo_bar`, which FTS5 matches as a phrase)."""
    ensure_temp_tables(conn)
    conn.execute("DELETE FROM temp.query_stems")  # the last run's words (or a run cut short)
    conn.executemany("INSERT INTO temp.query_stems(rowid, w) VALUES (?, ?)", list(enumerate(words)))
    terms: list[list[str]] = [[] for _ in words]
    for doc, term in fetch(conn, "SELECT doc, term FROM temp.query_stems_v ORDER BY doc, offset"):
        terms[int(doc)].append(term)
    return terms


def term_frequencies(
    conn: apsw.Connection, terms: set[str], index: str = "blocks_fts"
) -> dict[str, int]:
    """How many documents of the index hold each (stemmed) term, up to DF_TTL_S old."""
    return _frequencies.get(conn, index, terms)


def document_frequencies(
    conn: apsw.Connection, words: Sequence[str], index: str = "blocks_fts"
) -> list[int]:
    """How many documents of the index hold each word (stemmed by the index's tokenizer; a
    word of several terms counts by the alphabetically last of them)."""
    stems = [max(t) if t else "" for t in stem_words(conn, words)]
    dfs = term_frequencies(conn, {t for t in stems if t}, index)
    return [dfs.get(t, 0) for t in stems]


def keyword_search(
    conn: apsw.Connection,
    words: Sequence[str],
    k: int,
    act_id: str | None,
    postings: int | None = None,
) -> list[tuple[str, float]]:
    """Top-k (block_id, BM25 score; higher is better) for blocks matching any of the words.

    With `postings`, at most that many matching blocks are scored: the newest ones (by rowid).
    `prune_words` keeps the words within that budget, so this binds only when even the rarest
    word is more common than the budget (one word in 5% of a million blocks would otherwise
    mean scoring 50,000 rows).
    """
    if not words:
        return []
    act = " JOIN blocks f ON f.rowid = blocks_fts.rowid AND f.act_id = :act" if act_id else ""
    newest = " ORDER BY blocks_fts.rowid DESC LIMIT :postings" if postings is not None else ""
    # bm25() is computed once per matching row (ORDER BY bm25(...) would call it again)
    rows = fetch(
        conn,
        "WITH m AS MATERIALIZED (SELECT blocks_fts.rowid AS r, -bm25(blocks_fts) AS s"
        f" FROM blocks_fts{act} WHERE blocks_fts MATCH :match{newest})"
        " SELECT b.id, t.s FROM (SELECT m.r, m.s FROM m ORDER BY m.s DESC LIMIT :k) t"
        " JOIN blocks b ON b.rowid = t.r ORDER BY t.s DESC, b.id",
        {"match": fts_match(words), "k": k, "act": act_id, "postings": postings},
    )
    return [(r[0], float(r[1])) for r in rows]
