"""Vector indexes in memory (faiss, float16 codes), kept coherent with the database.

Measured here (2 cores, 384 dimensions): vec0 brute force takes ~7 ms for top-10 of 10K vectors
and ~82 ms of 100K; a float32 numpy product takes 8.7 ms at 100K and 79 ms at 1M. So a space's
vectors are held as float16 codes in faiss (half the memory of float32, scanned with AVX2):

* up to `Shape.flat_max` vectors, every code is scanned (exact up to float16 rounding);
* beyond it, an inverted file (`Shape.lists` k-means lists, `Shape.probe` of them searched; more
  when a partition filter leaves few rows) - at 1M vectors 2.6 ms with recall@10 0.999 against
  exact search.

Similarities come from the float16 codes: within ~2e-4 of the float32 cosine (rescoring from the
stored float32 vectors was measured at 1.5-3 ms per query at 100K blocks, mostly page reads, and
changed no ranking). Every write to a space's vectors - from this process or any other - is
logged by a trigger in the space's change table; before each search the index reads the newest
change number (one indexed lookup) and applies what it has not seen.

Building an inverted file reads every vector and trains k-means (5 s at 100K vectors, 24 s at
1M), so after a build of `Shape.snapshot_min` vectors or more the index is written next to the
database (`<db>.vectors.<space>`, 0600, replaced atomically) with the change number it holds.
A process's first search loads that file and applies the changes logged since - unless the
file is for another database file, model, dimension or shape, or the log no longer reaches back
to it, in which case it builds from the vectors as before.
"""

from __future__ import annotations

import contextlib
import math
import os
import struct
import threading
import uuid
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import msgspec
import numpy as np

from reos_memory import heap
from reos_memory.store import vectors as vec_sql
from reos_memory.store.connection import Reader, create_private, remove_stale_siblings

TRAIN_PER_LIST = 60  # k-means sample: this many vectors per inverted list
LOAD_CHUNK = 10_000


@dataclass(frozen=True)
class Shape:
    """How a memory index is built (config `vector_flat_max`, `vector_lists`, `vector_probe`)."""

    flat_max: int = 50_000  # vectors: above this, an inverted file instead of a full scan
    lists: int = 1024  # inverted lists (k-means centroids)
    probe: int = 32  # lists searched per query; divided by sqrt(share a partition filter keeps)
    snapshot_min: int = 20_000  # vectors: a build this large is saved for the next process


SNAPSHOT_MAGIC = b"REOSVIX1"
_LENGTHS = struct.Struct("<QQQQ")  # header, faiss index, ids, partitions


class _SnapshotMeta(msgspec.Struct, kw_only=True):
    """What a saved index holds and what it must match to be used."""

    token: str  # also recorded in the database when the file was saved
    identity: list[Any]  # VectorIndex._identity at `seq`
    seq: int  # the change number the index is up to date with
    kind: str
    rebuild_at: int
    parts: list[str]  # partition names by code
    crc32: int  # of the payload: the faiss index, the ids, the partitions


def saved_index_path(db_path: str | None, space: vec_sql.Space) -> str | None:
    """Where a space's index is saved beside the database (None: an in-memory database)."""
    if db_path is None or db_path == ":memory:":
        return None
    return f"{db_path}.vectors.{space.name}"


def _crc(pieces: Sequence[bytes | memoryview]) -> int:
    """CRC32 of the pieces one after the other."""
    crc = 0
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    return crc


def _plain(value: Any) -> Any:
    """`value` as it reads back from JSON (tuples become lists)."""
    return msgspec.json.decode(msgspec.json.encode(value))


def _faiss() -> Any:
    import faiss

    return faiss


def _compact_lists(ivf: Any) -> None:
    """Copy an inverted file's lists into lists of exactly their size (same order, so the
    direct map's offsets stay right)."""
    faiss = _faiss()
    old = ivf.invlists
    new = faiss.ArrayInvertedLists(old.nlist, old.code_size)
    for lst in range(old.nlist):
        size = old.list_size(lst)
        if size:
            new.add_entries(lst, size, old.get_ids(lst), old.get_codes(lst))
    ivf.replace_invlists(new, True)
    new.this.disown()


