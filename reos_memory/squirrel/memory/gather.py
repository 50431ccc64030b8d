"""One candidate gathering for get_task_context and search, over any store.

A store (the local SQLite one, the team server's PostgreSQL one) implements `Source`: its
searches (nearest by vector, best by keyword, keyed memories and emergency guards), the
similarity of given memories to the query, which of the query's distinctive words memories
hold, and their rows. What is done with those answers is here, once: which words are
distinctive, which keyword hits under the similarity floor may stay (they share a distinctive
word and are just under it), what is dropped before its row is read and why, what the scope
hides. So the same memories and task give the same candidates from either store, and the
ranking that follows (`ranking.choose`) is shared too.

This module imports no store.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from reos_memory.models import Memory, MemoryMetrics
from reos_memory.squirrel.memory.policy import Policy
from reos_memory.squirrel.memory.ranking import (
    Candidate,
    Dropped,
    Scope,
    candidate,
    distinctive,
    hidden,
    relative,
    under_floor,
)


class Hits(NamedTuple):
    """What a store's searches found for one query."""

    near: dict[str, float]  # id -> cosine similarity of the nearest memories
    keyword: dict[str, float]  # id -> keyword score (BM25, ts_rank: higher is better)
    words: list[str]  # the query words searched (the rarest, within the postings budget)
    dfs: list[int]  # how many memories hold each of `words`
    total: int  # how many memories the frequencies are out of (0 when no keyword hit)
    keyed: set[str]  # found by their key
    guards: set[str]  # the project's emergency guards
    used_vectors: bool  # whether the query was embedded and searched by vector


class Source(Protocol):
    """One request's view of a store (it holds the query's vector, once there is one)."""

    def hits(self, query: str, *, key_lookup: bool) -> Hits: ...

    def similarities(self, ids: list[str]) -> dict[str, float]:
        """The cosine similarity of these memories to the query (only after `hits` used
        vectors)."""
        ...

    def words_held(self, words: list[str], ids: list[str]) -> dict[str, list[str]]:
        """id -> which of `words` the memory holds (as its keyword index stems them)."""
        ...

    def rows(self, ids: list[str]) -> tuple[dict[str, Memory], dict[str, MemoryMetrics]]:
        """The memories of these ids that still exist, and their metrics."""
        ...


class Signals(NamedTuple):
    """What the searches found for each memory id, before its row is read."""

    near: dict[str, float]  # cosine similarity
    keyword: dict[str, float]  # relative to the best keyword hit
    keyed: set[str]
    guards: set[str]
    shared: dict[str, list[str]]  # the task's distinctive words each holds


def gather(
    src: Source,
    query: str,
    scope: Scope,
    policy: Policy,
    now: str,
    *,
    key_lookup: bool,
    floor_first: bool = False,
    dropped: list[Dropped] | None = None,
) -> tuple[list[Candidate], bool]:
    """Filtered candidates with their signals; and whether vectors were used. With
    `floor_first`, memories under the floor are dropped before their rows are read (keyed ones,
    emergency guards, and keyword hits just under it that share a distinctive word stay).
    Memories left out are added to `dropped`."""
    r = policy.retrieval
    h = src.hits(query, key_lookup=key_lookup)
    distinct: list[str] = []
    if h.keyword:  # among the searched words only: their postings are within the budget
        distinct = distinctive(h.words, h.dfs, h.total, r.distinctive_share)
    near = dict(h.near)
    floor, lowered = r.similarity_floor, r.similarity_floor - r.keyword_floor_relief
    if h.used_vectors:
        missing = [i for i in dict.fromkeys([*h.keyed, *h.guards, *h.keyword]) if i not in near]
        if missing:
            near.update(src.similarities(missing))
        # the keyword hits under the floor: which distinctive words they hold decides the ones
        # just under it, and tells the others why they stay out
        check = [i for i, c in near.items() if c < floor and i in h.keyword]
    else:
        check = list(h.keyword)
    shared = src.words_held(distinct, check) if check and distinct else {}
    kw = h.keyword
    if h.used_vectors and floor_first:
        kept_near: dict[str, float] = {}
        rel = relative(kw)
        for i, c in near.items():
            if c >= floor or i in h.keyed or i in h.guards or (c >= lowered and i in shared):
                kept_near[i] = c
            elif dropped is not None:
                dropped.append(under_floor(i, c, rel.get(i, 0.0), shared.get(i, []), policy))
        near = kept_near
        kw = {i: s for i, s in kw.items() if i in near}
    ids = list(dict.fromkeys([*h.keyed, *h.guards, *near, *kw]))
    signals = Signals(near, relative(kw), h.keyed, h.guards, shared)
    return build(src, ids, scope, policy, signals, now, dropped), h.used_vectors


def build(
    src: Source,
    ids: list[str],
    scope: Scope,
    policy: Policy,
    found: Signals,
    now: str,
    dropped: list[Dropped] | None = None,
) -> list[Candidate]:
    """The candidates of these ids that the scope lets through (the others go to `dropped`)."""
    if not ids:
        return []
    mems, metrics = src.rows(ids)
    out = []
    for mid in ids:
        m = mems.get(mid)
        why_not = "gone" if m is None else hidden(m, scope, now)
        if m is None or why_not is not None:
            if dropped is not None and why_not is not None:
                k = found.keyword.get(mid, 0.0)
                dropped.append(Dropped(mid, "filtered", why_not, found.near.get(mid), k, []))
            continue
        out.append(
            candidate(
                m,
                metrics.get(mid) or MemoryMetrics(memory_id=mid),
                policy,
                cos=found.near.get(mid),
                keyword=found.keyword.get(mid, 0.0),
                by_key=mid in found.keyed,
                emergency=mid in found.guards,
                shared=found.shared.get(mid, []),
            )
        )
    return out
