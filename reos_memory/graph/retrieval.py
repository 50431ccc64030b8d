"""Three-stage retrieval (seed 004): semantic + keyword, graph expansion, rank & merge.

Stage 1 finds candidates by vector KNN and by FTS5 BM25, scores every candidate on both signals
and fuses the two rankings by reciprocal rank fusion. Stage 2 follows typed edges out of the best
candidates (and back from any block that corrects or supersedes one), weighting by edge
confidence and type. Stage 3 applies the block-type weight, the source bonus
(both > semantic > graph), optional recency, and ranks a corrected or superseded block below its
replacement. Every match carries the numbers behind its score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import apsw

from reos_memory.errors import EmbedderUnavailable, InvalidInput
from reos_memory.graph import when
from reos_memory.graph.indexing import Indexer
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import keywords as kw_sql
from reos_memory.store.relationships import edges_from, edges_into

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
# blocks one edge away, so a turn whose context matches ranks higher; a block reached only over
# edges scores GRAPH_ONLY_FACTOR x its path score, below the direct hits it hangs off. Injecting
# neighbours at their parent's score (the old way) put them above other good hits (MRR@10
# 0.40 -> 0.28).
NEIGHBOURHOOD_WEIGHT = 0.3
GRAPH_ONLY_FACTOR = 0.3
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


def search(
    db: Database,
    indexer: Indexer,
    *,
    query: str,
    act_id: str | None = None,
    max_results: int = 20,
    include_graph: bool = True,
    mode: str = "hybrid",
    min_similarity: float = 0.2,
    graph_depth: int = 2,
    candidates: int = 100,
    recency_weight: float = 0.0,
    recency_half_life_days: float = 30.0,
    type_weights: dict[str, float] | None = None,
    keyword_budget: int = 20_000,
) -> SearchOutcome:
    """Run the three stages and render the result as seed 004's "Relevant Memory" markdown."""
    if not query.strip():
        raise InvalidInput("query", "must contain something to search for, not only spaces")
    k = max(candidates, max_results)
    cands: dict[str, Candidate] = {}
    semantic_reason: str | None = None
    qvec = None

    # -- stage 1: vector + keyword, side by side ----------------------------------------------
    vector_future = None
    if mode in ("hybrid", "vector"):
        emb, semantic_reason = indexer.usable_model()
        if emb is not None:
            vector_future = indexer.vector_stage(query, k, act_id)
    else:
        semantic_reason = "mode=keyword"
    words: list[str] = []
    dropped: list[str] = []
    if mode in ("hybrid", "keyword"):
        words = kw_sql.query_words(query)

        def keyword(conn: apsw.Connection) -> list[tuple[str, float]]:
            nonlocal words, dropped
            words, dropped = kw_sql.prune_words(conn, words, keyword_budget)
            return kw_sql.keyword_search(conn, words, k, act_id)

        for bid, score in db.read(keyword):
            cand = cands.setdefault(bid, Candidate(bid))
            cand.bm25, cand.found_by_keyword = score, True
    if vector_future is not None:
        try:
            qvec, hits = vector_future.result()
        except EmbedderUnavailable as exc:
            semantic_reason = exc.message
        else:
            for bid, cos in hits:
                if cos >= min_similarity:
                    c = cands.setdefault(bid, Candidate(bid))
                    c.cos, c.found_by_vector = cos, True
            # keyword-only hits get their vector similarity too (cheap: in memory), so both
            # rankings cover them; BM25 of vector-only hits was measured to add nothing
            missing = [c.block_id for c in cands.values() if c.cos is None]
            for bid, cos in indexer.similarities(qvec, missing).items():
                cands[bid].cos = cos
    if include_graph and qvec is not None and cands:
        _fold_neighbourhood(db, indexer, qvec, cands)
    _fuse(cands.values(), use_vec=qvec is not None, use_kw=bool(words))
    total_vector = sum(c.found_by_vector for c in cands.values())
    total_keyword = sum(c.found_by_keyword and not c.found_by_vector for c in cands.values())

    # -- stage 2: graph expansion --------------------------------------------------------------
    seeds = sorted(cands.values(), key=lambda c: -c.stage1)[:max_results]
    total_graph = 0
    if include_graph and seeds:
        total_graph = db.read(lambda conn: _expand(conn, seeds, cands, graph_depth, act_id))

    # -- stage 3: rank & merge -----------------------------------------------------------------
    keyword_info = {"keyword_terms": words, "keyword_terms_dropped": dropped}
    if not cands:
        return _outcome(
            query,
            [],
            total_vector,
            total_keyword,
            0,
            semantic_reason,
            qvec is not None,
            keyword_info,
        )
    summary = db.read(lambda conn: block_sql.block_summaries(conn, list(cands)))
    replaced = db.read(lambda conn: _replacements(conn, list(summary), act_id))
    weights = {**DEFAULT_TYPE_WEIGHTS, **(type_weights or {})}
    now = datetime.now(UTC)
    asked = when.window(query, now)
    for c in list(cands.values()):
        if c.block_id not in summary:  # deleted meanwhile
            del cands[c.block_id]
            continue
        block_type, updated_at, _act, created_at = summary[c.block_id]
        graph_only = None if c.in_stage1 else GRAPH_ONLY_FACTOR
        base = c.stage1 if graph_only is None else c.graph * graph_only
        tw = weights.get(block_type, DEFAULT_TYPE_WEIGHT)
        recency = 1.0
        if recency_weight > 0:
            age_days = max(0.0, (now - _parse_ts(updated_at)).total_seconds() / 86400)
            recency = (
                1.0
                - recency_weight
                + recency_weight * math.exp(-age_days * math.log(2) / recency_half_life_days)
            )
        in_time = TIME_MATCH if asked is not None and asked.contains(_parse_ts(created_at)) else None
        c.final = base * tw * recency * (in_time or 1.0)
        c.breakdown.update(
            type_weight=tw,
            graph_only_factor=graph_only,
            recency=round(recency, 4),
            time_match=in_time,
            graph=round(c.graph, 4),
        )
    # A corrected or superseded block ranks below what replaces it. Each pass starts from the
    # unpenalised scores, so a chain (C replaces B replaces A) settles without compounding.
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
    ranked = sorted(cands.values(), key=lambda c: (-c.final, c.block_id))[:max_results]
    blocks = db.read(lambda conn: block_sql.get_blocks(conn, [c.block_id for c in ranked]))
    matches = [_match(c, blocks[c.block_id]) for c in ranked if c.block_id in blocks]
    return _outcome(
        query,
        matches,
        total_vector,
        total_keyword,
        total_graph,
        semantic_reason,
        qvec is not None,
        keyword_info,
    )


