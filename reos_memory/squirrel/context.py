"""get_task_context (seed 001 section 3) and memory search.

Filters: the project's memories and global ones; scope `repo_path` only when the request's path
is inside the memory's prefix; the owner; status provisional or active; not expired. Candidates:
key lookup first (`project.*` keys of the project, `user.*` keys of the owner), emergency guards,
then the nearest memories by vector and the best by BM25. Rank: the seed's factors with weights
from the policy. Emergency guards come first; the rest follows by score until the budget is
spent. Counting: every candidate that passed the filters and the similarity floor gains an
opportunity, every memory returned a use; the request is recorded under its context_id.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from reos_memory.models import Memory, MemoryMetrics, new_id, now_iso
from reos_memory.squirrel.markers import CONTEXT_CLOSE, CONTEXT_OPEN
from reos_memory.squirrel.policy import Policy
from reos_memory.squirrel.projects import path_inside
from reos_memory.squirrel.redaction import redact
from reos_memory.squirrel.tokens import Size, count_tokens, size, truncate_to_tokens
from reos_memory.store import Database
from reos_memory.store import keywords as kw_sql
from reos_memory.store import memories as msql
from reos_memory.store import squirrel as ssql
from reos_memory.store import vectors as vsql

if TYPE_CHECKING:  # the commit layer (and its rules) stays off the get_task_context path
    from reos_memory.squirrel.commit import Vectors

LIVE = ("provisional", "active")
SECTIONS = (
    ("guard", "Guards (do not ignore)"),
    ("rules", "Invariants and preferences"),
    ("pattern", "Patterns"),
    ("note", "Notes"),
)
HEADER = "Memories from earlier sessions in this project (Squirrel). Use them; they may be stale."
MAX_LINE_TOKENS = 120  # one memory never eats a whole small budget
KEYWORD_POSTINGS = 1000  # BM25 scores at most this many postings (common words dropped first)


@dataclass
class Candidate:
    memory: Memory
    metrics: MemoryMetrics
    cos: float | None = None
    keyword: float = 0.0  # BM25 relative to the best keyword hit, 0..1
    by_key: bool = False
    emergency: bool = False
    score: float = 0.0
    why: list[str] = field(default_factory=list)

    @property
    def guard_first(self) -> bool:
        m = self.memory
        return m.kind == "guard" and m.tier == "emergency" and m.polarity < 0


@dataclass
class Scope:
    """Which memories a request may see."""

    project_id: str | None
    owner: tuple[str, str] | None
    path: str | None
    include_global: bool = True
    statuses: tuple[str, ...] = LIVE
    kinds: tuple[str, ...] | None = None
    protected: frozenset[str] = frozenset()
    require_path: bool = True  # repo_path memories only for a request path inside them


def _visible(m: Memory, scope: Scope, now: str) -> bool:
    if m.status not in scope.statuses:
        return False
    if scope.kinds is not None and m.kind not in scope.kinds:
        return False
    if scope.owner is not None and (m.owner_type, m.owner_id) != scope.owner:
        return False
    if (
        m.expires_at is not None
        and m.expires_at <= now
        and m.kind not in scope.protected
        and "deprecated" not in scope.statuses
    ):
        return False  # protected kinds are never ended by time alone
    if m.scope == "global" or m.project_id is None:
        if not scope.include_global:
            return False
    elif scope.project_id is not None and m.project_id != scope.project_id:
        return False
    if m.scope == "repo_path" and (scope.path is not None or scope.require_path):
        return scope.path is not None and path_inside(scope.path, m.path_prefix or "")
    return True


def candidates(
    db: Database,
    vectors: Vectors | None,
    query: str,
    scope: Scope,
    policy: Policy,
    *,
    key_lookup: bool,
    floor_first: bool = False,
) -> tuple[list[Candidate], bool]:
    """Filtered candidates with their signals; and whether vectors were used. With
    `floor_first`, memories under the similarity floor are dropped before their rows are read
    (keyed ones and emergency guards always stay)."""
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

    def read(conn: apsw.Connection) -> tuple[dict[str, float], set[str], set[str]]:
        kept = kw_sql.prune_words(conn, words, KEYWORD_POSTINGS, "memories_fts")[0] if words else []
        kw = dict(msql.keyword_search(conn, kept, 50, pids, scope.statuses))
        if not key_lookup or scope.project_id is None:
            return kw, set(), set()
        keyed = msql.keyed_ids(conn, scope.project_id, scope.owner)
        guards = msql.emergency_guard_ids(conn, scope.project_id, scope.owner)
        return kw, keyed, guards

    kw, keyed, guards = db.read(read)
    if stage is not None and vectors is not None:
        qvec = stage.result(120)[0]
        near = dict(vectors.knn(qvec, r.candidates, space=vsql.MEMORIES, parts=parts))
        missing = [i for i in dict.fromkeys([*keyed, *guards, *kw]) if i not in near]
        if missing:
            near.update(vectors.similarities(qvec, missing, space=vsql.MEMORIES))
        if floor_first:
            floor = r.similarity_floor
            near = {i: c for i, c in near.items() if c >= floor or i in keyed or i in guards}
            kw = {i: s for i, s in kw.items() if i in near}
    ids = list(dict.fromkeys([*keyed, *guards, *near, *kw]))
    return _build(db, ids, scope, policy, near, kw, keyed, guards, now), qvec is not None


def important(db: Database, scope: Scope, policy: Policy, limit: int = 40) -> list[Candidate]:
    """With no task to compare with: the keyed memories, the emergency guards and the most
    established others (active before provisional, then tier, then use)."""
    assert scope.project_id is not None
    pid = scope.project_id

    def read(conn: apsw.Connection) -> tuple[set[str], set[str], list[str]]:
        return (
            msql.keyed_ids(conn, pid, scope.owner),
            msql.emergency_guard_ids(conn, pid, scope.owner),
            msql.important_ids(conn, pid, scope.owner, limit),
        )

    keyed, guards, top = db.read(read)
    ids = list(dict.fromkeys([*keyed, *guards, *top]))
    return _build(db, ids, scope, policy, {}, {}, keyed, guards, now_iso())


def _build(
    db: Database,
    ids: list[str],
    scope: Scope,
    policy: Policy,
    near: dict[str, float],
    kw: dict[str, float],
    keyed: set[str],
    guards: set[str],
    now: str,
) -> list[Candidate]:
    if not ids:
        return []

    def rows(conn: apsw.Connection) -> tuple[dict[str, Memory], dict[str, MemoryMetrics]]:
        return msql.get_memories(conn, ids), msql.metrics_of(conn, ids)

    mems, metrics = db.read(rows)
    best_kw = max(kw.values(), default=0.0)
    out = []
    for mid in ids:
        m = mems.get(mid)
        if m is None or not _visible(m, scope, now):
            continue
        c = Candidate(m, metrics.get(mid) or MemoryMetrics(memory_id=mid))
        c.cos = near.get(mid)
        if mid in kw and best_kw > 0:
            c.keyword = kw[mid] / best_kw
        c.by_key = mid in keyed
        c.emergency = mid in guards
        _score(c, policy)
        out.append(c)
    return out


def _score(c: Candidate, policy: Policy) -> None:
    r = policy.retrieval
    m = c.memory
    sim = c.cos or 0.0
    parts = {
        "similarity": r.similarity * sim,
        "keyword": r.keyword * c.keyword,
        "status": getattr(r.status, m.status, 0.0),
        "tier": getattr(r.tier, m.tier, 0.0),
        "kind": getattr(r.kind, m.kind, 0.0),
        "use": r.use_count * math.log1p(c.metrics.use_count),
        "key": r.key_bonus if c.by_key else 0.0,
    }
    c.score = sum(parts.values())
    if c.guard_first:
        c.why.append("emergency guard")
    if c.by_key:
        c.why.append(f"key {m.key}")
    if c.cos is not None and c.cos >= r.similarity_floor:
        c.why.append(f"similar to the task ({c.cos:.2f})")
    if c.keyword > 0:
        c.why.append("shares words with the task")


def passes_floor(c: Candidate, policy: Policy, vectors_used: bool) -> bool:
    """Relevant enough to count as an opportunity (keys and emergency guards always are)."""
    if c.by_key or c.guard_first:
        return True
    if c.cos is not None:
        return c.cos >= policy.retrieval.similarity_floor
    return not vectors_used and c.keyword > 0


def _relevant(c: Candidate, policy: Policy, vectors_used: bool) -> bool:
    """Similar to the task on its own merits (a key or a guard is not enough)."""
    if c.cos is not None:
        return c.cos >= policy.retrieval.similarity_floor
    return not vectors_used and c.keyword > 0


def _section(m: Memory) -> str:
    if m.kind == "guard":
        return "guard"
    if m.kind in ("invariant", "preference"):
        return "rules"
    return m.kind


def _line(c: Candidate) -> str:
    return "- " + truncate_to_tokens(c.memory.text, MAX_LINE_TOKENS)


def render(context_id: str, chosen: list[Candidate]) -> str:
    """The block ready to paste into an agent's context, inside Squirrel's markers."""
    if not chosen:
        return ""
    lines = [CONTEXT_OPEN.format(id=context_id), HEADER]
    for sec, title in SECTIONS:
        items = [c for c in chosen if _section(c.memory) == sec]
        if not items:
            continue
        lines.append(f"## {title}")
        lines.extend(_line(c) for c in items)
    lines.append(CONTEXT_CLOSE)
    return "\n".join(lines)


_NEWLINE = Size(1, 0, 0)


def _fit(context_id: str, ranked: list[Candidate], budget: int) -> tuple[list[Candidate], str]:
    """Add memories in rank order while the whole rendered context stays within the budget.

    The count's parts are additive over lines, so each candidate costs its line (and its
    section's title the first time) without rendering everything again.
    """
    frame = [CONTEXT_OPEN.format(id=context_id), HEADER, CONTEXT_CLOSE]
    used = Size(0, 0, 0)
    for part in frame:
        used = used + size(part)
    used = used + Size(len(frame) - 1, 0, 0)
    titles = {sec: f"## {title}" for sec, title in SECTIONS}
    opened: set[str] = set()
    chosen: list[Candidate] = []
    cheapest = 3  # no line costs less: "- x" plus its newline
    for c in ranked:
        left = budget - used.tokens
        if left < cheapest:
            break
        if len(c.memory.text) > 4 * (left + 2) and len(c.memory.text) > 4 * MAX_LINE_TOKENS:
            pass  # long enough to be truncated: its size is computed below
        elif (len(c.memory.text) + 3) // 4 > left:
            continue  # cannot fit, whatever its pieces
        sec = _section(c.memory)
        cost = size(_line(c)) + _NEWLINE
        if sec not in opened:
            cost = cost + size(titles[sec]) + _NEWLINE
        if (used + cost).tokens <= budget:
            used = used + cost
            chosen.append(c)
            opened.add(sec)
    text = render(context_id, chosen)
    assert count_tokens(text) <= budget or not chosen, "the fitted context overran its budget"
    return chosen, text


def get_task_context(
    db: Database,
    vectors: Vectors | None,
    policy: Policy,
    *,
    project_id: str,
    task: str | None,
    owner: tuple[str, str],
    path: str | None,
    session_id: str | None,
    budget: int,
    exclude_injected: bool = False,
    relevant_only: bool = False,
) -> dict[str, Any]:
    """Choose, render and record the memories for one task (see the module docstring).
    With no `task`, the project's most important memories. With `relevant_only`, keyed memories
    and guards must pass the similarity floor too (nothing comes back when nothing is similar)."""
    scope = Scope(project_id=project_id, owner=owner, path=path, protected=policy.protected_kinds)
    if task is None:
        cands, used_vectors = important(db, scope, policy), False
        eligible = cands
    else:
        cands, used_vectors = candidates(
            db, vectors, task, scope, policy, key_lookup=True, floor_first=True
        )
        eligible = [c for c in cands if passes_floor(c, policy, used_vectors)]
        if relevant_only:
            eligible = [c for c in eligible if _relevant(c, policy, used_vectors)]
    if exclude_injected and session_id:
        seen = db.read(lambda c: ssql.injected_in_session(c, session_id))
        eligible = [c for c in eligible if c.memory.id not in seen]
    ranked = sorted(
        eligible, key=lambda c: (not c.guard_first, -c.score, c.memory.created_at, c.memory.id)
    )
    context_id = new_id("ctx")
    chosen, prompt = _fit(context_id, ranked, budget)
    tokens = count_tokens(prompt)
    now = now_iso()

    def tx(conn: apsw.Connection) -> None:
        ssql.insert_context(
            conn,
            {
                "context_id": context_id,
                "project_id": project_id,
                "owner_type": owner[0],
                "owner_id": owner[1],
                "session_id": session_id,
                "task": redact(task[:2000]) if task is not None else "(session start)",
                "path": None if path is None else redact(path),
                "created_at": now,
                "budget_tokens": budget,
                "tokens": tokens,
            },
            [(c.memory.id, c.score) for c in chosen],
        )
        if eligible:
            msql.count_opportunities(conn, [c.memory.id for c in eligible])
        if chosen:
            msql.count_uses(conn, [c.memory.id for c in chosen], now)

    db.write(tx)
    return {
        "context_id": context_id,
        "context_prompt": prompt,
        "memory_ids": [c.memory.id for c in chosen],
        "memories": [_public(c) for c in chosen],
        "tokens": tokens,
        "budget": budget,
        "considered": len(cands),
        "opportunities": len(eligible),
        "semantic_available": used_vectors,
    }


def _public(c: Candidate) -> dict[str, Any]:
    m = c.memory
    return {
        "id": m.id,
        "kind": m.kind,
        "tier": m.tier,
        "status": m.status,
        "scope": m.scope,
        "key": m.key,
        "text": m.text,
        "polarity": m.polarity,
        "score": round(c.score, 4),
        "why": ", ".join(c.why) or "ranked by status, tier and kind",
    }


def search(
    db: Database,
    vectors: Vectors | None,
    policy: Policy,
    *,
    query: str,
    scope: Scope,
    limit: int,
) -> dict[str, Any]:
    """Memories matching a query by vector and keyword, ranked as get_task_context ranks them;
    nothing is counted or recorded."""
    cands, used = candidates(db, vectors, query, scope, policy, key_lookup=False)
    hits = [
        c
        for c in cands
        if (c.cos is not None and c.cos >= policy.retrieval.similarity_floor) or c.keyword > 0
    ]
    hits.sort(key=lambda c: (-c.score, c.memory.id))
    return {
        "query": query,
        "matches": [
            {
                **_public(c),
                "similarity": None if c.cos is None else round(c.cos, 4),
                "keyword": round(c.keyword, 4),
                "project_id": c.memory.project_id,
            }
            for c in hits[:limit]
        ],
        "semantic_available": used,
    }
