"""Three-stage retrieval (seed 004): semantic + keyword, graph expansion, rank & merge.

Stage 1 finds candidates by vector KNN and by FTS5 BM25, scores every candidate on both signals
and fuses the two rankings by reciprocal rank fusion. Stage 2 follows typed edges out of the best
candidates, in both directions, spreading a share of their relevance to the blocks they touch
(weighted by edge confidence and type). With the graph on, a second hop also searches for the
distinctive words of the first hop's best hits, for questions whose answer is spread over several
blocks. Stage 3 adds the spread relevance to each block's own, applies the block-type weight,
optional recency and the time the query names, and ranks a corrected or superseded block below
its replacement. Every match carries the numbers behind its score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import apsw
import msgspec

from reos_memory.errors import EmbedderUnavailable, InvalidInput
from reos_memory.graph import api, when
from reos_memory.index.vectors import Indexer
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import keywords as kw_sql
from reos_memory.store import vectors as vec_sql
from reos_memory.store.relationships import any_relationship, edges_from, edges_into

# Reciprocal rank fusion, tuned on locomo-dev and checked on SciFact (tools/eval_conversations.py,
# tools/eval_retrieval.py): a small k lets the first places of each ranking count (k = 60 spread
# the credit over the whole list), and BM25's ranking weighs 1.5 against the vectors' 1.0.
# k = 60, 1:1 -> k = 5, 1:1.5: locomo-dev R@10 0.6189 -> 0.6862, MRR@10 0.4054 -> 0.4731;
# SciFact nDCG@10 0.7190 -> 0.7288.
RRF_K = 5
VECTOR_WEIGHT = 1.0
KEYWORD_WEIGHT = 1.5

# How much an edge of each type carries relevance from a block to its neighbour.
EDGE_PRIORITY = {
    "references": 1.0,
    "follows_from": 1.0,
    "supports": 1.0,
    "corrects": 1.0,
    "supersedes": 1.0,
    "elaborates": 0.85,
    "derived_from": 0.85,
    "caused_by": 0.8,
    "causes": 0.8,
    "similar_to": 0.75,
    "related_to": 0.7,
    "contradicts": 0.7,
    "preceded_by": 0.6,
    "responds_to": 0.6,
}
REPLACES = ("corrects", "supersedes")
DEFAULT_TYPE_WEIGHTS = {
    "reasoning_chain": 1.0,
    "knowledge_fact": 1.0,
    "document_chunk": 0.95,
    "user_prompt": 0.9,
    "paragraph": 0.9,
}
DEFAULT_TYPE_WEIGHT = 0.9
# How the graph takes part (tuned on locomo-dev, tools/eval_conversations.py): a direct hit's
# vector similarity gains NEIGHBOURHOOD_WEIGHT x the best (edge weight x similarity) of the
# blocks one edge away, so a turn whose context matches ranks higher. Injecting neighbours at
# their parent's score (an early version) put them above other good hits (MRR@10 0.40 -> 0.28).
NEIGHBOURHOOD_WEIGHT = 0.3
NEIGHBOURHOOD_CANDIDATES = 30  # per ranking: the candidates whose neighbourhood is looked at
# Stage 2 spreads relevance (personalized-PageRank-like, bounded): each of the SPREAD_SEEDS best
# candidates passes its fusion score x edge confidence x type priority (x HOP_DECAY per further
# hop, up to graph_depth) to the blocks it touches, either direction; a block keeps the best it
# receives at each hop, and its score becomes fusion + GRAPH_WEIGHT x that. A block reached only
# over edges so ranks well below the hit it hangs off.
GRAPH_WEIGHT = 0.15
SPREAD_SEEDS = 30
# The second hop (pseudo relevance feedback, with the graph on): the words of the SECOND_HOP_SEEDS
# best first-hop candidates that the query lacks, weighted by 1/rank of the hits holding them x
# IDF, kept if in 2 or more blocks and at most SECOND_HOP_MAX_DF of them; the SECOND_HOP_TERMS
# best are searched by BM25 and that ranking joins the fusion with weight SECOND_HOP_WEIGHT.
SECOND_HOP_SEEDS = 15
SECOND_HOP_TERMS = 15
SECOND_HOP_SHORTLIST = 60  # words whose document frequency is looked up
SECOND_HOP_MAX_DF = 0.05
SECOND_HOP_WEIGHT = 1.5
# BM25 rows the second hop may score (its words are chosen to fit): a bound on its cost on large
# stores (5.7 -> 2.4 ms at 100K blocks) that a store of a few thousand blocks never reaches
SECOND_HOP_POSTINGS = 2_000
# A candidate written inside the time the query names ("in May 2023", "last week") ranks this
# much higher (graph/when.py); nothing outside it is dropped.
TIME_MATCH = 1.5
HOP_DECAY = 0.7
CORRECTION_FACTOR = 0.8


@dataclass
class Candidate:
    block_id: str
    cos: float | None = None
    bm25: float | None = None
    vec_rank: int | None = None
    kw_rank: int | None = None
    hop2_bm25: float | None = None
    hop2_rank: int | None = None
    found_by_vector: bool = False
    found_by_keyword: bool = False
    stage1: float = 0.0
    neighbourhood: float = 0.0  # added to the vector similarity for ranking (see above)
    graph: float = 0.0
    chain: list[str] = field(default_factory=list)
    reached_from: str | None = None
    superseded_by: str | None = None
    final: float = 0.0
    breakdown: dict[str, Any] = field(default_factory=dict)

    @property
    def in_stage1(self) -> bool:
        return self.found_by_vector or self.found_by_keyword

    @property
    def base(self) -> float:
        """The score before stage 3's factors: fusion plus the relevance spread to it."""
        return self.stage1 + GRAPH_WEIGHT * self.graph

    @property
    def source(self) -> str:
        if self.in_stage1 and self.graph > 0:
            return "both"
        if self.found_by_vector:
            return "semantic"
        if self.found_by_keyword:
            return "keyword"
        return "graph"


