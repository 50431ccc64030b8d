"""Block keyword search from postings held in memory, answering exactly as FTS5 would.

FTS5's bm25() reads each matching row's size and counts its instances: for a query that fills
its postings budget (5,000 rows) that is ~4.4 ms at 100K blocks, the largest part of a search.
This index keeps, per process, the postings (rowid, term frequency) of the terms queries used
(least recently used dropped past MAX_POSTINGS), every block's length and act, and reads FTS5's
row count and total length from its averages record; it scores with FTS5's formula in FTS5's
order of operations, so its results are the SQL path's (tests compare them).

Coherence: triggers log every block insert, delete and change of content or act in
`keyword_changes` (migration 0008). Inside the search's read transaction the index reads the
newest change number (one lookup); blocks changed since are re-read - length, act, and their
terms through a temp FTS5 table with the index's own tokenizer - and patched into the postings
a query reads, until MAX_DIRTY of them are folded into the cached postings at once. A reader
that fell behind the log's pruning starts afresh.

`search` returns None when it cannot answer exactly or cheaply, and the caller asks FTS5: a word
that is not exactly one term (FTS5 matches `foo_bar` as a phrase), a term in more than FETCH_MAX
blocks, a read transaction older than what the index already holds, or rowids too sparse for
arrays indexed by rowid.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import msgspec
import numpy as np

from reos_memory.store import keywords as kw_sql
from reos_memory.store import vectors as vec_sql
from reos_memory.store.blocks import max_rowid
from reos_memory.store.connection import Reader, fetch, scalar

K1 = 1.2  # FTS5's bm25() constants
B = 0.75
MAX_POSTINGS = 2_000_000  # cached postings (16 bytes each) across all terms
TERM_COST = 40  # what a cached term costs beyond its postings (arrays, key), in postings
# A term in more blocks than this is never cached (FTS5 answers the queries that use it): reading
# all its postings (~0.6 us each: 33 ms for 50,000 at 1M blocks) costs several FTS5 queries,
# which score only the budget's newest rows, and a few such terms would evict all the others.
FETCH_MAX = 20_000
MAX_DIRTY = 2_000  # changed blocks patched at query time before they are folded in
SPARSE = 4  # arrays are indexed by rowid: not when the largest rowid is past SPARSE x blocks
# Up to this many blocks (by largest rowid) the first search loads every block's length and act
# (~0.1 s at 100K); a larger store loads on a thread of its own (2.5 s at 1M) while FTS5 answers.
LOAD_INLINE_MAX = 200_000

_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class _Log:
    changes_table: str = "keyword_changes"
    changes_id: str = "block_rowid"


LOG = _Log()

Postings = tuple[np.ndarray, np.ndarray]  # rowids (int64, ascending), term frequencies (float64)


def varints(blob: bytes) -> list[int]:
    """The integers of an FTS5 record (SQLite varints: 7 bits a byte, the 9th byte whole)."""
    out = []
    i = 0
    while i < len(blob):
        v = 0
        for j in range(9):
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        out.append(v)
    return out


def _union(lists: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct rowids of several ascending lists."""
    every = np.sort(np.concatenate(lists))
    if len(every) < 2:
        return every
    return every[np.concatenate(([True], every[1:] != every[:-1]))]


def _size(blob: bytes | None) -> int:
    if not blob:
        return 0
    return blob[0] if blob[0] < 0x80 else varints(blob)[0]


