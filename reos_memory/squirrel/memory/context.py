"""get_task_context (seed 001 section 3) and memory search.

Filters: the project's memories and global ones; scope `repo_path` only when the request's path
is inside the memory's prefix; the owner; status provisional or active; not expired. Candidates:
key lookup first (`project.*` keys of the project, `user.*` keys of the owner), emergency guards,
then the nearest memories by vector and the best by BM25. The floor is hybrid: a memory is
relevant when its cosine similarity reaches `similarity_floor`, or reaches the floor lowered by
`keyword_floor_relief` while it holds a distinctive word of the task (one found in at most
`distinctive_share` of all memories; never a stopword). Keywords alone never pass it. Rank: the
seed's factors with weights from the policy. Emergency guards come first; the rest follows by
score until the budget is spent. Counting: every candidate that passed the filters and the floor
gains an opportunity, every memory returned a use; the request is recorded under its
context_id. Every memory looked at and not returned is reported with the first reason found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from reos_memory.models import Memory, MemoryMetrics, new_id, now_iso
from reos_memory.squirrel import api
from reos_memory.squirrel.markers import CONTEXT_CLOSE, CONTEXT_OPEN
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.projects import path_inside
from reos_memory.squirrel.redaction import redact
from reos_memory.squirrel.tokens import Size, count_tokens, size, truncate_to_tokens
from reos_memory.store import Database
from reos_memory.store import keywords as kw_sql
from reos_memory.store import memories as msql
from reos_memory.store import squirrel as ssql
from reos_memory.store import vectors as vsql

if TYPE_CHECKING:  # the commit layer (and its rules) stays off the get_task_context path
    from reos_memory.squirrel.memory.commit import Vectors

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
    shared: list[str] = field(default_factory=list)  # the task's distinctive words it holds

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


@dataclass
class Dropped:
    """A memory looked at for a request and not returned, with the first reason found."""

    id: str
    reason: str  # under_floor | filtered | not_relevant | already_injected | over_budget
    detail: str
    similarity: float | None
    keyword: float
    shared_words: list[str]


def _hidden(m: Memory, scope: Scope, now: str) -> str | None:
    """Why a memory is not for this request (None: it is)."""
    if m.status not in scope.statuses:
        return f"status {m.status}"
    if scope.kinds is not None and m.kind not in scope.kinds:
        return f"kind {m.kind}"
    if scope.owner is not None and (m.owner_type, m.owner_id) != scope.owner:
        return "another owner's"
    if (
        m.expires_at is not None
        and m.expires_at <= now
        and m.kind not in scope.protected
        and "deprecated" not in scope.statuses
    ):
        return f"expired at {m.expires_at}"  # protected kinds are never ended by time alone
    if m.scope == "global" or m.project_id is None:
        if not scope.include_global:
            return "global"
    elif scope.project_id is not None and m.project_id != scope.project_id:
        return "another project's"
    if (
        m.scope == "repo_path"
        and (scope.path is not None or scope.require_path)
        and (scope.path is None or not path_inside(scope.path, m.path_prefix or ""))
    ):
        return "scope repo_path: the request's path is not inside its prefix"
    return None


def distinctive(words: list[str], dfs: list[int], total: int, share: float) -> list[str]:
    """The words of a task that single out few memories: held by at least one memory and by at
    most `share` of all of them (one memory always counts as few); never a stopword."""
    most = max(1.0, share * total)
    return [
        w for w, df in zip(words, dfs, strict=True) if 0 < df <= most and w not in kw_sql.STOPWORDS
    ]


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
        keyed = msql.keyed_ids(conn, scope.project_id, scope.owner)
        guards = msql.emergency_guard_ids(conn, scope.project_id, scope.owner)
        return kw, keyed, guards, distinct

    kw, keyed, guards, distinct = db.read(read)
    best_kw = max(kw.values(), default=0.0)
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
        for i, c in near.items():
            if c >= floor or i in keyed or i in guards or (c >= lowered and i in shared):
                kept_near[i] = c
            elif dropped is not None:
                k = kw[i] / best_kw if i in kw and best_kw > 0 else 0.0
                dropped.append(_under_floor(i, c, k, shared.get(i, []), policy))
        near = kept_near
        kw = {i: s for i, s in kw.items() if i in near}
    ids = list(dict.fromkeys([*keyed, *guards, *near, *kw]))
    out = _build(db, ids, scope, policy, near, kw, keyed, guards, now, dropped)
    for cand in out:
        cand.shared = shared.get(cand.memory.id, [])
        _explain(cand, policy)
    return out, qvec is not None


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
    out = _build(db, ids, scope, policy, {}, {}, keyed, guards, now_iso())
    for c in out:
        _explain(c, policy)
    return out


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
    dropped: list[Dropped] | None = None,
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
        hidden = "gone" if m is None else _hidden(m, scope, now)
        if m is None or hidden is not None:
            if dropped is not None and hidden is not None:
                k = kw[mid] / best_kw if mid in kw and best_kw > 0 else 0.0
                dropped.append(Dropped(mid, "filtered", hidden, near.get(mid), k, []))
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


def _explain(c: Candidate, policy: Policy) -> None:
    """Why a candidate is there, in words (once its shared words are known)."""
    r = policy.retrieval
    c.why = []
    if c.guard_first:
        c.why.append("emergency guard")
    if c.by_key:
        c.why.append(f"key {c.memory.key}")
    if c.cos is not None and c.cos >= r.similarity_floor:
        c.why.append(f"similar to the task ({c.cos:.2f})")
    elif c.cos is not None and c.shared and c.cos >= r.similarity_floor - r.keyword_floor_relief:
        c.why.append(f"near the task ({c.cos:.2f}) and shares {', '.join(c.shared)} with it")
    if c.keyword > 0 and not c.shared:
        c.why.append("shares words with the task")
    elif c.shared and (c.cos is None or c.cos >= r.similarity_floor):
        c.why.append(f"shares {', '.join(c.shared)} with the task")


def passes_floor(c: Candidate, policy: Policy, vectors_used: bool) -> bool:
    """Relevant enough to count as an opportunity (keys and emergency guards always are)."""
    if c.by_key or c.guard_first:
        return True
    return _relevant(c, policy, vectors_used)


def _relevant(c: Candidate, policy: Policy, vectors_used: bool) -> bool:
    """Related to the task on its own merits (a key or a guard is not enough): similar enough,
    or nearly so while holding a distinctive word of the task; without vectors, that word."""
    r = policy.retrieval
    if c.cos is not None:
        return c.cos >= r.similarity_floor or (
            bool(c.shared) and c.cos >= r.similarity_floor - r.keyword_floor_relief
        )
    return not vectors_used and bool(c.shared)


def _under_floor(
    mid: str, cos: float | None, keyword: float, shared: list[str], policy: Policy
) -> Dropped:
    r = policy.retrieval
    floor, lowered = r.similarity_floor, r.similarity_floor - r.keyword_floor_relief
    if cos is None:
        why = "no similarity (no embedder) and no distinctive word of the task"
    elif shared:
        why = (
            f"similarity {cos:.3f} < {lowered:.2f}, the floor {floor:.2f} lowered for sharing"
            f" {', '.join(shared)} with the task"
        )
    elif keyword > 0:
        why = (
            f"similarity {cos:.3f} < floor {floor:.2f}; the words it shares with the task are"
            f" common ones (held by more than {r.distinctive_share:.0%} of the memories)"
        )
    else:
        why = f"similarity {cos:.3f} < floor {floor:.2f}; no word in common with the task"
    return Dropped(mid, "under_floor", why, cos, keyword, shared)


def _drop(c: Candidate, reason: str, detail: str) -> Dropped:
    return Dropped(c.memory.id, reason, detail, c.cos, c.keyword, c.shared)


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
) -> api.ContextResult:
    """Choose, render and record the memories for one task (see the module docstring).
    With no `task`, the project's most important memories. With `relevant_only`, keyed memories
    and guards must pass the similarity floor too (nothing comes back when nothing is similar)."""
    scope = Scope(project_id=project_id, owner=owner, path=path, protected=policy.protected_kinds)
    dropped: list[Dropped] = []
    eligible, used_vectors = _eligible(db, vectors, policy, scope, task, relevant_only, dropped)
    if exclude_injected and session_id:
        eligible = _not_injected(db, session_id, eligible, dropped)
    ranked = sorted(
        eligible, key=lambda c: (not c.guard_first, -c.score, c.memory.created_at, c.memory.id)
    )
    context_id = new_id("ctx")
    chosen, prompt = _fit(context_id, ranked, budget)
    if len(chosen) < len(ranked):
        ids = {c.memory.id for c in chosen}
        detail = f"ranked below the memories that filled the {budget}-token budget"
        dropped += [_drop(c, "over_budget", detail) for c in ranked if c.memory.id not in ids]
    tokens = count_tokens(prompt)
    now = now_iso()
    row = {
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
    }
    _record_given(db, row, chosen, eligible, now)
    return api.ContextResult(
        context_id=context_id,
        context_prompt=prompt,
        memory_ids=[c.memory.id for c in chosen],
        memories=[api.ContextMemory(**_public(c)) for c in chosen],
        tokens=tokens,
        budget=budget,
        considered=len(chosen) + len(dropped),
        opportunities=len(eligible),
        semantic_available=used_vectors,
        dropped=[_public_drop(d) for d in dropped],
    )


def _eligible(
    db: Database,
    vectors: Vectors | None,
    policy: Policy,
    scope: Scope,
    task: str | None,
    relevant_only: bool,
    dropped: list[Dropped],
) -> tuple[list[Candidate], bool]:
    """The candidates that may be given (those set aside go to `dropped`, with why), and
    whether vectors were used to find them."""
    if task is None:
        return important(db, scope, policy), False
    cands, used_vectors = candidates(
        db, vectors, task, scope, policy, key_lookup=True, floor_first=True, dropped=dropped
    )
    eligible = []
    for c in cands:
        if not passes_floor(c, policy, used_vectors):
            dropped.append(_under_floor(c.memory.id, c.cos, c.keyword, c.shared, policy))
        elif relevant_only and not _relevant(c, policy, used_vectors):
            what = "a key" if c.by_key else "an emergency guard"
            cos = "none" if c.cos is None else f"{c.cos:.3f}"
            detail = f"{what}, but not related to the task (similarity {cos})"
            dropped.append(_drop(c, "not_relevant", detail))
        else:
            eligible.append(c)
    return eligible, used_vectors


def _not_injected(
    db: Database, session_id: str, eligible: list[Candidate], dropped: list[Dropped]
) -> list[Candidate]:
    """The candidates not already given to this session (the others go to `dropped`)."""
    seen = db.read(lambda c: ssql.injected_in_session(c, session_id))
    dropped += [
        _drop(c, "already_injected", "already given to this session")
        for c in eligible
        if c.memory.id in seen
    ]
    return [c for c in eligible if c.memory.id not in seen]


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


def _public_drop(d: Dropped) -> api.ContextDropped:
    return api.ContextDropped(
        id=d.id,
        reason=d.reason,  # type: ignore[arg-type]  # Dropped.reason holds one of the five
        detail=d.detail,
        similarity=None if d.similarity is None else round(d.similarity, 4),
        keyword=round(d.keyword, 4),
        shared_words=d.shared_words,
    )


def _public(c: Candidate) -> dict[str, Any]:
    """A chosen memory as an agent sees it (the fields of `api.ContextMemory`)."""
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
