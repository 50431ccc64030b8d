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
from typing import TYPE_CHECKING, Any, NamedTuple

import apsw

from reos_memory.models import Memory, MemoryMetrics, new_id, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.memory.ranking import (
    KEYWORD_POSTINGS,
    Candidate,
    Dropped,
    Owner,
    Scope,
    candidate,
    choose,
    distinctive,
    hidden,
    relative,
    search_matches,
    under_floor,
)
from reos_memory.squirrel.redaction import redact
from reos_memory.store import Database
from reos_memory.store import keywords as kw_sql
from reos_memory.store import memories as msql
from reos_memory.store import squirrel as ssql
from reos_memory.store import vectors as vsql

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
    """Filtered candidates with their signals; and whether vectors were used. With
    `floor_first`, memories under the floor are dropped before their rows are read (keyed ones
    and emergency guards always stay). Memories left out are added to `dropped`."""
    r = policy.retrieval
    qvec = None
    parts = [scope.project_id] if scope.project_id is not None else None
    if parts is not None and scope.include_global:
        parts.append("")
    near: dict[str, float] = {}
    stage = None
    if vectors is not None:
        emb, _reason = vectors.usable_model()
        if emb is not None and query.strip():
            # the query is embedded on the embedder's thread while the keyword and key
            # lookups run here
            stage = vectors.embed_async([query])
    words = kw_sql.query_words(query)
    now = now_iso()

    pids: list[str | None] | None = None
    if scope.project_id is not None:
        pids = [scope.project_id, None] if scope.include_global else [scope.project_id]

    def read(conn: apsw.Connection) -> tuple[dict[str, float], set[str], set[str], list[str]]:
        kw: dict[str, float] = {}
        distinct: list[str] = []
        if words:
            dfs = kw_sql.document_frequencies(conn, words, "memories_fts")
            kept = kw_sql.prune_words(conn, words, KEYWORD_POSTINGS, "memories_fts", dfs)[0]
            kw = dict(msql.keyword_search(conn, kept, 50, pids, scope.statuses))
            if kw:  # among the searched words only: their postings are within the budget
                df_of = dict(zip(words, dfs, strict=True))
                total = msql.count_all(conn)
                distinct = distinctive(kept, [df_of[w] for w in kept], total, r.distinctive_share)
        if not key_lookup or scope.project_id is None:
            return kw, set(), set(), distinct
        keyed = _of_owners(msql.keyed_ids, conn, scope.project_id, scope.owners)
        guards = _of_owners(msql.emergency_guard_ids, conn, scope.project_id, scope.owners)
        return kw, keyed, guards, distinct

    kw, keyed, guards, distinct = db.read(read)
    shared: dict[str, list[str]] = {}
    floor, lowered = r.similarity_floor, r.similarity_floor - r.keyword_floor_relief
    if stage is not None and vectors is not None:
        qvec = stage.result(120)[0]
        near = dict(vectors.knn(qvec, r.candidates, space=vsql.MEMORIES, parts=parts))
        missing = [i for i in dict.fromkeys([*keyed, *guards, *kw]) if i not in near]
        if missing:
            near.update(vectors.similarities(qvec, missing, space=vsql.MEMORIES))
        # the keyword hits under the floor: which distinctive words they hold decides the ones
        # just under it, and tells the others why they stay out
        check = [i for i, c in near.items() if c < floor and i in kw]
    else:
        check = list(kw)
    if check and distinct:
        shared = db.read(lambda conn: msql.words_held(conn, distinct, check))
    if qvec is not None and floor_first:
        kept_near: dict[str, float] = {}
        rel = relative(kw)
        for i, c in near.items():
            if c >= floor or i in keyed or i in guards or (c >= lowered and i in shared):
                kept_near[i] = c
            elif dropped is not None:
                dropped.append(under_floor(i, c, rel.get(i, 0.0), shared.get(i, []), policy))
        near = kept_near
        kw = {i: s for i, s in kw.items() if i in near}
    ids = list(dict.fromkeys([*keyed, *guards, *near, *kw]))
    signals = _Signals(near, relative(kw), keyed, guards, shared)
    return _build(db, ids, scope, policy, signals, now, dropped), qvec is not None


def important(db: Database, scope: Scope, policy: Policy, limit: int = 40) -> list[Candidate]:
    """With no task to compare with: the keyed memories, the emergency guards and the most
    established others (active before provisional, then tier, then use; `limit` of them per
    owner)."""
    assert scope.project_id is not None
    pid = scope.project_id

    def read(conn: apsw.Connection) -> tuple[set[str], set[str], list[str]]:
        return (
            _of_owners(msql.keyed_ids, conn, pid, scope.owners),
            _of_owners(msql.emergency_guard_ids, conn, pid, scope.owners),
            [i for o in _each_owner(scope.owners) for i in msql.important_ids(conn, pid, o, limit)],
        )

    keyed, guards, top = db.read(read)
    ids = list(dict.fromkeys([*keyed, *guards, *top]))
    return _build(db, ids, scope, policy, _Signals({}, {}, keyed, guards, {}), now_iso())


class _Signals(NamedTuple):
    """What the searches found for each memory id, before its row is read."""

    near: dict[str, float]  # cosine similarity
    keyword: dict[str, float]  # relative to the best keyword hit
    keyed: set[str]
    guards: set[str]
    shared: dict[str, list[str]]  # the task's distinctive words each holds


def _build(
    db: Database,
    ids: list[str],
    scope: Scope,
    policy: Policy,
    found: _Signals,
    now: str,
    dropped: list[Dropped] | None = None,
) -> list[Candidate]:
    """The candidates of these ids that the scope lets through (the others go to `dropped`)."""
    if not ids:
        return []

    def rows(conn: apsw.Connection) -> tuple[dict[str, Memory], dict[str, MemoryMetrics]]:
        return msql.get_memories(conn, ids), msql.metrics_of(conn, ids)

    mems, metrics = db.read(rows)
    out = []
    for mid in ids:
        m = mems.get(mid)
        why_not = "gone" if m is None else hidden(m, scope, now)
        if m is None or why_not is not None:
            if dropped is not None and why_not is not None:
                k = found.keyword.get(mid, 0.0)
                dropped.append(Dropped(mid, "filtered", why_not, found.near.get(mid), k, []))
            continue
        c = candidate(
            m,
            metrics.get(mid) or MemoryMetrics(memory_id=mid),
            policy,
            cos=found.near.get(mid),
            keyword=found.keyword.get(mid, 0.0),
            by_key=mid in found.keyed,
            emergency=mid in found.guards,
            shared=found.shared.get(mid, []),
        )
        out.append(c)
    return out


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
        given = db.read(lambda c: ssql.injected_in_session(c, session_id))
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
        ssql.insert_context(conn, row, [(c.memory.id, c.score) for c in chosen])
        if eligible:
            msql.count_opportunities(conn, [c.memory.id for c in eligible])
        if chosen:
            msql.count_uses(conn, [c.memory.id for c in chosen], now)

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