@dataclass
class SearchOutcome:
    query: str
    matches: list[dict[str, Any]]
    stats: dict[str, Any]
    markdown: str


class Query(api.SearchParams, kw_only=True):
    """What one memory/search asks for: the request's params and the service's postings budget."""

    keyword_budget: int = 5_000

    @classmethod
    def of(cls, p: api.SearchParams, keyword_budget: int) -> Query:
        """The request's params (already checked) with the service's budget."""
        q = msgspec.convert(p, cls, from_attributes=True)
        q.keyword_budget = keyword_budget
        return q

    @property
    def k(self) -> int:
        return max(self.candidates, self.max_results)


@dataclass
class Stage1:
    """The candidates of the vector and keyword searches, fused."""

    cands: dict[str, Candidate] = field(default_factory=dict)
    qvec: Any = None
    words: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    hop2_words: list[str] = field(default_factory=list)
    semantic_reason: str | None = None
    graph: bool = False  # the graph stages run: asked for, and the graph has edges

    @property
    def total_vector(self) -> int:
        return sum(c.found_by_vector for c in self.cands.values())

    @property
    def total_keyword(self) -> int:
        return sum(c.found_by_keyword and not c.found_by_vector for c in self.cands.values())


def search(
    db: Database, indexer: Indexer, p: api.SearchParams, *, keyword_budget: int = 5_000
) -> api.SearchResult:
    """Run the three stages and render the result as seed 004's "Relevant Memory" markdown."""
    out = search_outcome(db, indexer, Query.of(p, keyword_budget))
    return msgspec.convert(
        {"query": out.query, "matches": out.matches, "stats": out.stats, "markdown": out.markdown},
        api.SearchResult,
    )


def search_outcome(db: Database, indexer: Indexer, q: Query) -> SearchOutcome:
    """The three stages on a query, as plain values."""
    if not q.query.strip():
        raise InvalidInput("query", "must contain something to search for, not only spaces")
    s1 = _stage1(db, indexer, q)
    reached = _stage2(db, q, s1)
    ranked = _stage3(db, q, s1.cands)
    blocks = db.read(lambda conn: block_sql.get_blocks(conn, [c.block_id for c in ranked]))
    matches = [_match(c, blocks[c.block_id]) for c in ranked if c.block_id in blocks]
    return _outcome(q, s1, matches, reached)