class KeywordIndex:
    """One database's block postings, lengths and acts in this process."""

    def __init__(self, reader: Reader | None = None) -> None:
        self._reader = reader  # Database.read: a large store then loads on a thread of its own
        self._loading = False
        self._lock = threading.Lock()
        self._seq = -1  # the change number the lengths, acts and dirty set are up to date with
        self._usable = True
        self._len = np.zeros(0, dtype=np.float64)  # rowid -> token count (FTS5's docsize)
        self._act = np.zeros(0, dtype=np.int32)  # rowid -> act code (-1: no such block)
        self._acts: dict[str, int] = {}
        self._terms: OrderedDict[str, Postings] = OrderedDict()  # least recently used first
        self._cached = 0
        self._dirty: dict[int, dict[str, int]] = {}  # changed rowid -> its terms now ({}: gone)
        self._dirty_ids = np.zeros(0, dtype=np.int64)
        self._dirty_terms: dict[str, dict[int, int]] = {}  # term -> {changed rowid: frequency}
        self.loads = 0

    def status(self) -> dict[str, int]:
        # read without the lock: a load in progress must not hold up memory/stats
        return {"terms": len(self._terms), "postings": self._cached, "changed": len(self._dirty)}

    # -- searching ---------------------------------------------------------------------------

    def search(
        self,
        conn: apsw.Connection,
        words: Sequence[str],
        k: int,
        act_id: str | None,
        postings: int | None = None,
    ) -> list[tuple[str, float]] | None:
        """What `keywords.keyword_search` returns for the same arguments, or None (ask FTS5)."""
        if not words:
            return []
        if k <= 0 or (postings is not None and postings <= 0):
            return None  # SQL's LIMIT semantics for these: FTS5 answers
        if self._loading:
            return None
        if self._seq < 0 and self._reader is not None and max_rowid(conn) > LOAD_INLINE_MAX:
            self._load_in_background()
            return None
        with self._lock:  # scoring reads arrays a later sync may replace
            if not self._sync(conn):
                return None
            stems = kw_sql.stem_words(conn, words)
            if any(len(t) != 1 for t in stems):
                return None
            terms = [t[0] for t in stems]
            if not self._admit(conn, terms):
                return None
            return self._search(conn, terms, k, act_id, postings)

    def _load_in_background(self) -> None:
        with self._lock:
            if self._loading or self._seq >= 0:
                return
            self._loading = True
        reader = self._reader
        assert reader is not None

        def load(conn: apsw.Connection) -> None:
            with self._lock:
                self._sync(conn)

        def run() -> None:
            try:
                reader(load)
            except Exception:  # closed meanwhile: the next search loads again
                pass
            finally:
                self._loading = False

        threading.Thread(target=run, name="keyword-index-load", daemon=True).start()

    def _admit(self, conn: apsw.Connection, terms: list[str]) -> bool:
        """Whether the postings of every term are cached or worth reading now (see FETCH_MAX)."""
        new = {t for t in terms if t not in self._terms}
        if not new:
            return True
        return all(df <= FETCH_MAX for df in kw_sql.term_frequencies(conn, new).values())

    def _search(
        self,
        conn: apsw.Connection,
        terms: list[str],
        k: int,
        act_id: str | None,
        postings: int | None,
    ) -> list[tuple[str, float]] | None:
        avg = scalar(conn, "SELECT block FROM blocks_fts_data WHERE id = 1")
        n_rows, total = [*varints(avg), 0, 0][:2] if avg else (0, 0)
        if n_rows == 0:
            return []
        lists = [self._postings(conn, t) for t in terms]
        rows = lists[0][0] if len(lists) == 1 else _union([r for r, _ in lists])
        if len(rows) and (rows[-1] >= len(self._len) or (self._act[rows] == -1).any()):
            return None  # FTS5 holds a row no block has: its length is not known here
        if act_id:  # as the SQL path, an empty act filters nothing
            code = self._acts.get(act_id)
            if code is None:
                return []
            rows = rows[self._act[rows] == code]
        if postings is not None and len(rows) > postings:
            rows = rows[-postings:]  # the newest, as FTS5's ORDER BY rowid DESC LIMIT
        if len(rows) == 0:
            return []
        score = np.zeros(len(rows), dtype=np.float64)
        avgdl = float(total) / float(n_rows)
        for r, tf in lists:  # phrase by phrase, as bm25() sums them
            n_hit = len(r)
            idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            at = np.searchsorted(rows, r)
            hit = at < len(rows)
            hit[hit] &= rows[at[hit]] == r[hit]
            f, d = tf[hit], self._len[r[hit]]
            score[at[hit]] += idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
        if len(rows) > k:  # the k best; among equal scores the newest, as no order is promised
            kth = np.partition(score, len(score) - k)[len(score) - k]
            best = np.nonzero(score >= kth)[0]
            if len(best) > k:
                best = best[np.lexsort((-rows[best], -score[best]))[:k]]
            rows, score = rows[best], score[best]
        ids = {
            int(r): i
            for r, i in fetch(
                conn,
                "SELECT rowid, id FROM blocks WHERE rowid IN (SELECT value FROM json_each(?))",
                (_encode(rows.tolist()).decode(),),
            )
        }
        found = [(ids[int(r)], float(s)) for r, s in zip(rows, score, strict=True) if int(r) in ids]
        found.sort(key=lambda x: (-x[1], x[0]))
        return found[:k]

    def _postings(self, conn: apsw.Connection, term: str) -> Postings:
        """A term's postings now: cached (or read from FTS5), with the changed blocks patched in."""
        got = self._terms.get(term)
        if got is None:
            rows = fetch(
                conn,
                "SELECT doc, count(*) FROM temp.blocks_fts_instances WHERE term = ? GROUP BY doc",
                (term,),
            )
            got = (
                np.array([r[0] for r in rows], dtype=np.int64),
                np.array([r[1] for r in rows], dtype=np.float64),
            )
            self._terms[term] = got
            self._cached += len(got[0]) + TERM_COST
            self._evict()
        else:
            self._terms.move_to_end(term)
        return self._patched(term, got)

    def _evict(self) -> None:
        """Drop the least recently used terms past MAX_POSTINGS (keeping at least one)."""
        while self._cached > MAX_POSTINGS and len(self._terms) > 1:
            _, (old, _tf) = self._terms.popitem(last=False)
            self._cached -= len(old) + TERM_COST

    def _patched(self, term: str, got: Postings) -> Postings:
        if not self._dirty:
            return got
        r, tf = got
        keep = ~np.isin(r, self._dirty_ids, assume_unique=True)
        now = self._dirty_terms.get(term)
        if not now:
            return (r[keep], tf[keep])
        r2 = np.concatenate([r[keep], np.fromiter(now.keys(), dtype=np.int64, count=len(now))])
        tf2 = np.concatenate(
            [tf[keep], np.fromiter(now.values(), dtype=np.float64, count=len(now))]
        )
        order = np.argsort(r2, kind="stable")
        return (r2[order], tf2[order])

    # -- coherence ---------------------------------------------------------------------------

    def _sync(self, conn: apsw.Connection) -> bool:
        """Bring the index to this transaction's state; False when it cannot (older snapshot)."""
        if not self._usable:
            return False
        kw_sql.ensure_temp_tables(conn)
        seq = vec_sql.change_seq(conn, LOG)
        if seq == self._seq:
            return True
        if seq < self._seq:
            return False  # another thread's newer transaction already moved the index on
        oldest, changed = vec_sql.changes_since(conn, self._seq, LOG)
        if self._seq < 0 or (oldest is not None and oldest > self._seq + 1):
            self._load(conn)
        else:
            self._patch(conn, [int(r) for r in changed])
            if len(self._dirty) > MAX_DIRTY:
                self._fold()
        self._seq = seq
        return self._usable

    def _load(self, conn: apsw.Connection) -> None:
        """Every block's length and act; the cached postings start afresh."""
        self.loads += 1
        rows = fetch(
            conn,
            "SELECT b.rowid, b.act_id, d.sz FROM blocks b JOIN blocks_fts_docsize d ON d.id = b.rowid",
        )
        top = max((r[0] for r in rows), default=0)
        if top > SPARSE * len(rows) + 1_000_000 or min((r[0] for r in rows), default=0) < 0:
            self._usable = False  # rowids far apart (explicitly set): FTS5 answers instead
            return
        self._len = np.zeros(top + 1, dtype=np.float64)
        self._act = np.full(top + 1, -1, dtype=np.int32)
        self._acts = {}
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._len[rowids] = [_size(r[2]) for r in rows]
        self._act[rowids] = [self._code(r[1]) for r in rows]
        self._terms.clear()
        self._cached = 0
        self._dirty, self._dirty_terms = {}, {}
        self._dirty_ids = np.zeros(0, dtype=np.int64)

    def _code(self, act_id: str | None) -> int:
        if act_id is None:
            return -2  # a block outside any act: matched, never by an act filter
        return self._acts.setdefault(act_id, len(self._acts))

    def _patch(self, conn: apsw.Connection, changed: list[int]) -> None:
        """Re-read the changed blocks: their length and act, and their terms now."""
        if not changed:
            return
        now = {
            int(r[0]): r
            for r in fetch(
                conn,
                "SELECT b.rowid, b.act_id, d.sz, b.content FROM blocks b"
                " JOIN blocks_fts_docsize d ON d.id = b.rowid"
                " WHERE b.rowid IN (SELECT value FROM json_each(?))",
                (_encode(changed).decode(),),
            )
        }
        top = max(changed)
        if min(changed) < 0 or top > SPARSE * len(self._len) + 1_000_000:
            self._usable = False  # rowids far apart (a load kept a dump's): FTS5 answers
            return
        if top >= len(self._len):
            grow = max(top + 1, 2 * len(self._len))
            self._len = np.concatenate([self._len, np.zeros(grow - len(self._len))])
            self._act = np.concatenate(
                [self._act, np.full(grow - len(self._act), -1, dtype=np.int32)]
            )
        terms = self._terms_of(conn, {r: row[3] or "" for r, row in now.items()})
        for r in changed:
            for t in self._dirty.get(r, {}):
                self._dirty_terms[t].pop(r, None)
            row = now.get(r)
            if row is None:  # deleted
                self._len[r], self._act[r] = 0.0, -1
                self._dirty[r] = {}
                continue
            self._len[r], self._act[r] = float(_size(row[2])), self._code(row[1])
            self._dirty[r] = terms.get(r, {})
            for t, f in self._dirty[r].items():
                self._dirty_terms.setdefault(t, {})[r] = f
        self._dirty_ids = np.array(sorted(self._dirty), dtype=np.int64)

    @staticmethod
    def _terms_of(conn: apsw.Connection, texts: dict[int, str]) -> dict[int, dict[str, int]]:
        """Each text's terms and their frequencies, by the index's own tokenizer."""
        conn.execute("DELETE FROM temp.block_terms")
        conn.executemany(
            "INSERT INTO temp.block_terms(rowid, c) VALUES (?, ?)", list(texts.items())
        )
        out: dict[int, dict[str, int]] = {}
        for doc, term, n in fetch(
            conn, "SELECT doc, term, count(*) FROM temp.block_terms_v GROUP BY doc, term"
        ):
            out.setdefault(int(doc), {})[term] = int(n)
        conn.execute("DELETE FROM temp.block_terms")
        return out

    def _fold(self) -> None:
        """Patch the changed blocks into every cached term for good; nothing is dirty after."""
        for term, got in list(self._terms.items()):
            new = self._patched(term, got)
            self._cached += len(new[0]) - len(got[0])
            self._terms[term] = new
        self._dirty, self._dirty_terms = {}, {}
        self._dirty_ids = np.zeros(0, dtype=np.int64)
        self._evict()