class VectorIndex:
    """One space's vectors as float16 codes in a faiss index; faiss ids are our row numbers."""

    def __init__(
        self,
        dims: int,
        space: vec_sql.Space = vec_sql.BLOCKS,
        shape: Shape = Shape(),
        db_path: str | None = None,
    ) -> None:
        self.dims = dims
        self.space = space
        self.shape = shape
        self.db_path = db_path  # None: never saved or loaded from a file
        self._unsaved: tuple[int, tuple[Any, ...]] | None = None  # (seq, identity) to save
        self.loaded_from = ""  # "vectors" (built) or "snapshot" (read from the saved file)
        self._lock = threading.RLock()
        self._index: Any = None  # a faiss index (flat codes in an id map, or an inverted file)
        self.kind = "flat"  # or "ivf"
        self._ids: list[str | None] = []  # row -> id (None: a free row)
        self._row: dict[str, int] = {}
        self._free: list[int] = []
        self._acts = np.zeros(0, dtype=np.int32)  # row -> partition code (-1: free)
        self._act_codes: dict[str, int] = {}
        self._masks: dict[tuple[int, ...], tuple[np.ndarray, Any, int]] = {}
        self._rebuild_at = 0
        self._seq = -1  # nothing loaded yet
        self.model_id: str | None = None
        self.reloads = 0

    def __len__(self) -> int:
        return len(self._row)

    def status(self) -> dict[str, Any]:
        with self._lock:
            if self._index is None:
                return {"kind": "not_loaded", "vectors": 0}
            out: dict[str, Any] = {
                "kind": self.kind,
                "vectors": len(self._row),
                "loaded_from": self.loaded_from,
            }
            if self.kind == "ivf":
                out["lists"] = int(self._index.nlist)
                out["probe"] = int(self._index.nprobe)
            return out

    # -- coherence ---------------------------------------------------------------------------

    def sync(self, conn: apsw.Connection) -> None:
        """Apply every embedding change made since the last sync (by any process)."""
        with self._lock:
            seq = vec_sql.change_seq(conn, self.space)
            model = vec_sql.recorded_model(conn)
            if seq == self._seq and model == self.model_id:
                return
            if self._seq < 0 and model is not None:
                self._restore(conn, seq, model)
            oldest, changed = vec_sql.changes_since(conn, self._seq, self.space)
            built = False
            if (
                self._seq < 0
                or model != self.model_id
                or (oldest is not None and oldest > self._seq + 1)
            ):
                self._reload(conn)
                built = True
            else:
                self._apply(vec_sql.embedding_rows(conn, changed, self.space), changed)
                if len(self._row) > self._rebuild_at:
                    self._reload(conn)  # past a full scan, or the lists' training: train anew
                    built = True
            self._seq = seq
            self.model_id = model
            big = len(self._row) >= self.shape.snapshot_min
            if built and big and model is not None and self.snapshot_path is not None:
                ident = self._identity(conn, model, seq)  # read in the build's transaction
                self._unsaved = None if ident is None else (seq, ident)

    # -- the saved index ---------------------------------------------------------------------

    @property
    def snapshot_path(self) -> str | None:
        return saved_index_path(self.db_path, self.space)

    @property
    def token_key(self) -> str:
        return f"vector_snapshot_{self.space.name}"

    def _identity(self, conn: apsw.Connection, model: str, seq: int) -> tuple[Any, ...] | None:
        """What a saved index must match: this space, dimensions, model, shape, the database
        file, and the id of change `seq`."""
        assert self.db_path is not None
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return (
            self.space.name,
            self.dims,
            model,
            (self.shape.flat_max, self.shape.lists, self.shape.probe),
            (st.st_dev, st.st_ino),
            vec_sql.change_at(conn, seq, self.space) if seq else None,
        )

    def save(self, write: Callable[[Callable[[apsw.Connection], Any]], Any]) -> None:
        """Write the index the last sync built for the next process to load; `write` is
        Database.write. The file carries a random token that is also recorded in the database
        (once the file is complete, before it replaces the old one): a copy of the database
        from before the save, or another database at the same path, never matches it."""
        path = self.snapshot_path
        with self._lock:
            pending, self._unsaved = self._unsaved, None
            if pending is None or path is None or self._index is None or pending[0] != self._seq:
                return  # nothing built, or changes applied since: the identity no longer fits
            token = uuid.uuid4().hex
            blob = _faiss().serialize_index(self._index)
            payload: list[bytes | memoryview] = [
                memoryview(blob),
                msgspec.json.encode(self._ids),
                np.ascontiguousarray(self._acts[: len(self._ids)], dtype="<i4").tobytes(),
            ]
            header = msgspec.json.encode(
                _SnapshotMeta(
                    token=token,
                    identity=list(pending[1]),
                    seq=self._seq,
                    kind=self.kind,
                    rebuild_at=self._rebuild_at,
                    parts=sorted(self._act_codes, key=self._act_codes.__getitem__),
                    crc32=_crc(payload),
                )
            )
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        try:
            remove_stale_siblings(path, ".tmp")
            create_private(tmp)  # vectors say what the text says: as private as the database
            with open(tmp, "wb") as f:
                f.write(SNAPSHOT_MAGIC)
                f.write(_LENGTHS.pack(len(header), *(len(p) for p in payload)))
                f.write(header)
                for piece in payload:
                    f.write(piece)
                f.flush()
                os.fsync(f.fileno())
            write(lambda c: vec_sql.set_meta(c, **{self.token_key: token}))
            os.replace(tmp, path)
        except (OSError, apsw.Error):
            with contextlib.suppress(OSError):
                os.unlink(tmp)  # a read-only or full disk only costs the next process a build
        finally:
            del payload, blob
            heap.give_back_freed()

    def _restore(self, conn: apsw.Connection, seq: int, model: str) -> bool:
        """Load the saved index if it is the one this database recorded, made from this
        database file, model and shape, and the change log still reaches back to it; False
        (nothing changed) otherwise."""
        path = self.snapshot_path
        if path is None or not os.path.exists(path):
            return False
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if f.read(len(SNAPSHOT_MAGIC)) != SNAPSHOT_MAGIC:
                    return False
                lengths = _LENGTHS.unpack(f.read(_LENGTHS.size))
                if len(SNAPSHOT_MAGIC) + _LENGTHS.size + sum(lengths) != size:
                    return False  # torn, or not what its header says
                meta = msgspec.json.decode(f.read(lengths[0]), type=_SnapshotMeta)
                recorded = vec_sql.get_meta(conn).get(self.token_key)
                if (
                    recorded != meta.token
                    or meta.seq > seq
                    or _plain(self._identity(conn, model, meta.seq)) != meta.identity
                ):
                    return False
                payload = [f.read(n) for n in lengths[1:]]
            if _crc(payload) != meta.crc32:
                return False  # damaged on disk
            blob = np.frombuffer(payload[0], dtype=np.uint8)
            ids = msgspec.json.decode(payload[1], type=list[str | None])
            acts = np.frombuffer(payload[2], dtype="<i4").astype(np.int32)
            if len(acts) != len(ids):
                return False
            index = _faiss().deserialize_index(blob)
            del payload, blob
        except Exception:  # a damaged file costs a build, never the search
            return False
        finally:
            heap.give_back_freed()
        parts = {name: code for code, name in enumerate(meta.parts)}
        self._install(index, meta.kind, ids, acts, parts, meta.rebuild_at, "snapshot")
        self._seq, self.model_id = meta.seq, model
        return True

    def _install(
        self,
        index: Any,
        kind: str,
        ids: list[str | None],
        acts: np.ndarray,
        act_codes: dict[str, int],
        rebuild_at: int,
        loaded_from: str,
    ) -> None:
        """Make `index` (faiss ids = rows of `ids`, None for a free row) the one searched."""
        self._index, self.kind = index, kind
        self._ids = ids
        self._row = {b: i for i, b in enumerate(ids) if b is not None}
        self._free = [i for i, b in enumerate(ids) if b is None]
        self._acts, self._act_codes = acts, act_codes
        self._masks = {}
        self._rebuild_at = rebuild_at
        self.loaded_from = loaded_from

    def _reload(self, conn: apsw.Connection) -> None:
        self._build(conn)
        heap.give_back_freed()  # the build's temporaries are gone by now

    def _build(self, conn: apsw.Connection) -> None:
        """Rebuild from every stored vector, streamed (never a list of all the blobs)."""
        total = vec_sql.count_vectors(conn, self.space)
        codes = np.zeros((total, self.dims), dtype=np.float16)
        ids: list[str] = []
        acts: list[str] = []
        for chunk in vec_sql.embedding_chunks(conn, self.space, LOAD_CHUNK):
            for block_id, act_id, blob in chunk:
                if len(ids) == total or len(blob) != 4 * self.dims:
                    continue  # another model's vector is never mixed in
                codes[len(ids)] = np.frombuffer(blob, dtype="<f4")
                ids.append(block_id)
                acts.append(act_id)
        n = len(ids)
        index, kind = self._new_index(codes[:n])
        act_codes: dict[str, int] = {}
        rows = np.array([act_codes.setdefault(a, len(act_codes)) for a in acts], dtype=np.int32)
        # a full scan's codes in one call (one exact allocation); an inverted file's in chunks,
        # then its lists are copied to exact size (they grow by doubling: ~1.7x the codes)
        step = max(1, n if kind == "flat" else LOAD_CHUNK)
        for start in range(0, n, step):
            part = codes[start : start + step].astype(np.float32)
            index.add_with_ids(part, np.arange(start, start + len(part), dtype=np.int64))
        if kind == "ivf":
            _compact_lists(index)
        # a full scan turns into an inverted file past flat_max; lists are trained again when
        # the vectors have grown fourfold since their training
        rebuild_at = self.shape.flat_max if kind == "flat" else 4 * max(n, 1000)
        self._install(index, kind, list(ids), rows, act_codes, rebuild_at, "vectors")
        self.reloads += 1

    def _new_index(self, vectors: np.ndarray) -> tuple[Any, str]:
        """An empty index for this many vectors: a full scan, or an inverted file trained on them."""
        faiss = _faiss()
        fp16 = faiss.ScalarQuantizer.QT_fp16
        lists = min(self.shape.lists, max(1, len(vectors) // 39))  # k-means wants 39 per list
        if len(vectors) <= self.shape.flat_max:
            flat = faiss.IndexScalarQuantizer(self.dims, fp16, faiss.METRIC_INNER_PRODUCT)
            index = faiss.IndexIDMap2(flat)
            index.own_fields = True
            flat.this.disown()
            return index, "flat"
        quantizer = faiss.IndexFlatIP(self.dims)
        ivf = faiss.IndexIVFScalarQuantizer(
            quantizer, self.dims, lists, fp16, faiss.METRIC_INNER_PRODUCT, False
        )  # by_residual False: float16 codes of the vectors themselves, exact to 1e-4
        ivf.own_fields = True
        quantizer.this.disown()
        ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # codes by id: similarities, removal
        rng = np.random.default_rng(0)
        size = min(len(vectors), lists * TRAIN_PER_LIST)
        sample = vectors[np.sort(rng.choice(len(vectors), size, replace=False))]
        ivf.train(sample.astype(np.float32))
        ivf.nprobe = min(lists, self.shape.probe)
        return ivf, "ivf"

    def _apply(self, rows: Sequence[tuple[str, str, bytes]], changed: Sequence[str]) -> None:
        """Bring the changed ids up to date: drop their old codes, add the live ones again."""
        if self._index is None:
            return
        live = [(b, a, blob) for b, a, blob in rows if len(blob) == 4 * self.dims]
        stale = [self._row[b] for b in changed if b in self._row]
        if stale:
            self._index.remove_ids(np.array(stale, dtype=np.int64))
        present = {b for b, _a, _v in live}
        for block_id in changed:
            if block_id not in present and block_id in self._row:
                row = self._row.pop(block_id)
                self._ids[row] = None
                self._acts[row] = -1
                self._free.append(row)
        if live:
            put_rows = np.array([self._put(b, a) for b, a, _v in live], dtype=np.int64)
            vecs = np.stack([np.frombuffer(v, dtype="<f4") for _b, _a, v in live])
            self._index.add_with_ids(np.ascontiguousarray(vecs, dtype=np.float32), put_rows)
        self._masks = {}

    def _put(self, block_id: str, act_id: str) -> int:
        """The row of an id (a new or a free one for a new id), with its partition recorded."""
        code = self._act_codes.setdefault(act_id, len(self._act_codes))
        row = self._row.get(block_id)
        if row is None:
            if self._free:
                row = self._free.pop()
                self._ids[row] = block_id
            else:
                row = len(self._ids)
                self._ids.append(block_id)
                if row >= len(self._acts):
                    grow = max(1024, len(self._acts))
                    self._acts = np.concatenate([self._acts, np.full(grow, -1, dtype=np.int32)])
            self._row[block_id] = row
        self._acts[row] = code
        return row

    # -- queries -----------------------------------------------------------------------------

    def _params(self, parts: Sequence[str] | None) -> Any | None:
        """faiss search parameters for a partition filter (None: no filter; False: no row)."""
        if parts is None:
            return None
        faiss = _faiss()
        codes = tuple(sorted({self._act_codes[p] for p in parts if p in self._act_codes}))
        if not codes:
            return False
        cached = self._masks.get(codes)
        if cached is None:
            acts = self._acts[: len(self._ids)]
            mask = acts == codes[0] if len(codes) == 1 else np.isin(acts, codes)
            bits = np.packbits(mask, bitorder="little")
            selector = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))  # n in bytes
            cached = self._masks[codes] = (bits, selector, int(mask.sum()))
        _bits, selector, count = cached
        if count == 0:
            return False
        if self.kind == "ivf":
            lists = int(self._index.nlist)
            share = count / max(1, len(self._row))
            nprobe = min(lists, math.ceil(self.shape.probe / math.sqrt(share)))
            return faiss.SearchParametersIVF(sel=selector, nprobe=nprobe)
        return faiss.SearchParameters(sel=selector)

    def similarities(self, query: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine of the query to each given id that has a vector (from its float16 code)."""
        with self._lock:
            known = [(b, self._row[b]) for b in ids if b in self._row]
            if not known or self._index is None:
                return {}
            vecs = self._index.reconstruct_batch(np.array([r for _b, r in known], dtype=np.int64))
            return {b: float(s) for (b, _r), s in zip(known, vecs @ query, strict=True)}

    def search_many(
        self, queries: np.ndarray, k: int, parts: Sequence[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """Top-k (id, cosine), best first, for each row of `queries` in one faiss call, within
        any of `parts` if given (exact up to float16 rounding below `flat_max` vectors,
        approximate beyond)."""
        with self._lock:
            empty: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
            if self._index is None or not self._row or k <= 0:
                return empty
            params = self._params(parts)
            if params is False:
                return empty
            q = np.ascontiguousarray(queries, dtype=np.float32)
            scores, rows = self._index.search(q, min(k, len(self._row)), params=params)
            ids = self._ids
            out = []
            for rr, ss in zip(rows, scores, strict=True):
                hits = [
                    (b, float(s)) for r, s in zip(rr, ss, strict=True) if r >= 0 and (b := ids[r])
                ]
                hits.sort(key=lambda h: (-h[1], h[0]))
                out.append(hits)
            return out


class VectorSearch:
    """Nearest-neighbour search over every space, by the configured index (memory or sqlite)."""

    def __init__(
        self,
        mode: str = "memory",
        shape: Shape = Shape(),
        db_path: str | None = None,
        write: Callable[[Callable[[apsw.Connection], Any]], Any] | None = None,
    ) -> None:
        self.mode = mode
        self.shape = shape
        self.db_path = db_path  # where saved indexes go (None: never saved)
        self.write = write  # Database.write, to record a saved index's token
        self._indexes: dict[str, VectorIndex] = {}
        self._lock = threading.Lock()

    def reset(self, dims: int) -> None:
        """Start empty indexes for a model of `dims` dimensions (they load on first use)."""
        with self._lock:
            self._indexes = {
                s.name: VectorIndex(dims, s, self.shape, self.db_path) for s in vec_sql.SPACES
            }

    def drop_saved(self, space: vec_sql.Space) -> None:
        """Delete the space's saved index file, if any."""
        path = saved_index_path(self.db_path, space)
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def status(self, space: vec_sql.Space) -> dict[str, Any]:
        """kind, vectors and (inverted file) lists and probe of a space's index, as loaded."""
        with self._lock:
            index = self._indexes.get(space.name)
        return {"kind": "not_loaded", "vectors": 0} if index is None else index.status()

    def index(
        self,
        space: vec_sql.Space,
        read: Reader,
        dims: int = 384,
    ) -> VectorIndex:
        """The space's memory index, brought up to date with the database by `read`."""
        with self._lock:
            index = self._indexes.get(space.name)
            if index is None:
                index = self._indexes[space.name] = VectorIndex(
                    dims, space, self.shape, self.db_path
                )
        read(index.sync)
        if self.write is not None:
            index.save(self.write)  # after a build; outside the read transaction
        return index

    def knn(
        self,
        space: vec_sql.Space,
        query: np.ndarray,
        k: int,
        parts: Sequence[str] | None,
        read: Reader,
        dims: int = 384,
    ) -> list[tuple[str, float]]:
        """Top-k (id, cosine) within the given partitions (all when None)."""
        return self.knn_many(space, query[None, :], k, parts, read, dims)[0]

    def knn_many(
        self,
        space: vec_sql.Space,
        queries: np.ndarray,
        k: int,
        parts: Sequence[str] | None,
        read: Reader,
        dims: int = 384,
    ) -> list[list[tuple[str, float]]]:
        """`knn` for several queries at once (one faiss call with the memory index)."""
        if self.mode == "sqlite":
            return [self._knn_sqlite(space, q, k, parts, read) for q in queries]
        return self.index(space, read, dims).search_many(queries, k, parts)

    def _knn_sqlite(
        self,
        space: vec_sql.Space,
        query: np.ndarray,
        k: int,
        parts: Sequence[str] | None,
        read: Reader,
    ) -> list[tuple[str, float]]:
        blob = np.ascontiguousarray(query, dtype="<f4").tobytes()
        hits: list[tuple[str, float]] = []
        wanted: list[str | None] = list(parts) if parts is not None else [None]
        for part in wanted:

            def one(c: apsw.Connection, p: str | None = part) -> list[tuple[str, float]]:
                return vec_sql.knn_sqlite(c, blob, k, p, space)

            rows = read(one)
            # unit vectors: |a-b|^2 = 2 - 2cos
            hits.extend((i, 1.0 - d * d / 2.0) for i, d in rows)
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]

    def similarities(
        self,
        space: vec_sql.Space,
        query: np.ndarray,
        ids: Sequence[str],
        read: Reader,
        dims: int = 384,
    ) -> dict[str, float]:
        """Cosine of the query to specific ids that have a live vector."""
        if self.mode == "sqlite":
            rows = read(lambda c: vec_sql.embedding_rows(c, ids, space))
            return {i: float(np.frombuffer(blob, dtype="<f4") @ query) for i, _p, blob in rows}
        return self.index(space, read, dims).similarities(query, ids)