def _stage1(db: Database, indexer: Indexer, q: Query) -> Stage1:
    """Vector KNN and BM25 side by side; the neighbourhood folded in; fused by rank."""
    s1 = Stage1()
    vector_future = None
    if q.mode in ("hybrid", "vector"):
        emb, s1.semantic_reason = indexer.usable_model()
        if emb is not None:
            vector_future = indexer.vector_stage(q.query, q.k, q.act_id)
    else:
        s1.semantic_reason = "mode=keyword"
    if q.mode in ("hybrid", "keyword"):
        _keyword_hits(db, indexer, q, s1)
    if vector_future is not None:
        try:
            s1.qvec, hits = vector_future.result()
        except EmbedderUnavailable as exc:
            s1.semantic_reason = exc.message
        else:
            _vector_hits(indexer, q, s1, hits)
    if q.include_graph and s1.cands and db.read(any_relationship):
        s1.graph = True  # the graph stages have edges to work with
        if q.mode != "vector":
            _fuse(s1.cands.values(), use_vec=s1.qvec is not None, use_kw=bool(s1.words))
            _second_hop(db, indexer, q, s1)
        if s1.qvec is not None:
            _fold_neighbourhood(db, indexer, s1.qvec, s1.cands)
    _fuse(s1.cands.values(), use_vec=s1.qvec is not None, use_kw=bool(s1.words))
    return s1


def _keyword_hits(db: Database, indexer: Indexer, q: Query, s1: Stage1) -> None:
    words = kw_sql.query_words(q.query)

    def keyword(conn: apsw.Connection) -> list[tuple[str, float]]:
        s1.words, s1.dropped = kw_sql.prune_words(conn, words, q.keyword_budget)
        return indexer.keyword_search(conn, s1.words, q.k, q.act_id, q.keyword_budget)

    for bid, score in db.read(keyword):
        cand = s1.cands.setdefault(bid, Candidate(bid))
        cand.bm25, cand.found_by_keyword = score, True


def _second_hop(db: Database, indexer: Indexer, q: Query, s1: Stage1) -> None:
    """BM25 for the distinctive words of the first hop's best candidates (see SECOND_HOP_*)."""
    seeds = _best(s1.cands, SECOND_HOP_SEEDS)
    asked = set(kw_sql.query_words(q.query))
    texts = db.read(lambda conn: vec_sql.texts_for(conn, [c.block_id for c in seeds]))
    weight: dict[str, float] = {}
    for rank, c in enumerate(seeds, 1):
        for w in kw_sql.query_words(texts.get(c.block_id, ("", ""))[0]):
            if w not in asked and not w.isdigit():
                weight[w] = weight.get(w, 0.0) + 1.0 / rank
    shortlist = sorted(weight, key=lambda w: -weight[w])[:SECOND_HOP_SHORTLIST]
    if not shortlist:
        return

    def search(conn: apsw.Connection) -> list[tuple[str, float]]:
        dfs = kw_sql.document_frequencies(conn, shortlist)
        total = max(1, block_sql.max_rowid(conn))  # about the block count, in O(log n)
        df_of = {
            w: df
            for w, df in zip(shortlist, dfs, strict=True)
            if 2 <= df <= max(2.0, SECOND_HOP_MAX_DF * total)
        }
        best = sorted(df_of, key=lambda w: (-weight[w] * math.log(total / df_of[w]), w))
        budget = min(q.keyword_budget, SECOND_HOP_POSTINGS)
        postings = 0
        for w in sorted(best[:SECOND_HOP_TERMS], key=lambda w: (df_of[w], w)):
            if postings + df_of[w] <= budget:  # the rarest fit, as in prune_words
                s1.hop2_words.append(w)
                postings += df_of[w]
        return indexer.keyword_search(conn, s1.hop2_words, q.k, q.act_id, budget)

    for bid, score in db.read(search):
        if bid not in s1.cands:
            s1.cands[bid] = Candidate(bid, found_by_keyword=True)
        s1.cands[bid].hop2_bm25 = score
    if s1.qvec is not None:
        _fill_similarities(indexer, s1)


