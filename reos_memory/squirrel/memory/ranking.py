"""The ranking of memories for a task or a query, with no database behind it.

One implementation for the local service (SQLite, memory/local_context.py) and the team server
(PostgreSQL): each store finds its candidates its own way and hands their raw signals here, so
both apply the same visibility rule, scores, floor, guards-first order and budget fitting.

The floor is hybrid: a memory is relevant when its cosine similarity reaches `similarity_floor`,
or reaches the floor lowered by `keyword_floor_relief` while it holds a distinctive word of the
task (one found in at most `distinctive_share` of all memories; never a stopword). Keywords alone
never pass it. Rank: the seed's factors with weights from the policy. Emergency guards come
first; the rest follows by score until the budget is spent. Every memory looked at and not
returned is reported with the first reason found.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from reos_memory.models import Memory, MemoryMetrics
from reos_memory.squirrel import api
from reos_memory.squirrel.markers import CONTEXT_CLOSE, CONTEXT_OPEN
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.token_count import Size, count_tokens, size, truncate_to_tokens
from reos_memory.stopwords import STOPWORDS

LIVE = ("provisional", "active")
# keyword search scores at most this many postings, the commonest words dropped first (their
# BM25 weight is the smallest): every store's candidates (`store/keywords.py: fit_postings`)
KEYWORD_POSTINGS = 1000
SECTIONS = (
    ("guard", "Guards (do not ignore)"),
    ("rules", "Invariants and preferences"),
    ("pattern", "Patterns"),
    ("note", "Notes"),
)
HEADER = "Memories from earlier sessions in this project (Squirrel). Use them; they may be stale."
MAX_LINE_TOKENS = 120  # one memory never eats a whole small budget

Owner = tuple[str, str]  # (owner_type, owner_id)


@dataclass
class Candidate:
    """A memory found for a request, with its signals; built by `candidate`."""

    memory: Memory
    metrics: MemoryMetrics
    cos: float | None = None
    keyword: float = 0.0  # keyword score relative to the best keyword hit, 0..1
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
    """Which memories a request may see. `owners`: several, because one budget may hold the
    user's own memories and the team's and org's; None: any owner."""

    project_id: str | None
    owners: frozenset[Owner] | None
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


@dataclass
class Choice:
    """What one get_task_context gives, and what its store counts: an opportunity for each
    eligible memory, a use for each chosen one."""

    result: api.ContextResult
    chosen: list[Candidate]
    eligible: list[Candidate]


def path_inside(path: str, prefix: str) -> bool:
    """True when repository path `path` is `prefix` or below it (whole components only)."""
    return prefix == "" or path == prefix or path.startswith(prefix + "/")


def hidden(m: Memory, scope: Scope, now: str) -> str | None:
    """Why a memory is not for this request (None: it is)."""
    if m.status not in scope.statuses:
        return f"status {m.status}"
    if scope.kinds is not None and m.kind not in scope.kinds:
        return f"kind {m.kind}"
    if scope.owners is not None and (m.owner_type, m.owner_id) not in scope.owners:
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
    return [w for w, df in zip(words, dfs, strict=True) if 0 < df <= most and w not in STOPWORDS]


def relative(keyword_scores: dict[str, float]) -> dict[str, float]:
    """Keyword scores (BM25, ts_rank: higher is better) relative to the best of them, 0..1."""
    best = max(keyword_scores.values(), default=0.0)
    return {i: s / best if best > 0 else 0.0 for i, s in keyword_scores.items()}


def candidate(
    memory: Memory,
    metrics: MemoryMetrics,
    policy: Policy,
    *,
    cos: float | None = None,
    keyword: float = 0.0,
    by_key: bool = False,
    emergency: bool = False,
    shared: Iterable[str] = (),
) -> Candidate:
    """A candidate from its raw signals, scored and explained: the one way every store builds
    them (`keyword` relative to the request's best hit, see `relative`)."""
    c = Candidate(memory, metrics, cos, keyword, by_key, emergency, shared=list(shared))
    _score(c, policy)
    _explain(c, policy)
    return c


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
    """Why a candidate is there, in words."""
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
    return relevant(c, policy, vectors_used)


