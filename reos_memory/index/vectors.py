"""Embeddings of blocks and memories: computing them, storing them, and never mixing two models'
vectors.

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
from reos_memory.embeddings.runtime import BULK, EmbeddingService
from reos_memory.errors import Cancelled, EmbedderUnavailable, NotFound
from reos_memory.models import content_hash, now_iso
from reos_memory.store import Database
from reos_memory.store import keywords as kw_sql
from reos_memory.store import memories as memory_sql
from reos_memory.store import vectors as vec_sql
from reos_memory.store.keyword_index import KeywordIndex

if TYPE_CHECKING:  # numpy and the memory index load on first use, off the start-up path
    import numpy as np

    from reos_memory.store.vector_index import VectorSearch

CHUNK = 32  # texts per embedding call in bulk work: a query never waits for more than one chunk


@dataclass
class BatchReport:
    indexed: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)


class Indexer:
    """Embeds text and keeps every space's vectors (blocks, Squirrel memories), their vec0 tables
    and the in-memory indexes in step; one model for all of them."""

    def __init__(
        self,
        db: Database,
        embeddings: EmbeddingService,
        *,
        vector_search: str = "memory",
        index_shape: tuple[int, int, int, int] | None = None,
    ) -> None:
        self.db = db
        self.embeddings = embeddings
        self.vector_search = vector_search
        # (flat_max, lists, probe, snapshot_min) of the memory index
        self.index_shape = index_shape
        self._vectors: VectorSearch | None = None
        # block postings in memory when vectors are (a one-shot process asks FTS5 alone)
        self.keywords = KeywordIndex(db.read) if vector_search == "memory" else None
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="vector-stage")

    # -- model identity ----------------------------------------------------------------------

    def reconcile(self, embedder: Embedder) -> int:
        """Record this model, or switch the database to it; returns how many vectors were dropped.

        Runs once the embedder has loaded and before it is reported ready, so no vector is
        written before the database agrees on the model.
        """

        def tx(conn: apsw.Connection) -> int:
            meta = vec_sql.get_meta(conn)
            dropped = 0
            if meta.get("model_id") not in (None, embedder.model_id):
                dropped = vec_sql.delete_all_embeddings(conn) + memory_sql.drop_all_embeddings(conn)
            vec_sql.set_meta(conn, model_id=embedder.model_id, dimensions=embedder.dimensions)
            for space in vec_sql.SPACES:
                vec_sql.ensure_vector_table(conn, embedder.dimensions, space)
            return dropped

        dropped = self.db.write(tx)
        self.vectors().reset(embedder.dimensions)
        return dropped

    def usable_model(self) -> tuple[Embedder | None, str | None]:
        """(embedder, None) when vector search may run now, else (None, reason)."""
        emb = self.embeddings.wait_ready(timeout=60)
        if emb is None:
            return None, self.embeddings.detail or f"embedder {self.embeddings.state}"
        recorded = self.db.read(vec_sql.recorded_model)
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
        if not vec_sql.has_text(text) or self.embeddings.state in ("disabled", "failed"):
            return None
        try:
            emb = self.embeddings.embed([text], priority=0)
        except EmbedderUnavailable:
            return None
        return to_blob(emb[0]), str(self.embeddings.model_id)

    def write(
        self, conn: apsw.Connection, block_id: str, text: str, prepared: tuple[bytes, str] | None
    ) -> bool:
        """Inside a write transaction: store a prepared vector if the database uses its model.
        A block whose text became blank loses its vector (it must not stay findable)."""
        if not vec_sql.has_text(text):
            vec_sql.delete_embedding(conn, block_id)
            return False
        if prepared is None:
            return False
        blob, model_id = prepared
        return vec_sql.store_if_model(conn, block_id, blob, model_id, content_hash(text), now_iso())

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
            rows = self.db.read(lambda c: vec_sql.blocks_needing_index(c, act_id, 10**9))
            block_ids = [bid for _, bid in rows]
        report = BatchReport(total=len(block_ids))
        found = self.db.read(lambda c: vec_sql.texts_for(c, block_ids))
        work: list[tuple[str, str, str]] = []
        for bid in dict.fromkeys(block_ids):
            if bid not in found:
                report.failed += 1
                report.failures.append({"block_id": bid, "reason": "not_found"})
            elif not vec_sql.has_text(found[bid][0]):
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
            if vec_sql.recorded_model(conn) != emb.model_id:
                raise EmbedderUnavailable("the database switched to another model while indexing")
            now = now_iso()
            current = vec_sql.texts_for(conn, [w[0] for w in work])
            for (bid, _text, chash), blob in zip(work, vectors, strict=True):
                if bid not in current:
                    report.failed += 1
                    report.failures.append({"block_id": bid, "reason": "deleted_meanwhile"})
                elif current[bid][1] != chash:
                    report.failed += 1
                    report.failures.append({"block_id": bid, "reason": "changed_meanwhile"})
                else:
                    vec_sql.upsert_embedding(conn, bid, blob, emb.model_id, chash, now)
                    report.indexed += 1
            vec_sql.prune_changes(conn)

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
        return self.db.write(lambda c: vec_sql.delete_embedding(c, block_id))

    def pending_count(self) -> int:
        missing, stale = self.db.read(vec_sql.count_needing_index)
        return missing + stale + self.db.read(memory_sql.count_unembedded)

    def embed_memories(self, stop: Callable[[], bool], chunk: int = CHUNK) -> int:
        """Embed live memories that have no vector (written without a model, or before a switch)."""
        emb, _reason = self.usable_model()
        if emb is None:
            return 0
        done = 0
        while not stop():
            rows = self.db.read(lambda c: memory_sql.unembedded(c, chunk))
            if not rows:
                break
            vecs = self.embed_texts([text for _, text in rows])

            def tx(
                conn: apsw.Connection, rows: list[tuple[str, str]] = rows, vecs: Any = vecs
            ) -> int:
                if vec_sql.recorded_model(conn) != emb.model_id:
                    return 0
                return sum(
                    memory_sql.set_embedding(conn, mid, text, to_blob(v))
                    for (mid, text), v in zip(rows, vecs, strict=True)
                )

            stored = self.db.write(tx)
            done += stored
            if stored == 0:
                break  # changed under us: the next start retries
        return done

    def catch_up(self, log: Any, stop: Callable[[], bool], chunk: int = 256) -> int:
        """Index every unindexed or stale block and memory, a chunk per transaction (at start)."""
        done = self.embed_memories(stop)
        while not stop():
            rows = self.db.read(lambda c: vec_sql.blocks_needing_index(c, None, chunk))
            if not rows:
                return done
            report = self.index_blocks([bid for _, bid in rows])
            done += report.indexed
            if report.indexed == 0:
                return done  # only blocks changing or vanishing under us: next start retries
            log.info("catch_up_indexed", indexed=done)
        return done

    # -- vector search -----------------------------------------------------------------------

    def embed_async(self, texts: Sequence[str]) -> Future[np.ndarray]:
        """Queue texts for the embedder thread at query priority; the vectors come later."""
        return self.embeddings.submit(texts)

    def vector_stage(
        self, query: str, k: int, act_id: str | None
    ) -> Future[tuple[np.ndarray, list[tuple[str, float]]]]:
        """Embed the query and find its k nearest blocks on a helper thread (runs beside BM25)."""

        def run() -> tuple[np.ndarray, list[tuple[str, float]]]:
            qvec = self.embeddings.embed([query])[0]
            return qvec, self.knn(qvec, k, act_id)

        return self._pool.submit(run)

    def knn(
        self,
        query: np.ndarray,
        k: int,
        act_id: str | None = None,
        *,
        space: vec_sql.Space = vec_sql.BLOCKS,
        parts: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Top-k (id, cosine) of a space from the configured vector index, within `act_id` (blocks)
        or any of `parts` (a memory's project, '' for global)."""
        if act_id is not None:
            parts = [act_id]
        return self.vectors().knn(space, query, k, parts, self.db.read, self._dims())

    def knn_many(
        self,
        queries: np.ndarray,
        k: int,
        *,
        space: vec_sql.Space = vec_sql.BLOCKS,
        parts: Sequence[str] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Top-k (id, cosine) for each row of `queries`."""
        return self.vectors().knn_many(space, queries, k, parts, self.db.read, self._dims())

    def keyword_search(
        self,
        conn: apsw.Connection,
        words: Sequence[str],
        k: int,
        act_id: str | None,
        postings: int | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 top-k blocks (see keywords.keyword_search): from the postings in memory when they
        can answer, else from FTS5 - the same results either way."""
        if self.keywords is not None:
            found = self.keywords.search(conn, words, k, act_id, postings)
            if found is not None:
                return found
        return kw_sql.keyword_search(conn, words, k, act_id, postings)

    def similarities(
        self, query: np.ndarray, ids: Sequence[str], *, space: vec_sql.Space = vec_sql.BLOCKS
    ) -> dict[str, float]:
        """Cosine of the query to specific ids (for fusing keyword-only hits)."""
        return self.vectors().similarities(space, query, ids, self.db.read, self._dims())

    def drop_saved_index(self, space: vec_sql.Space) -> None:
        """Delete the space's saved index file (a vector erased for good must not linger there;
        the next process builds the index again)."""
        if self.vector_search == "memory":
            self.vectors().drop_saved(space)

    def index_status(self) -> dict[str, Any]:
        """What the block vectors' memory index holds now (without loading it)."""
        if self.vector_search == "sqlite":
            return {"kind": "sqlite", "vectors": 0}
        return self.vectors().status(vec_sql.BLOCKS)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def vectors(self) -> VectorSearch:
        if self._vectors is None:
            from reos_memory.store.vector_index import Shape, VectorSearch

            shape = Shape(*self.index_shape) if self.index_shape else Shape()
            self._vectors = VectorSearch(self.vector_search, shape, self.db.path, self.db.write)
        return self._vectors

    def _dims(self) -> int:
        emb = self.embeddings.wait_ready(timeout=60)
        return emb.dimensions if emb else 384