def _vector_hits(indexer: Indexer, q: Query, s1: Stage1, hits: list[tuple[str, float]]) -> None:
    for bid, cos in hits:
        if cos >= q.min_similarity:
            c = s1.cands.setdefault(bid, Candidate(bid))
            c.cos, c.found_by_vector = cos, True
    # keyword-only hits get their vector similarity too (cheap: in memory), so both rankings
    # cover them; BM25 of vector-only hits was measured to add nothing
    _fill_similarities(indexer, s1)


def _fill_similarities(indexer: Indexer, s1: Stage1) -> None:
    """The query's similarity for every candidate that has none yet."""
    missing = [c.block_id for c in s1.cands.values() if c.cos is None]
    if missing:
        for bid, cos in indexer.similarities(s1.qvec, missing).items():
            s1.cands[bid].cos = cos


def _best(cands: dict[str, Candidate], n: int) -> list[Candidate]:
    """The `n` candidates of highest fusion (ties by id)."""
    return sorted(cands.values(), key=lambda c: (-c.stage1, c.block_id))[:n]


def _stage2(db: Database, q: Query, s1: Stage1) -> int:
    """Graph expansion from the best candidates; returns how many blocks it reached."""
    seeds = _best(s1.cands, SPREAD_SEEDS)
    if not (s1.graph and seeds):
        return 0
    return db.read(lambda conn: _spread(conn, seeds, s1.cands, q.graph_depth, q.act_id))


def _stage3(db: Database, q: Query, cands: dict[str, Candidate]) -> list[Candidate]:
    """Score the candidates, demote replaced blocks, and keep the best `max_results`.

    Only candidates that can still make the results are read and scored: a candidate's final
    score lies between its fusion-plus-graph score times the smallest and times the largest
    factor stage 3 can apply, so one whose best case is below the `max_results`-th worst case
    is left out. If demotion pulls the kept scores below what a left-out one could reach, every
    candidate is scored: the result is always the one of scoring them all."""
    if not cands:
        return []
    weights = {**DEFAULT_TYPE_WEIGHTS, **(q.type_weights or {})}
    base = {b: c.base for b, c in cands.items()}
    order = sorted(base, key=lambda b: (-base[b], b))
    low = min(*weights.values(), DEFAULT_TYPE_WEIGHT) * (1.0 - min(1.0, q.recency_weight))
    high = max(*weights.values(), DEFAULT_TYPE_WEIGHT) * TIME_MATCH
    keep = len(order)
    if len(order) > q.max_results and low > 0:
        floor = base[order[q.max_results - 1]] * low
        keep = next((i for i, b in enumerate(order) if base[b] * high < floor), len(order))
    ranked = _score(db, q, cands, order[:keep], weights)
    if keep < len(order):
        reachable = base[order[keep]] * high  # the best any left-out candidate could score
        if len(ranked) < q.max_results or ranked[-1].final <= reachable:
            ranked = _score(db, q, cands, order, weights)
    return ranked


def _score(
    db: Database, q: Query, cands: dict[str, Candidate], ids: list[str], weights: dict[str, float]
) -> list[Candidate]:
    """Final scores of the candidates `ids` (and of any candidate replacing one of them)."""

    def read(conn: apsw.Connection) -> tuple[dict[str, Any], dict[str, list[str]]]:
        summary = block_sql.block_summaries(conn, ids)
        replaced = _replacements(conn, list(summary), q.act_id)
        more = {n for new in replaced.values() for n in new if n in cands and n not in summary}
        if more:  # a replacement ranks the block it replaces: score it too
            summary.update(block_sql.block_summaries(conn, sorted(more)))
        return summary, replaced

    summary, replaced = db.read(read)
    now = datetime.now(UTC)
    asked = when.window(q.query, now)
    scored: dict[str, Candidate] = {}
    listed = set(ids)
    for bid in [*ids, *(b for b in summary if b not in listed)]:
        c = cands.get(bid)
        if c is None:
            continue
        if bid not in summary:  # deleted meanwhile
            del cands[bid]
            continue
        block_type, updated_at, _act, created_at = summary[bid]
        graph_weight = GRAPH_WEIGHT if c.graph > 0 else None
        base = c.base
        tw = weights.get(block_type, DEFAULT_TYPE_WEIGHT)
        recency = _recency(q, now, updated_at)
        in_time = (
            TIME_MATCH if asked is not None and asked.contains(_parse_ts(created_at)) else None
        )
        c.final = base * tw * recency * (in_time or 1.0)
        if c.in_stage1:  # fused in stage 1 (a block only the graph reached was not)
            c.breakdown.update(_fusion_breakdown(c))
        c.breakdown.update(
            type_weight=tw,
            graph_weight=graph_weight,
            recency=round(recency, 4),
            time_match=in_time,
            graph=round(c.graph, 4),
        )
        scored[bid] = c
    _demote_replaced(scored, replaced)
    return sorted(scored.values(), key=lambda c: (-c.final, c.block_id))[: q.max_results]


