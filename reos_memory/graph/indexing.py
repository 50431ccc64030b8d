"""Block embeddings: computing them, storing them, and never mixing two models' vectors.

The database records which model its vectors come from (`embedding_meta`). Every write checks,
inside its transaction, that the record still names this process's model; a process whose model
differs writes no vectors and does no vector search until it is the one recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from reos_memory.embeddings.base import Embedder, to_blob
from reos_memory.embeddings.service import BULK, EmbeddingService
from reos_memory.errors import Cancelled, EmbedderUnavailable, NotFound
from reos_memory.models import content_hash, now_iso
from reos_memory.store import Database, scalar
from reos_memory.store import vectors as sql

if TYPE_CHECKING:  # numpy and the memory index load on first use, off the start-up path
    import numpy as np

    from reos_memory.store.vector_index import VectorIndex

CHUNK = 32  # texts per embedding call in bulk work: a query never waits for more than one chunk


@dataclass
class BatchReport:
    indexed: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)


class Indexer:
    """Embeds block text and keeps block_embeddings, the vec0 table and the memory index in step."""

    def __init__(
        self, db: Database, embeddings: EmbeddingService, *, vector_search: str = "memory"
    ) -> None:
        self.db = db
        self.embeddings = embeddings
        self.vector_search = vector_search
        self._index: VectorIndex | None = None
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="vector-stage")

    # -- model identity ----------------------------------------------------------------------

    def reconcile(self, embedder: Embedder) -> int:
        """Record this model, or switch the database to it; returns how many vectors were dropped.

        Runs once the embedder has loaded and before it is reported ready, so no vector is
        written before the database agrees on the model.
        """

        def tx(conn: apsw.Connection) -> int:
            meta = sql.get_meta(conn)
            dropped = 0
            if meta.get("model_id") not in (None, embedder.model_id):
                dropped = sql.delete_all_embeddings(conn)
            sql.set_meta(conn, model_id=embedder.model_id, dimensions=embedder.dimensions)
            sql.ensure_vector_table(conn, embedder.dimensions)
            return dropped

        dropped = self.db.write(tx)
        from reos_memory.store.vector_index import VectorIndex

        self._index = VectorIndex(embedder.dimensions)
        return dropped

    def usable_model(self) -> tuple[Embedder | None, str | None]:
        """(embedder, None) when vector search may run now, else (None, reason)."""
        emb = self.embeddings.wait_ready(timeout=60)
        if emb is None:
            return None, self.embeddings.detail or f"embedder {self.embeddings.state}"
        recorded = self.db.read(sql.recorded_model)
        if recorded != emb.model_id:
            return None, (
                f"the database's vectors come from {recorded!r} but this process runs {emb.model_id!r};"
                " restart it with the same embedder as the other process"
            )
        return emb, None

    # -- writing vectors ---------------------------------------------------------------------

    def embed_texts(self, texts: Sequence[str], *, priority: int = BULK) -> np.ndarray:
        return self.embeddings.embed(texts, priority=priority)

    def prepare(self, text: str) -> tuple[bytes, str] | None:
        """The (vector blob, model id) for a block's text, or None if it cannot be embedded now."""
        if not text.strip() or self.embeddings.state in ("disabled", "failed"):
            return None
        try:
            emb = self.embeddings.embed([text], priority=0)
        except EmbedderUnavailable:
            return None
        return to_blob(emb[0]), str(self.embeddings.model_id)

    def write(
        self, conn: apsw.Connection, block_id: str, text: str, prepared: tuple[bytes, str] | None
    ) -> bool:
        """Inside a write transaction: store a prepared vector if the database uses its model."""
        if prepared is None:
            return False
        blob, model_id = prepared
        return sql.store_if_model(conn, block_id, blob, model_id, content_hash(text), now_iso())

    def index_blocks(
        self,
        block_ids: Sequence[str] | None,
        *,
        act_id: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> BatchReport:
        """Embed the given blocks (or every unindexed/stale one) and store them in one transaction.

        Vectors are computed first, in chunks; the write is one transaction, so a cancelled or
        failed run stores nothing. Blocks whose text changed meanwhile are left for next time.
        """
        emb, reason = self.usable_model()
        if emb is None:
            raise EmbedderUnavailable(f"cannot index: {reason}")
        if block_ids is None:
            rows = self.db.read(lambda c: sql.blocks_needing_index(c, act_id, 10**9))
            block_ids = [bid for _, bid in rows]
        report = BatchReport(total=len(block_ids))
        found = self.db.read(lambda c: sql.texts_for(c, block_ids))
        work: list[tuple[str, str, str]] = []
        for bid in dict.fromkeys(block_ids):
            if bid not in found:
                report.failed += 1
                report.failures.append({"block_id": bid, "reason": "not_found"})
            elif not found[bid][0].strip():
                report.skipped += 1
            else:
                work.append((bid, found[bid][0], found[bid][1]))
        vectors: list[bytes] = []
        for start in range(0, len(work), CHUNK):
            if cancelled and cancelled():
                raise Cancelled("indexing was cancelled; nothing was written")
            chunk = work[start : start + CHUNK]
            vecs = self.embed_texts([t for _, t, _ in chunk])
            vectors.extend(to_blob(v) for v in vecs)
            if progress:
                progress(start + len(chunk), len(work))

        def tx(conn: apsw.Connection) -> None:
            if cancelled and cancelled():
                raise Cancelled("indexing was cancelled; nothing was written")
            if sql.recorded_model(conn) != emb.model_id:
                raise EmbedderUnavailable("the database switched to another model while indexing")
            now = now_iso()
            current = sql.texts_for(conn, [w[0] for w in work])
            for (bid, _text, chash), blob in zip(work, vectors, strict=True):
                if bid not in current:
                    report.failed += 1
                    report.failures.append({"block_id": bid, "reason": "deleted_meanwhile"})
                elif current[bid][1] != chash:
                    report.failed += 1
                    report.failures.append({"block_id": bid, "reason": "changed_meanwhile"})
                else:
                    sql.upsert_embedding(conn, bid, blob, emb.model_id, chash, now)
                    report.indexed += 1
            sql.prune_changes(conn)

        if work:
            self.db.write(tx)
        return report

    def index_one(self, block_id: str) -> str | None:
        """Embed one block now; None when indexed, else why not ("empty_content", "changed_meanwhile")."""
        report = self.index_blocks([block_id])
        if report.indexed:
            return None
        if report.skipped:
            return "empty_content"
        reason = report.failures[0]["reason"]
        if reason in ("not_found", "deleted_meanwhile"):
            raise NotFound("block", block_id, field="block_id")
        return reason

    def remove(self, block_id: str) -> bool:
        return self.db.write(lambda c: sql.delete_embedding(c, block_id))

    def pending_count(self) -> int:
        return int(
            self.db.read(
                lambda c: scalar(
                    c,
                    "SELECT count(*) FROM blocks b LEFT JOIN block_embeddings e ON e.block_id = b.id"
                    " WHERE b.content != '' AND (e.block_id IS NULL OR e.content_hash != b.content_hash)",
                )
            )
        )

    def catch_up(self, log: Any, stop: Callable[[], bool], chunk: int = 256) -> int:
        """Index every unindexed or stale block, a chunk per transaction (background, at start)."""
        done = 0
        while not stop():
            rows = self.db.read(lambda c: sql.blocks_needing_index(c, None, chunk))
            if not rows:
                return done
            report = self.index_blocks([bid for _, bid in rows])
            done += report.indexed
            if report.indexed == 0:
                return done  # only blocks changing or vanishing under us: next start retries
            log.info("catch_up_indexed", indexed=done)
        return done

    # -- vector search -----------------------------------------------------------------------

    def vector_stage(
        self, query: str, k: int, act_id: str | None
    ) -> Future[tuple[np.ndarray, list[tuple[str, float]]]]:
        """Embed the query and find its k nearest blocks on a helper thread (runs beside BM25)."""

        def run() -> tuple[np.ndarray, list[tuple[str, float]]]:
            qvec = self.embeddings.embed([query])[0]
            return qvec, self.knn(qvec, k, act_id)

        return self._pool.submit(run)

    def knn(self, query: np.ndarray, k: int, act_id: str | None) -> list[tuple[str, float]]:
        """Top-k (block_id, cosine) from the configured vector index."""
        if self.vector_search == "sqlite":
            rows = self.db.read(lambda c: sql.knn_sqlite(c, to_blob(query), k, act_id))
            # unit vectors: |a-b|^2 = 2 - 2cos
            return [(bid, 1.0 - d * d / 2.0) for bid, d in rows]
        index = self.memory_index()
        return index.search(query, k, act_id)

    def similarities(self, query: np.ndarray, block_ids: Sequence[str]) -> dict[str, float]:
        """Cosine of the query to specific blocks (for fusing keyword-only hits)."""
        if self.vector_search == "sqlite":
            rows = self.db.read(lambda c: sql.embedding_rows(c, block_ids))
            import numpy as np

            return {
                bid: float(np.frombuffer(blob, dtype="<f4") @ query) for bid, _act, blob in rows
            }
        return self.memory_index().similarities(query, block_ids)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def memory_index(self) -> VectorIndex:
        index = self._index
        if index is None:
            emb = self.embeddings.wait_ready(timeout=60)
            dims = emb.dimensions if emb else 384
            from reos_memory.store.vector_index import VectorIndex

            index = self._index = VectorIndex(dims)
        self.db.read(index.sync)
        return index
