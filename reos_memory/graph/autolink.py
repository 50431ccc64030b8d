"""Auto-linking: `similar_to` edges between blocks whose embeddings are close.

Computed in batches: a chunk of rows times the whole matrix at a time (one matrix product per
chunk, never one query per block), chunks spread over two threads, and only the similarities
above the threshold are kept before choosing each block's best `max_links`. Edges are written in
one transaction at the end, so a cancelled run writes nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import apsw

from reos_memory.errors import Cancelled, EmbedderUnavailable
from reos_memory.graph import api
from reos_memory.index.vectors import Indexer
from reos_memory.models import new_id, now_iso
from reos_memory.store import Database
from reos_memory.store import relationships as rel_sql
from reos_memory.store import vectors as vec_sql

if TYPE_CHECKING:
    import numpy as np

CHUNK_CELLS = 25_000_000  # similarities per chunk: ~100 MB of float32, two chunks in flight


def auto_link(
    db: Database,
    indexer: Indexer,
    p: api.AutoLinkParams,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> api.AutoLinkResult:
    """Link blocks with cosine >= threshold by `similar_to` edges (source=embedding).

    Each block ends with at most `max_links` similar_to edges (in either direction, existing ones
    included), its most similar neighbours first; a pair already joined is never linked again;
    confidence is the similarity.
    """
    t0 = time.perf_counter()
    emb, reason = indexer.usable_model()
    if emb is None:
        raise EmbedderUnavailable(f"auto_link needs the block embeddings: {reason}")
    ids, matrix = db.read(lambda c: _load(c, p.act_id, emb.dimensions))
    n = len(ids)
    picker = _Picker(ids, db.read(lambda c: rel_sql.pairs_of_type(c, "similar_to")), p.max_links)
    step = max(64, min(1024, CHUNK_CELLS // max(n, 1)))

    def chunk(start: int) -> list[tuple[int, list[tuple[int, float]]]]:
        if cancelled and cancelled():
            return []  # the run is over: its result is never used
        return _similar_rows(matrix, start, step, p.threshold)

    done = 0
    pool = ThreadPoolExecutor(2, thread_name_prefix="auto-link")
    try:
        for result in pool.map(chunk, range(0, n, step)):
            if cancelled and cancelled():
                raise Cancelled("auto_link was cancelled; nothing was written")
            picker.take(result)
            done = min(n, done + step)
            if progress:
                progress(done, n)
    finally:
        # a cancelled (or failed) run waits for the chunks being computed, never the queued ones
        pool.shutdown(wait=True, cancel_futures=True)

    created = _write(db, ids, picker.chosen, cancelled) if picker.chosen else 0
    return api.AutoLinkResult(
        relationships_created=created,
        blocks_examined=n,
        candidate_pairs=picker.candidates,
        already_linked=picker.linked,
        seconds=round(time.perf_counter() - t0, 3),
    )


def _similar_rows(
    matrix: np.ndarray, start: int, step: int, threshold: float
) -> list[tuple[int, list[tuple[int, float]]]]:
    """Rows start..start+step of the similarity matrix: for each row with a similarity >=
    threshold, its index and those neighbours (not itself), the most similar first."""
    import numpy as np  # loaded on first use, off the start-up path

    sims = matrix[start : start + step] @ matrix.T
    rows, cols = np.nonzero(sims >= threshold)
    picked: list[tuple[int, list[tuple[int, float]]]] = []
    if rows.size == 0:
        return picked
    vals = sims[rows, cols]
    order = np.lexsort((-vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    bounds = np.flatnonzero(np.diff(rows)) + 1
    for r_idx, c_idx, v in zip(
        np.split(rows, bounds), np.split(cols, bounds), np.split(vals, bounds), strict=True
    ):
        i = start + int(r_idx[0])
        picked.append((i, [(int(j), float(s)) for j, s in zip(c_idx, v, strict=True) if j != i]))
    return picked


class _Picker:
    """Chooses the pairs to link, in the order the rows come, counting what it passes over.

    max_links bounds each block's similar_to edges in all (existing ones count), so a second run
    adds nothing and no block becomes a hub of near-duplicates.
    """

    def __init__(self, ids: list[str], existing: set[tuple[str, str]], max_links: int) -> None:
        self.ids = ids
        self.existing = existing
        self.max_links = max_links
        self.degree: Counter[str] = Counter()
        for a, b in existing:
            self.degree[a] += 1
            self.degree[b] += 1
        self.chosen: list[tuple[int, int, float]] = []
        self.candidates = 0
        self.linked = 0

    def take(self, rows: list[tuple[int, list[tuple[int, float]]]]) -> None:
        """Each row's neighbours, most similar first, until the row's block is full."""
        for i, neighbours in rows:
            self.candidates += len(neighbours)
            a = self.ids[i]
            for j, sim in neighbours:
                if self.degree[a] >= self.max_links:
                    break
                self._consider(a, i, j, sim)

    def _consider(self, a: str, i: int, j: int, sim: float) -> None:
        b = self.ids[j]
        if (a, b) in self.existing or (b, a) in self.existing:
            self.linked += 1
            return
        if self.degree[b] >= self.max_links:
            return
        self.existing.add((a, b))
        self.degree[a] += 1
        self.degree[b] += 1
        self.chosen.append((i, j, sim))


def _write(
    db: Database,
    ids: list[str],
    chosen: list[tuple[int, int, float]],
    cancelled: Callable[[], bool] | None,
) -> int:
    """The chosen edges in one transaction (none when the run was cancelled meanwhile)."""

    def tx(conn: apsw.Connection) -> int:
        if cancelled and cancelled():
            raise Cancelled("auto_link was cancelled; nothing was written")
        now = now_iso()
        return rel_sql.insert_similar(
            conn,
            ((new_id("rel"), ids[i], ids[j], round(min(1.0, sim), 6), now) for i, j, sim in chosen),
        )

    return db.write(tx)


def _load(conn: apsw.Connection, act_id: str | None, dims: int) -> tuple[list[str], np.ndarray]:
    import numpy as np

    rows = sorted(
        (bid, blob)
        for bid, act, blob in vec_sql.embedding_rows(conn)
        if (act_id is None or act == act_id) and len(blob) == 4 * dims
    )
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(len(rows), dims)
    return [bid for bid, _ in rows], matrix