def _recency(q: Query, now: datetime, updated_at: str) -> float:
    if q.recency_weight <= 0:
        return 1.0
    age_days = max(0.0, (now - _parse_ts(updated_at)).total_seconds() / 86400)
    decay = math.exp(-age_days * math.log(2) / q.recency_half_life_days)
    return 1.0 - q.recency_weight + q.recency_weight * decay


def _demote_replaced(cands: dict[str, Candidate], replaced: dict[str, list[str]]) -> None:
    """A corrected or superseded block ranks below what replaces it. Each pass starts from the
    unpenalised scores, so a chain (C replaces B replaces A) settles without compounding."""
    unpenalised = {bid: c.final for bid, c in cands.items()}
    for _ in range(3):
        for old_id, new_ids in replaced.items():
            old = cands.get(old_id)
            if old is None:
                continue
            live = [cands[n] for n in new_ids if n in cands]
            score = unpenalised[old_id] * CORRECTION_FACTOR
            if live:
                score = min(score, max(n.final for n in live) * CORRECTION_FACTOR)
            old.final = score
            old.breakdown["correction_penalty"] = CORRECTION_FACTOR
            old.superseded_by = live[0].block_id if live else new_ids[0]


def _fold_neighbourhood(
    db: Database, indexer: Indexer, qvec: Any, cands: dict[str, Candidate]
) -> None:
    """A candidate's vector evidence includes its neighbourhood: NEIGHBOURHOOD_WEIGHT x the
    best (edge confidence x type priority x similarity to the query) among the blocks one edge
    away, in either direction."""
    # only candidates that can still reach the results: the best by similarity or by BM25
    with_cos = [c for c in cands.values() if c.cos is not None]
    by_cos = sorted(with_cos, key=lambda c: (-(c.cos or 0.0), c.block_id))[
        :NEIGHBOURHOOD_CANDIDATES
    ]
    by_kw = sorted(
        (c for c in with_cos if c.bm25 is not None), key=lambda c: (-(c.bm25 or 0.0), c.block_id)
    )[:NEIGHBOURHOOD_CANDIDATES]
    ids = list(dict.fromkeys(c.block_id for c in [*by_cos, *by_kw]))
    if not ids:
        return
    rows = db.read(lambda conn: edges_from(conn, ids, "both", None))
    near: dict[str, dict[str, float]] = {}
    for _eid, src, tgt, rtype, conf in rows:
        weight = (1.0 if conf is None else conf) * EDGE_PRIORITY.get(rtype, 0.6)
        for a, b in ((src, tgt), (tgt, src)):
            if a in cands:
                links = near.setdefault(a, {})
                links[b] = max(weight, links.get(b, 0.0))
    if not near:
        return
    sims = indexer.similarities(qvec, sorted({b for links in near.values() for b in links}))
    for bid, links in near.items():
        c = cands[bid]
        best = max((w * sims[b] for b, w in links.items() if b in sims), default=0.0)
        if c.cos is not None and best > 0:
            c.neighbourhood = NEIGHBOURHOOD_WEIGHT * best


