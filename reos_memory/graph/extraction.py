"""Relationship extraction from a block's text (seed 004 "RelationshipExtractor").

Three kinds of evidence, each giving `source=inferred` edges from the block:
* explicit references to existing blocks: `[[id]]`, `@id`, or a bare id such as `block-3f2a…`
  (`references`, confidence 0.95 for marked references, 0.9 for bare ids);
* logical connectors: the clause after "because / since / due to" is a premise (`follows_from`),
  after "therefore / thus / so / hence" a conclusion (`supports`), after "as a result /
  consequently" an effect (`causes`), after "however / but / although" a contrast
  (`contradicts`); each clause is matched to the most similar existing block of the act and the
  confidence is 0.8 x that similarity;
* similarity of the whole text to existing blocks of the act (`related_to`, confidence = cosine).
Running it twice creates nothing new: an existing (source, target, type) edge is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

import apsw
import msgspec

from reos_memory.errors import NotFound
from reos_memory.graph import api
from reos_memory.index.vectors import Indexer
from reos_memory.llm import LLMClient, LLMError
from reos_memory.models import REL_TYPES, Relationship, RelType, new_id, now_iso
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import keywords as kw_sql
from reos_memory.store import relationships as rel_sql

if TYPE_CHECKING:
    import numpy as np

CONNECTORS: list[tuple[str, str]] = [
    # (pattern, relationship type); longer phrases first
    (r"as a result(?: of)?", "causes"),
    (r"consequently", "causes"),
    (r"due to", "follows_from"),
    (r"because(?: of)?", "follows_from"),
    (r"since", "follows_from"),
    (r"therefore", "supports"),
    (r"thus", "supports"),
    (r"hence", "supports"),
    (r"so that", "supports"),
    (r"so", "supports"),
    (r"however", "contradicts"),
    (r"although", "contradicts"),
    (r"but", "contradicts"),
]
_CONNECTOR = re.compile(r"\b(" + "|".join(p for p, _ in CONNECTORS) + r")\b", re.IGNORECASE)
_MARKED = re.compile(
    r"\[\[([A-Za-z0-9][A-Za-z0-9_.:\-]{0,127})\]\]|@([A-Za-z0-9][A-Za-z0-9_.:\-]{2,127})"
)
_BARE = re.compile(
    r"\b((?:block|chunk|doc|op|note)[-_][A-Za-z0-9]{4,64}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"
)
CLAUSE_FACTOR = 0.8
CLAUSE_MIN_SIMILARITY = 0.5
RELATED_MIN_SIMILARITY = 0.75
RELATED_MAX = 3


@dataclass
class Proposal:
    target: str
    rel_type: str
    confidence: float
    evidence: str


@dataclass
class ExtractOutcome:
    """What the extraction found before it stores anything."""

    block_id: str
    proposals: list[Proposal] = field(default_factory=list)
    semantic: bool = False
    llm_used: bool = False
    llm_error: str | None = None


class _LLMEdge(msgspec.Struct, kw_only=True):
    target_id: str
    type: RelType
    confidence: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
    reason: str | None = None


class _LLMReply(msgspec.Struct, kw_only=True):
    relationships: list[_LLMEdge]


LLM_CANDIDATES = 20
LLM_MAX_CONFIDENCE = 0.9
LLM_SYSTEM = (
    "You find typed relationships between a source text and candidate memory blocks. "
    "Reply with one JSON object and nothing else: "
    '{"relationships": [{"target_id": "<a candidate id>", "type": "<type>", "confidence": <0 to 1>, '
    '"reason": "<a few words>"}]}. Use only candidate ids given. Allowed types: '
    + ", ".join(REL_TYPES)
    + ". Include a relationship only when the text clearly supports it; an empty list is fine."
)


def clauses(text: str) -> list[tuple[str, str]]:
    """(relationship type, clause) for each clause introduced by a logical connector."""
    out: list[tuple[str, str]] = []
    parts = _CONNECTOR.split(text)
    # parts: [before, connector, after, connector, after, ...]
    for i in range(1, len(parts) - 1, 2):
        word = parts[i].lower()
        clause = re.split(r"[.;!?\n]", parts[i + 1], maxsplit=1)[0].strip(" ,:-")
        before = parts[i - 1].rstrip()
        if not before or before[-1] in ".;!?\n" or word.endswith((" of", " to")):
            # "Because X, Y" / "... due to X, Y": the connector's clause ends at the comma
            clause = clause.split(",", 1)[0].strip()
        if len(clause.split()) < 2:
            continue
        rel = next(r for p, r in CONNECTORS if re.fullmatch(p, word))
        out.append((rel, clause))
    return out


def extract(
    db: Database, indexer: Indexer, p: api.ExtractParams, llm: LLMClient | None = None
) -> api.ExtractResult:
    """Find relationships in `p.content` (the text of `p.block_id`) and store the new ones.

    With an `llm` client, one call also proposes edges to the act's nearest blocks; a failed
    call is reported in `llm_error` and the rule-based edges are still stored.
    """
    block_id, content = p.block_id, p.content
    block = db.read(lambda c: block_sql.get_block(c, block_id))
    if block is None:
        raise NotFound("block", block_id, field="block_id")
    act = p.act_id or block.act_id
    out = ExtractOutcome(block_id=block_id)
    refs: dict[str, float] = {}
    for m in _MARKED.finditer(content):
        refs[m.group(1) or m.group(2)] = 0.95
    for m in _BARE.finditer(content):
        refs.setdefault(m.group(1), 0.9)
    refs.pop(block_id, None)
    if refs:
        present = set(refs) - set(db.read(lambda c: block_sql.missing_blocks(c, list(refs))))
        out.proposals += [
            Proposal(r, "references", refs[r], "explicit reference") for r in refs if r in present
        ]
    emb, _reason = indexer.usable_model()
    if emb is not None:
        out.semantic = True
        found = clauses(content)
        vecs = indexer.embed_texts([content] + [c for _, c in found], priority=0)
        for (rel, clause), vec in zip(found, vecs[1:], strict=True):
            best = _nearest(indexer, vec, act, exclude=block_id, k=1)
            if best and best[0][1] >= CLAUSE_MIN_SIMILARITY:
                target, sim = best[0]
                out.proposals.append(
                    Proposal(
                        target, rel, round(CLAUSE_FACTOR * sim, 4), f"connector clause: {clause!r}"
                    )
                )
        nearest = _nearest(
            indexer, vecs[0], act, exclude=block_id, k=max(RELATED_MAX, LLM_CANDIDATES)
        )
        for target, sim in nearest[:RELATED_MAX]:
            if sim >= RELATED_MIN_SIMILARITY:
                out.proposals.append(
                    Proposal(target, "related_to", round(min(1.0, sim), 4), "similar text")
                )
        candidates = [t for t, _ in nearest[:LLM_CANDIDATES]]
    else:
        words = kw_sql.query_words(content)[:32]
        hits = db.read(lambda c: kw_sql.keyword_search(c, words, LLM_CANDIDATES + 1, act))
        candidates = [b for b, _ in hits if b != block_id]
    if llm is not None:
        try:
            out.proposals += _llm_proposals(db, llm, content, candidates)
            out.llm_used = True
        except LLMError as exc:
            out.llm_error = exc.message

    def tx(conn: apsw.Connection) -> list[Relationship]:
        made: list[Relationship] = []
        seen: set[tuple[str, str]] = set()
        now = now_iso()
        for prop in sorted(out.proposals, key=lambda prop: -prop.confidence):
            key = (prop.target, prop.rel_type)
            if key in seen or prop.target == block_id:
                continue
            seen.add(key)
            if rel_sql.find_relationship(conn, block_id, prop.target, prop.rel_type) is not None:
                continue
            if not block_sql.block_exists(conn, prop.target):
                continue  # deleted meanwhile
            rel = Relationship(
                id=new_id("rel"),
                source_block_id=block_id,
                target_block_id=prop.target,
                relationship_type=prop.rel_type,
                confidence=prop.confidence,
                weight=1.0,
                source="inferred",
                created_at=now,
            )
            rel_sql.insert_relationship(conn, rel)
            made.append(rel)
        return made

    created = db.write(tx) if out.proposals else []
    return api.ExtractResult(
        block_id=block_id,
        relationships_created=created,
        count=len(created),
        semantic=out.semantic,
        llm_used=out.llm_used,
        llm_error=out.llm_error,
    )


def _nearest(
    indexer: Indexer, vec: np.ndarray, act: str, exclude: str, k: int
) -> list[tuple[str, float]]:
    return [(b, s) for b, s in indexer.knn(vec, k + 1, act) if b != exclude][:k]


def _llm_proposals(
    db: Database, llm: LLMClient, content: str, candidates: list[str]
) -> list[Proposal]:
    if not candidates:
        return []
    blocks = db.read(lambda c: block_sql.get_blocks(c, candidates))
    lines = [
        f"- {b}: {' '.join(blocks[b].content.split())[:300]}" for b in candidates if b in blocks
    ]
    user = f"Source text:\n{content[:4000]}\n\nCandidate blocks:\n" + "\n".join(lines)
    text = llm.complete(LLM_SYSTEM, user).strip()
    if text.startswith("```"):  # some models fence JSON even when asked not to
        text = text.strip("`").removeprefix("json").strip()
    try:
        reply = msgspec.json.decode(text, type=_LLMReply)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise LLMError(f"the LLM's reply is not the requested JSON: {exc}") from exc
    return [
        Proposal(
            e.target_id,
            e.type,
            round(min(e.confidence, LLM_MAX_CONFIDENCE), 4),
            f"llm: {e.reason or ''}",
        )
        for e in reply.relationships
        if e.target_id in blocks
    ]