def _fold_neighbourhood(
    db: Database, indexer: Indexer, qvec: Any, cands: dict[str, Candidate]
) -> None:
    """A candidate's vector evidence includes its neighbourhood: NEIGHBOURHOOD_WEIGHT x the
    best (edge confidence x type priority x similarity to the query) among the blocks one edge
    away, in either direction."""
    ids = [c.block_id for c in cands.values() if c.cos is not None]
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
    # the best possible fusion (first in every ranking used) scores 1.0
    best = ((VECTOR_WEIGHT if use_vec else 0.0) + (KEYWORD_WEIGHT if use_kw else 0.0)) / (RRF_K + 1)
    best = best or 1.0
    for c in items:
        rrf = 0.0
        if c.vec_rank is not None:
            rrf += VECTOR_WEIGHT / (RRF_K + c.vec_rank)
        if c.kw_rank is not None:
            rrf += KEYWORD_WEIGHT / (RRF_K + c.kw_rank)
        c.stage1 = rrf / best
        c.breakdown.update(
            vector_similarity=None if c.cos is None else round(c.cos, 4),
            neighbourhood=round(c.neighbourhood, 4) if c.neighbourhood else None,
            vector_rank=c.vec_rank,
            keyword_bm25=None if c.bm25 is None else round(c.bm25, 4),
            keyword_rank=c.kw_rank,
            fusion=round(c.stage1, 4),
        )


def _expand(
    conn: apsw.Connection,
    seeds: list[Candidate],
    cands: dict[str, Candidate],
    depth: int,
    act_id: str | None,
) -> int:
    """Follow outgoing edges (and incoming corrects/supersedes) from the seeds; returns blocks reached."""
    reached = 0
    frontier: list[tuple[str, float, list[str], str]] = [
        (s.block_id, s.stage1, [], s.block_id) for s in seeds
    ]
    seen = {s.block_id for s in seeds}
    for d in range(1, depth + 1):
        if not frontier:
            break
        score_of = {bid: (score, chain, origin) for bid, score, chain, origin in frontier}
        ids = list(score_of)
        out_rows = edges_from(conn, ids, "outgoing", None)
        # the block that corrects or supersedes a seed is what the agent should see
        in_rows = edges_from(conn, ids, "incoming", REPLACES) if d == 1 else []
        nxt: dict[str, tuple[float, list[str], str]] = {}
        for rows, outgoing in ((out_rows, True), (in_rows, False)):
            for _eid, src, tgt, rtype, conf in rows:
                here, there = (src, tgt) if outgoing else (tgt, src)
                parent_score, chain, origin = score_of[here]
                weight = (1.0 if conf is None else conf) * EDGE_PRIORITY.get(rtype, 0.6)
                score = parent_score * weight * (HOP_DECAY ** (d - 1))
                label = rtype if outgoing else f"{rtype} (incoming)"
                prev = nxt.get(there)
                if prev is None or score > prev[0]:
                    nxt[there] = (score, [*chain, label], origin)
        if act_id is not None and nxt:
            acts = block_sql.block_summaries(conn, list(nxt))
            nxt = {b: v for b, v in nxt.items() if b in acts and acts[b][2] == act_id}
        frontier = []
        for bid, (score, chain, origin) in nxt.items():
            c = cands.setdefault(bid, Candidate(bid))
            if score > c.graph:
                if c.graph == 0 and not c.in_stage1:
                    reached += 1
                c.graph, c.chain, c.reached_from = score, chain, origin
            if bid not in seen:
                seen.add(bid)
                frontier.append((bid, score, chain, origin))
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
    query: str,
    matches: list[dict[str, Any]],
    total_vector: int,
    total_keyword: int,
    total_graph: int,
    semantic_reason: str | None,
    semantic_used: bool,
    keyword_info: dict[str, list[str]],
) -> SearchOutcome:
    stats: dict[str, Any] = {
        **keyword_info,
        "total_semantic": total_vector,
        "total_keyword": total_keyword,
        "total_graph": total_graph,
        "returned": len(matches),
        "semantic_available": semantic_used,
    }
    if semantic_reason and not semantic_used:
        stats["semantic_unavailable_reason"] = semantic_reason
    return SearchOutcome(
        query=query, matches=matches, stats=stats, markdown=render_markdown(matches)
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