def _fuse(cands: Sequence[Candidate] | Any, *, use_vec: bool, use_kw: bool) -> None:
    items = list(cands)
    # ties break by block id, so every index (memory or vec0) gives the same order
    if use_vec:
        scored = [c for c in items if c.cos is not None]
        for rank, c in enumerate(
            sorted(scored, key=lambda c: (-((c.cos or 0.0) + c.neighbourhood), c.block_id)), 1
        ):
            c.vec_rank = rank
    if use_kw:
        scored = [c for c in items if c.bm25 is not None]
        for rank, c in enumerate(sorted(scored, key=lambda c: (-(c.bm25 or 0.0), c.block_id)), 1):
            c.kw_rank = rank
    scored = [c for c in items if c.hop2_bm25 is not None]  # the second hop's, if it ran
    for rank, c in enumerate(sorted(scored, key=lambda c: (-(c.hop2_bm25 or 0.0), c.block_id)), 1):
        c.hop2_rank = rank
    # the best possible fusion (first in the vector and keyword rankings) scores 1.0; the second
    # hop's ranking, when it ran, adds to that, so a fusion may exceed 1.0
    best = ((VECTOR_WEIGHT if use_vec else 0.0) + (KEYWORD_WEIGHT if use_kw else 0.0)) / (RRF_K + 1)
    best = best or 1.0
    for c in items:
        rrf = 0.0
        if c.vec_rank is not None:
            rrf += VECTOR_WEIGHT / (RRF_K + c.vec_rank)
        if c.kw_rank is not None:
            rrf += KEYWORD_WEIGHT / (RRF_K + c.kw_rank)
        if c.hop2_rank is not None:
            rrf += SECOND_HOP_WEIGHT / (RRF_K + c.hop2_rank)
        c.stage1 = rrf / best


def _fusion_breakdown(c: Candidate) -> dict[str, Any]:
    """Stage 1's part of a candidate's score breakdown (written for the scored ones only)."""
    return {
        "vector_similarity": None if c.cos is None else round(c.cos, 4),
        "neighbourhood": round(c.neighbourhood, 4) if c.neighbourhood else None,
        "vector_rank": c.vec_rank,
        "keyword_bm25": None if c.bm25 is None else round(c.bm25, 4),
        "keyword_rank": c.kw_rank,
        "second_hop_rank": c.hop2_rank,
        "fusion": round(c.stage1, 4),
    }


def _spread(
    conn: apsw.Connection,
    seeds: list[Candidate],
    cands: dict[str, Candidate],
    depth: int,
    act_id: str | None,
) -> int:
    """Spread the seeds' fusion scores over edges in both directions, `depth` hops (see
    GRAPH_WEIGHT); adds to each block's `graph`, returns how many blocks only the graph reached."""
    reached = 0
    # block -> (what it passes on, chain from its seed, the seed)
    frontier: dict[str, tuple[float, list[str], str]] = {
        s.block_id: (s.stage1, [], s.block_id) for s in seeds
    }
    for d in range(1, depth + 1):
        nxt: dict[str, tuple[float, list[str], str]] = {}
        for _eid, src, tgt, rtype, conf in edges_from(conn, list(frontier), "both", None):
            weight = (1.0 if conf is None else conf) * EDGE_PRIORITY.get(rtype, 0.6)
            for here, there, label in ((src, tgt, rtype), (tgt, src, f"{rtype} (incoming)")):
                if here not in frontier or there == here:
                    continue
                score, chain, origin = frontier[here]
                if there == origin:
                    continue  # no relevance back to where it came from
                passed = score * weight * HOP_DECAY ** (d - 1)
                prev = nxt.get(there)
                if prev is None or (passed, prev[2]) > (prev[0], origin):
                    nxt[there] = (passed, [*chain, label], origin)
        if act_id is not None and nxt:
            acts = block_sql.block_summaries(conn, list(nxt))
            nxt = {b: v for b, v in nxt.items() if b in acts and acts[b][2] == act_id}
        for bid, (passed, chain, origin) in nxt.items():
            c = cands.setdefault(bid, Candidate(bid))
            if c.graph == 0 and not c.in_stage1:
                reached += 1
            if not c.chain:
                c.chain, c.reached_from = chain, origin
            c.graph += passed
        frontier = nxt
    return reached