def relevant(c: Candidate, policy: Policy, vectors_used: bool) -> bool:
    """Related to the task on its own merits (a key or a guard is not enough): similar enough,
    or nearly so while holding a distinctive word of the task; without vectors, that word."""
    r = policy.retrieval
    if c.cos is not None:
        return c.cos >= r.similarity_floor or (
            bool(c.shared) and c.cos >= r.similarity_floor - r.keyword_floor_relief
        )
    return not vectors_used and bool(c.shared)


def under_floor(
    mid: str, cos: float | None, keyword: float, shared: list[str], policy: Policy
) -> Dropped:
    """A memory left under the floor, with why in words (a store may drop one before reading
    its row, hence the raw values)."""
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


def fit(context_id: str, ranked: list[Candidate], budget: int) -> tuple[list[Candidate], str]:
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


def choose(
    cands: list[Candidate],
    policy: Policy,
    *,
    context_id: str,
    budget: int,
    vectors_used: bool,
    floor: bool = True,
    relevant_only: bool = False,
    given: Collection[str] = frozenset(),
    dropped: list[Dropped] | None = None,
) -> Choice:
    """Everything get_task_context does once its candidates are found: the floor (not with
    `floor` false: no task to be relevant to), `relevant_only` (keys and guards must pass it
    too), leaving out the memories already `given` to the session, emergency guards first, then
    score, within the budget. `dropped` holds what the store already set aside; every memory
    left out here joins it with its reason."""
    dropped = [] if dropped is None else dropped
    eligible = _eligible(cands, policy, vectors_used, relevant_only, dropped) if floor else cands
    if given:
        note = "already given to this session"
        dropped += [_drop(c, "already_injected", note) for c in eligible if c.memory.id in given]
        eligible = [c for c in eligible if c.memory.id not in given]
    ranked = sorted(
        eligible, key=lambda c: (not c.guard_first, -c.score, c.memory.created_at, c.memory.id)
    )
    chosen, prompt = fit(context_id, ranked, budget)
    if len(chosen) < len(ranked):
        ids = {c.memory.id for c in chosen}
        detail = f"ranked below the memories that filled the {budget}-token budget"
        dropped += [_drop(c, "over_budget", detail) for c in ranked if c.memory.id not in ids]
    result = api.ContextResult(
        context_id=context_id,
        context_prompt=prompt,
        memory_ids=[c.memory.id for c in chosen],
        memories=[api.ContextMemory(**_public(c)) for c in chosen],
        tokens=count_tokens(prompt),
        budget=budget,
        considered=len(chosen) + len(dropped),
        opportunities=len(eligible),
        semantic_available=vectors_used,
        dropped=[_public_drop(d) for d in dropped],
    )
    return Choice(result, chosen, eligible)


def _eligible(
    cands: list[Candidate],
    policy: Policy,
    vectors_used: bool,
    relevant_only: bool,
    dropped: list[Dropped],
) -> list[Candidate]:
    """The candidates over the floor (the others go to `dropped`, with why)."""
    eligible = []
    for c in cands:
        if not passes_floor(c, policy, vectors_used):
            dropped.append(under_floor(c.memory.id, c.cos, c.keyword, c.shared, policy))
        elif relevant_only and not relevant(c, policy, vectors_used):
            what = "a key" if c.by_key else "an emergency guard"
            cos = "none" if c.cos is None else f"{c.cos:.3f}"
            detail = f"{what}, but not related to the task (similarity {cos})"
            dropped.append(_drop(c, "not_relevant", detail))
        else:
            eligible.append(c)
    return eligible


def search_matches(cands: list[Candidate], policy: Policy, limit: int) -> list[api.SearchMatch]:
    """The best `limit` matches of a query: similar enough, or sharing words with it."""
    floor = policy.retrieval.similarity_floor
    hits = [c for c in cands if (c.cos is not None and c.cos >= floor) or c.keyword > 0]
    hits.sort(key=lambda c: (-c.score, c.memory.id))
    return [
        api.SearchMatch(
            **_public(c),
            similarity=None if c.cos is None else round(c.cos, 4),
            keyword=round(c.keyword, 4),
            project_id=c.memory.project_id,
        )
        for c in hits[:limit]
    ]


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
