"""The commit layer (seed 001 section 2.3): ADD / UPDATE / DEPRECATE, no LLM, one transaction.

* ADD inserts a `provisional` memory with the op's tier, `expires_at = now + ttl_days`, its
  vector, an evidence row and zeroed metrics. An ADD whose `key` is already held by a live
  memory of the same project, scope and owner replaces it (as UPDATE would): a key names one
  slot. An ADD that is a near-duplicate (cosine >= the dedup threshold, or the same text) of a
  live memory of the same project, scope, owner and kind does not create a second memory: the
  existing one gains the evidence.
* UPDATE deprecates the memory named by `memory_id`, or the live ones holding `key`, then ADDs.
* DEPRECATE marks the memory named by `memory_id` or `key` deprecated.

Vectors are computed before the transaction; everything else happens inside it, so the next
get_task_context sees all of it or none of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import apsw

from reos_memory.errors import InvalidInput
from reos_memory.models import Evidence, Memory, new_id, now_iso
from reos_memory.squirrel.memory.dedup import same_meaning
from reos_memory.squirrel.projects import normalize_prefix
from reos_memory.squirrel.redaction import redact_folded
from reos_memory.squirrel.text import paths
from reos_memory.squirrel.writer.schema import WriterOp
from reos_memory.store import Database
from reos_memory.store import memories as memory_sql
from reos_memory.store import vectors as vec_sql


class Vectors(Protocol):
    """What Squirrel needs of the shared vector machinery (the block Indexer provides it)."""

    def usable_model(self) -> tuple[Any, str | None]: ...

    def embed_texts(self, texts: Any, *, priority: int = ...) -> Any: ...

    def knn(
        self, query: Any, k: int, act_id: str | None = ..., *, space: Any = ..., parts: Any = ...
    ) -> list[tuple[str, float]]: ...

    def similarities(self, query: Any, ids: Any, *, space: Any = ...) -> dict[str, float]: ...

    def embed_async(self, texts: Any) -> Any: ...

    def knn_many(
        self, queries: Any, k: int, *, space: Any = ..., parts: Any = ...
    ) -> list[list[tuple[str, float]]]: ...

    def drop_saved_index(self, space: Any) -> None: ...


@dataclass
class CommitContext:
    """Who and what the ops come from."""

    project_id: str | None
    owner_type: str
    owner_id: str
    episode_id: str
    source: str | None = None
    frustration: str | None = None
    op_sources: dict[int, str] | None = None  # per-op evidence source, else `source`
    protected_kinds: tuple[str, ...] = ()  # the policy's: their TTL does not end them
    after: Any = None  # called with the connection inside the commit transaction
    # the values the episode's session showed as secrets, redacted from memory text as well
    known_secrets: Callable[[str], str] | None = None
    # a writer's memories name files relative to this checkout and no one's home directory
    project_root: str | None = None
    portable_paths: bool = False

    def source_of(self, index: int) -> str | None:
        return (self.op_sources or {}).get(index, self.source)


@dataclass
class CommitResult:
    results: list[dict[str, Any]] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for r in self.results if r["action"] == action)


_SPACE = re.compile(r"\s+")


def normal_text(text: str) -> str:
    """Text as compared for exact duplicates: case, spacing and end punctuation ignored."""
    return _SPACE.sub(" ", text.strip().lower()).rstrip(" .!")


@dataclass
class _Prepared:
    index: int
    op: WriterOp
    project_id: str | None
    owner_type: str
    owner_id: str
    text: str | None
    path_prefix: str | None
    vector: Any = None
    near: list[tuple[str, float]] = field(default_factory=list)
    problem: str | None = None


def _prepare(i: int, op: WriterOp, ctx: CommitContext) -> _Prepared:
    owner_type = op.owner_type or ctx.owner_type
    # a 'user' memory always belongs to the user the ops are about (a writer cannot file it
    # under someone else); a team or org memory names its owner, else the caller's
    if owner_type == "user" and ctx.owner_type == "user":
        owner_id = ctx.owner_id
    else:
        owner_id = op.owner_id or ctx.owner_id
    p = _Prepared(
        i, op, None if op.scope == "global" else ctx.project_id, owner_type, owner_id, None, None
    )
    if op.scope != "global" and ctx.project_id is None:
        p.problem = f"scope {op.scope!r} needs a project"
    if op.op in ("ADD", "UPDATE"):
        if op.kind is None or op.text is None or not op.text.strip():
            p.problem = f"{op.op} needs kind and text"
        else:
            p.text = redact_folded(op.text)
            if ctx.known_secrets is not None:
                p.text = ctx.known_secrets(p.text)
            if ctx.portable_paths:
                p.text = paths.portable(p.text, ctx.project_root)
    if op.op in ("UPDATE", "DEPRECATE") and op.memory_id is None and op.key is None:
        p.problem = f"{op.op} needs memory_id or key"
    if op.scope == "repo_path":
        if not op.path_prefix:
            p.problem = "scope repo_path needs path_prefix"
        else:
            try:
                p.path_prefix = normalize_prefix(op.path_prefix)
            except InvalidInput as exc:
                p.problem = f"path_prefix {exc.data.get('rule')}"
    return p


def commit(
    db: Database,
    vectors: Vectors | None,
    ops: list[WriterOp],
    ctx: CommitContext,
    *,
    dedup_threshold: float,
) -> CommitResult:
    """Apply a writer's ops in one transaction; each op's result says what happened and why."""
    prepared = [_prepare(i, op, ctx) for i, op in enumerate(ops)]
    model_id = _embed(vectors, prepared)
    if vectors is not None and model_id is not None:
        import numpy as np

        from reos_memory.store.vectors import MEMORIES

        adds = [
            p for p in prepared if p.vector is not None and p.problem is None and p.op.op == "ADD"
        ]
        by_part: dict[str, list[_Prepared]] = {}
        for p in adds:
            by_part.setdefault(p.project_id or "", []).append(p)
        for part, group in by_part.items():  # one matrix product per project
            hits = vectors.knn_many(
                np.stack([p.vector for p in group]), 8, space=MEMORIES, parts=[part]
            )
            for p, found in zip(group, hits, strict=True):
                p.near = [(mid, cos) for mid, cos in found if cos >= dedup_threshold]

    def tx(conn: apsw.Connection) -> CommitResult:
        out = CommitResult()
        store_vectors = model_id is not None and vec_sql.recorded_model(conn) == model_id
        batch: list[tuple[_Prepared, str]] = []
        for p in prepared:
            out.results.append(_apply(conn, p, ctx, store_vectors, batch, dedup_threshold))
        if any(r.get("memory_id") for r in out.results):
            vec_sql.prune_changes(conn, space=vec_sql.MEMORIES)
        if ctx.after is not None:
            ctx.after(conn, out)
        return out

    return db.write(tx)


def _embed(vectors: Vectors | None, prepared: list[_Prepared]) -> str | None:
    if vectors is None:
        return None
    emb, _reason = vectors.usable_model()
    todo = [p for p in prepared if p.text is not None and p.problem is None]
    if emb is None or not todo:
        return None if emb is None else emb.model_id
    vecs = vectors.embed_texts([p.text for p in todo], priority=0)
    for p, v in zip(todo, vecs, strict=True):
        p.vector = v
    return str(emb.model_id)


def _apply(
    conn: apsw.Connection,
    p: _Prepared,
    ctx: CommitContext,
    store_vectors: bool,
    batch: list[tuple[_Prepared, str]],
    threshold: float,
) -> dict[str, Any]:
    op = p.op
    res: dict[str, Any] = {"index": p.index, "op": op.op}
    if p.problem:
        return {**res, "action": "rejected", "reason": p.problem}
    now = now_iso()
    replaced: list[str] = []
    if op.op in ("UPDATE", "DEPRECATE"):
        targets, problem = _targets(conn, p)
        for m in targets:
            if op.op == "UPDATE" and _same(conn, m, p, threshold):
                # an UPDATE that says what the memory says already keeps its history
                _add_evidence(conn, m.id, ctx, now, op.confidence, p.index)
                return {
                    **res,
                    "action": "deduplicated",
                    "memory_id": m.id,
                    "reason": "the update repeats the memory",
                }
        if problem:
            if op.op == "DEPRECATE" or op.memory_id is not None:
                return {**res, "action": "rejected", "reason": problem}
            res["note"] = f"{problem}; added as new"
        for m in targets:
            memory_sql.update_memory(conn, m.id, now, status="deprecated")
            replaced.append(m.id)
        if op.op == "DEPRECATE":
            return {**res, "action": "deprecated", "memory_ids": replaced}
    assert p.text is not None and op.kind is not None
    if op.key is not None:
        holders = memory_sql.live_by_key(
            conn, op.key, p.project_id, op.scope, p.owner_type, p.owner_id
        )
        for m in holders:
            if _same(conn, m, p, threshold):
                _add_evidence(conn, m.id, ctx, now, op.confidence, p.index)
                return {
                    **res,
                    "action": "deduplicated",
                    "memory_id": m.id,
                    "reason": f"same as the memory holding key {op.key}",
                }
        for m in holders:
            memory_sql.update_memory(conn, m.id, now, status="deprecated")
            replaced.append(m.id)
    if not replaced:
        dup = _duplicate(conn, p, batch, threshold, ctx)
        if dup is not None:
            _add_evidence(conn, dup[0], ctx, now, op.confidence, p.index)
            return {**res, "action": "deduplicated", "memory_id": dup[0], "reason": dup[1]}
    expires = None if op.ttl_days is None else now_iso(op.ttl_days)
    mem = Memory(
        id=new_id("mem"),
        project_id=p.project_id,
        scope=op.scope,
        owner_type=p.owner_type,
        owner_id=p.owner_id,
        kind=op.kind,
        tier=op.tier,
        key=op.key,
        text=p.text,
        status="provisional",
        confidence=op.confidence,
        expires_at=expires,
        created_at=now,
        updated_at=now,
        polarity=op.polarity,
        path_prefix=p.path_prefix,
    )
    blob = None
    if store_vectors and p.vector is not None:
        import numpy as np

        blob = np.ascontiguousarray(p.vector, dtype="<f4").tobytes()
    memory_sql.insert_memory(conn, mem, blob)
    _add_evidence(conn, mem.id, ctx, now, None, p.index)
    if replaced:
        memory_sql.record_replacements(conn, mem.id, replaced, ctx.episode_id, now)
    batch.append((p, mem.id))
    action = "updated" if replaced else "added"
    out = {**res, "action": action, "memory_id": mem.id, "memory": mem}
    if replaced:
        out["replaced"] = replaced
    return out


def _targets(conn: apsw.Connection, p: _Prepared) -> tuple[list[Memory], str | None]:
    op = p.op
    if op.memory_id is not None:
        m = memory_sql.get_memory(conn, op.memory_id)
        if m is None:
            return [], f"memory {op.memory_id!r} not found"
        if m.project_id not in (p.project_id, None) or (m.owner_type, m.owner_id) != (
            p.owner_type,
            p.owner_id,
        ):
            return [], f"memory {op.memory_id!r} belongs to another project or owner"
        if m.status == "deprecated":
            return [], f"memory {op.memory_id!r} is already deprecated"
        return [m], None
    assert op.key is not None
    found = memory_sql.live_by_key(conn, op.key, p.project_id, op.scope, p.owner_type, p.owner_id)
    if not found:
        return [], f"no live memory holds key {op.key!r}"
    return found, None


def _same(conn: apsw.Connection, m: Memory, p: _Prepared, threshold: float) -> bool:
    if normal_text(m.text) == normal_text(p.text or ""):
        return True
    if p.vector is None or not same_meaning(m.text, p.text or ""):
        return False
    blob = memory_sql.embedding_of(conn, m.id)
    if blob is None:
        return False
    import numpy as np

    return float(np.frombuffer(blob, dtype="<f4") @ p.vector) >= threshold


def _duplicate(
    conn: apsw.Connection,
    p: _Prepared,
    batch: list[tuple[_Prepared, str]],
    threshold: float,
    ctx: CommitContext,
) -> tuple[str, str] | None:
    """An existing live memory this ADD repeats, and why (None when it is new)."""
    op = p.op
    want = (p.project_id, op.scope, p.owner_type, p.owner_id, op.kind)
    ids = [mid for mid, _ in p.near]
    found = memory_sql.get_memories(conn, ids) if ids else {}
    now = now_iso()
    for mid, cos in p.near:
        m = found.get(mid)
        if m is None or m.status == "deprecated" or _slot(m) != want:
            continue
        if m.expires_at is not None and m.expires_at <= now and m.kind not in ctx.protected_kinds:
            continue  # expired: hidden from every context, so it cannot absorb a new memory
        if same_meaning(m.text, p.text or ""):
            return mid, f"near-duplicate (cosine {cos:.3f})"
    for q, mid in batch:  # an earlier op of the same result
        if (q.project_id, q.op.scope, q.owner_type, q.owner_id, q.op.kind) != want:
            continue
        if normal_text(q.text or "") == normal_text(p.text or ""):
            return mid, "same text as another op of this result"
        if q.vector is not None and p.vector is not None:
            cos = float(q.vector @ p.vector)
            if cos >= threshold and same_meaning(q.text or "", p.text or ""):
                return mid, f"near-duplicate of another op of this result (cosine {cos:.3f})"
    same = memory_sql.same_text(
        conn,
        p.project_id,
        op.scope,
        p.owner_type,
        p.owner_id,
        op.kind or "",
        p.text or "",
        now,
        ctx.protected_kinds,
    )
    if same is not None:
        return same, "same text"
    return None


def _slot(m: Memory) -> tuple[Any, ...]:
    return (m.project_id, m.scope, m.owner_type, m.owner_id, m.kind)


def _add_evidence(
    conn: apsw.Connection,
    memory_id: str,
    ctx: CommitContext,
    now: str,
    confidence: float | None,
    index: int = 0,
) -> None:
    if not memory_sql.has_evidence(conn, memory_id, ctx.episode_id):
        memory_sql.insert_evidence(
            conn,
            Evidence(
                id=new_id("evd"),
                memory_id=memory_id,
                episode_id=ctx.episode_id,
                source=ctx.source_of(index),
                frustration=ctx.frustration,
                created_at=now,
            ),
        )
    if confidence is not None:
        memory_sql.raise_confidence(conn, memory_id, confidence)