def _replacements(
    conn: apsw.Connection, block_ids: list[str], act_id: str | None
) -> dict[str, list[str]]:
    """old block -> blocks that correct or supersede it (within `act_id` when the search is
    limited to an act: a replacement elsewhere says nothing about this act's blocks)."""
    out: dict[str, list[str]] = {}
    for _eid, src, tgt, _t, _c in edges_into(conn, block_ids, REPLACES):
        out.setdefault(tgt, []).append(src)
    if act_id is not None and out:
        acts = block_sql.block_summaries(conn, sorted({n for v in out.values() for n in v}))
        out = {
            old: kept
            for old, new in out.items()
            if (kept := [n for n in new if n in acts and acts[n][2] == act_id])
        }
    return out


def _parse_ts(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def _match(c: Candidate, block: Any) -> dict[str, Any]:
    c.breakdown["final"] = round(c.final, 4)
    m = {
        "block_id": c.block_id,
        "block_type": block.type,
        "act_id": block.act_id,
        "content": block.content,
        "score": round(c.final, 4),
        "source": c.source,
        "relationship_chain": c.chain,
        "via": [
            v
            for v, on in (
                ("vector", c.found_by_vector),
                ("keyword", c.found_by_keyword),
                ("graph", c.graph > 0),
            )
            if on
        ],
        "score_breakdown": c.breakdown,
        "properties": block.properties,
    }
    if c.reached_from and c.reached_from != c.block_id and c.graph > 0:
        m["reached_from"] = c.reached_from
    if c.superseded_by:
        m["superseded_by"] = c.superseded_by
    return m


def _outcome(
    q: Query, s1: Stage1, matches: list[dict[str, Any]], total_graph: int
) -> SearchOutcome:
    semantic_used = s1.qvec is not None
    stats: dict[str, Any] = {
        "keyword_terms": s1.words,
        "keyword_terms_dropped": s1.dropped,
        "second_hop_terms": s1.hop2_words,
        "total_semantic": s1.total_vector,
        "total_keyword": s1.total_keyword,
        "total_graph": total_graph if s1.cands else 0,
        "returned": len(matches),
        "semantic_available": semantic_used,
    }
    if s1.semantic_reason and not semantic_used:
        stats["semantic_unavailable_reason"] = s1.semantic_reason
    return SearchOutcome(
        query=q.query, matches=matches, stats=stats, markdown=render_markdown(matches)
    )


def _bar(score: float) -> str:
    return "█" * max(1, min(5, round(score * 5)))


def _cite(m: dict[str, Any]) -> str:
    props = m.get("properties") or {}
    name = props.get("source_document_name") or props.get("filename")
    if m["block_type"] != "document_chunk" or not name:
        return ""
    page = props.get("page_number")
    return f" | Source: {name}" + (f" (page {page})" if page else "")


def render_markdown(matches: list[dict[str, Any]], max_chars: int = 1500) -> str:
    """Seed 004's "Relevant Memory" section for an agent's prompt ('' when nothing matched)."""
    if not matches:
        return ""
    counts = {"semantic": 0, "keyword": 0, "graph": 0}
    for m in matches:
        counts[
            "graph"
            if m["source"] == "graph"
            else ("keyword" if m["source"] == "keyword" else "semantic")
        ] += 1
    parts = [f"{counts['semantic']} semantic"]
    if counts["keyword"]:
        parts.append(f"{counts['keyword']} keyword")
    parts.append(f"{counts['graph']} via relationships")
    noun = "memory" if len(matches) == 1 else "memories"
    lines = [
        "## Relevant Memory",
        "",
        f"*Retrieved {len(matches)} relevant {noun} ({', '.join(parts)})*",
        "",
    ]
    number = {m["block_id"]: i for i, m in enumerate(matches, 1)}
    for i, m in enumerate(matches, 1):
        text = m["content"].strip()
        if len(text) > max_chars:
            text = text[: max_chars - 1].rstrip() + "…"
        lines.append(f"### Memory #{i} [{_bar(m['score'])}] ({m['source']})")
        lines.append(f"*Type: {m['block_type']} | Score: {m['score']:.2f}{_cite(m)}*")
        lines.append("")
        lines.append(text)
        lines.append("")
        if m["relationship_chain"]:
            lines.append("*Connected via: " + " → ".join(m["relationship_chain"]) + "*")
            lines.append("")
        if m.get("superseded_by"):
            by = number.get(m["superseded_by"])
            lines.append(f"*Superseded by {'Memory #' + str(by) if by else m['superseded_by']}*")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
