"""get_task_context (seed 001 section 3) and memory search over the local store (SQLite).

This module finds the candidates and records what was given; the ranking itself (visibility,
floor, scores, guards first, budget fitting) is memory/ranking.py, shared with the team server.
Filters: the project's memories and global ones; scope `repo_path` only when the request's path
is inside the memory's prefix; the owners; status provisional or active; not expired. Candidates:
key lookup first (`project.*` keys of the project, `user.*` keys of the owner), emergency guards,
then the nearest memories by vector and the best by BM25. Counting: every candidate that passed
the filters and the floor gains an opportunity, every memory returned a use; the request is
recorded under its context_id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import apsw

from reos_memory.models import Memory, MemoryMetrics, new_id, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel.memory.gather import Hits, Signals, build, gather
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.memory.ranking import (
    KEYWORD_POSTINGS,
    Candidate,
    Dropped,
    Owner,
    Scope,
    choose,
    search_matches,
)
from reos_memory.squirrel.redaction import redact
from reos_memory.store import Database
from reos_memory.store import contexts as context_sql
from reos_memory.store import keywords as kw_sql
from reos_memory.store import memories as memory_sql
from reos_memory.store import vectors as vec_sql

if TYPE_CHECKING:  # the commit layer (and its rules) stays off the get_task_context path
    from reos_memory.squirrel.memory.commit import Vectors


def _each_owner(owners: frozenset[Owner] | None) -> list[Owner | None]:
    """The owners of a scope as the store reads them: one at a time, None for any."""
    return [None] if owners is None else [*sorted(owners)]


def _of_owners(
    lookup: Callable[[apsw.Connection, str, Owner | None], set[str]],
    conn: apsw.Connection,
    project_id: str,
    owners: frozenset[Owner] | None,
) -> set[str]:
    """A store lookup of ids over the owners of a scope."""
    found = [lookup(conn, project_id, o) for o in _each_owner(owners)]
    for more in found[1:]:
        found[0] |= more  # into the first set: one owner's ids keep the store's set as it is
    return found[0] if found else set()


class _Local:
    """One request's view of the local store, for `gather` (it embeds the query while the
    keyword and key lookups run)."""

    def __init__(self, db: Database, vectors: Vectors | None, scope: Scope, k: int = 0) -> None:
        self.db = db
        self.vectors = vectors
        self.scope = scope
        self.k = k  # the nearest memories searched
        self.qvec: Any = None

    def hits(self, query: str, *, key_lookup: bool) -> Hits:
        scope, vectors = self.scope, self.vectors
        parts = [scope.project_id] if scope.project_id is not None else None
        if parts is not None and scope.include_global:
            parts.append("")
        stage = None
        if vectors is not None:
            emb, _reason = vectors.usable_model()
            if emb is not None and query.strip():
                # the query is embedded on the embedder's thread while the keyword and key
                # lookups run here
                stage = vectors.embed_async([query])
        words = kw_sql.query_words(query)
        pids: list[str | None] | None = None
        if scope.project_id is not None:
            pids = [scope.project_id, None] if scope.include_global else [scope.project_id]

        def read(conn: apsw.Connection) -> Hits:
            kw: dict[str, float] = {}
            kept: list[str] = []
            dfs: list[int] = []
            total = 0
            if words:
                all_dfs = kw_sql.document_frequencies(conn, words, "memories_fts")
                kept = kw_sql.prune_words(conn, words, KEYWORD_POSTINGS, "memories_fts", all_dfs)[0]
                kw = dict(memory_sql.keyword_search(conn, kept, 50, pids, scope.statuses))
                df_of = dict(zip(words, all_dfs, strict=True))
                dfs = [df_of[w] for w in kept]
                if kw:
                    total = memory_sql.count_all(conn)
            keyed: set[str] = set()
            guards: set[str] = set()
            if key_lookup and scope.project_id is not None:
                keyed = _of_owners(memory_sql.keyed_ids, conn, scope.project_id, scope.owners)
                guards = _of_owners(
                    memory_sql.emergency_guard_ids, conn, scope.project_id, scope.owners
                )
            return Hits({}, kw, kept, dfs, total, keyed, guards, False)

        h = self.db.read(read)
        if stage is None or vectors is None:
            return h
        self.qvec = stage.result(120)[0]
        near = dict(vectors.knn(self.qvec, self.k, space=vec_sql.MEMORIES, parts=parts))
        return h._replace(near=near, used_vectors=True)

    def similarities(self, ids: list[str]) -> dict[str, float]:
        assert self.vectors is not None and self.qvec is not None
        return dict(self.vectors.similarities(self.qvec, ids, space=vec_sql.MEMORIES))

    def words_held(self, words: list[str], ids: list[str]) -> dict[str, list[str]]:
        return self.db.read(lambda conn: memory_sql.words_held(conn, words, ids))

    def rows(self, ids: list[str]) -> tuple[dict[str, Memory], dict[str, MemoryMetrics]]:
        return self.db.read(
            lambda conn: (memory_sql.get_memories(conn, ids), memory_sql.metrics_of(conn, ids))
        )


def candidates(
    db: Database,
    vectors: Vectors | None,
    query: str,
    scope: Scope,
    policy: Policy,
    *,
    key_lookup: bool,
    floor_first: bool = False,
    dropped: list[Dropped] | None = None,
) -> tuple[list[Candidate], bool]:
    """Filtered candidates with their signals, and whether vectors were used (`gather` over
    the local store)."""
    src = _Local(db, vectors, scope, policy.retrieval.candidates)
    return gather(
        src, query, scope, policy, now_iso(),
        key_lookup=key_lookup, floor_first=floor_first, dropped=dropped,
    )  # fmt: skip


def important(db: Database, scope: Scope, policy: Policy, limit: int = 40) -> list[Candidate]:
    """With no task to compare with: the keyed memories, the emergency guards and the most
    established others (active before provisional, then tier, then use; `limit` of them per
    owner)."""
    assert scope.project_id is not None
    pid = scope.project_id

    def read(conn: apsw.Connection) -> tuple[set[str], set[str], list[str]]:
        return (
            _of_owners(memory_sql.keyed_ids, conn, pid, scope.owners),
            _of_owners(memory_sql.emergency_guard_ids, conn, pid, scope.owners),
            [
                i
                for o in _each_owner(scope.owners)
                for i in memory_sql.important_ids(conn, pid, o, limit)
            ],
        )

    keyed, guards, top = db.read(read)
    ids = list(dict.fromkeys([*keyed, *guards, *top]))
    signals = Signals({}, {}, keyed, guards, {})
    return build(_Local(db, None, scope), ids, scope, policy, signals, now_iso())


def get_task_context(
    db: Database,
    vectors: Vectors | None,
    policy: Policy,
    *,
    project_id: str,
    task: str | None,
    owner: Owner,
    path: str | None,
    session_id: str | None,
    budget: int,
    exclude_injected: bool = False,
    relevant_only: bool = False,
    also: frozenset[Owner] = frozenset(),
    record: bool = True,
) -> api.ContextResult:
    """Choose, render and record the memories for one task (see the module docstring); without
    `record`, nothing is counted or kept (a preview).
    With no `task`, the project's most important memories. With `relevant_only`, keyed memories
    and guards must pass the similarity floor too (nothing comes back when nothing is similar).
    `also`: more owners whose memories share the budget (the team's and org's, from the team
    server's cache), ranked with the owner's own by the one ranking."""
    scope = Scope(
        project_id=project_id,
        owners=frozenset({owner}) | also,
        path=path,
        protected=policy.protected_kinds,
    )
    dropped: list[Dropped] = []
    if task is None:
        cands, used_vectors = important(db, scope, policy), False
    else:
        cands, used_vectors = candidates(
            db, vectors, task, scope, policy, key_lookup=True, floor_first=True, dropped=dropped
        )
    given: set[str] = set()
    if exclude_injected and session_id:
        given = db.read(lambda c: context_sql.injected_in_session(c, session_id))
    choice = choose(
        cands,
        policy,
        context_id=new_id("ctx"),
        budget=budget,
        vectors_used=used_vectors,
        floor=task is not None,
        relevant_only=relevant_only,
        given=given,
        dropped=dropped,
    )
    out = choice.result
    now = now_iso()
    row = {
        "context_id": out.context_id,
        "project_id": project_id,
        "owner_type": owner[0],
        "owner_id": owner[1],
        "session_id": session_id,
        "task": redact(task[:2000]) if task is not None else "(session start)",
        "path": None if path is None else redact(path),
        "created_at": now,
        "budget_tokens": budget,
        "tokens": out.tokens,
    }
    if record:
        _record_given(db, row, choice.chosen, choice.eligible, now)
    return out


def _record_given(
    db: Database,
    row: dict[str, Any],
    chosen: list[Candidate],
    eligible: list[Candidate],
    now: str,
) -> None:
    """The context given, in one transaction: its row and memories, an opportunity for each
    eligible memory and a use for each chosen one."""

    def tx(conn: apsw.Connection) -> None:
        context_sql.insert_context(conn, row, [(c.memory.id, c.score) for c in chosen])
        if eligible:
            memory_sql.count_opportunities(conn, [c.memory.id for c in eligible])
        if chosen:
            memory_sql.count_uses(conn, [c.memory.id for c in chosen], now)

    db.write(tx)


def search(
    db: Database,
    vectors: Vectors | None,
    policy: Policy,
    *,
    query: str,
    scope: Scope,
    limit: int,
) -> api.SquirrelSearchResult:
    """Memories matching a query by vector and keyword, ranked as get_task_context ranks them;
    nothing is counted or recorded."""
    cands, used = candidates(db, vectors, query, scope, policy, key_lookup=False)
    return api.SquirrelSearchResult(
        query=query, matches=search_matches(cands, policy, limit), semantic_available=used
    )
