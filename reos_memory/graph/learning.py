"""Learning from feedback (seed 004 "Learning Flow"): ratings move edge confidence."""

from __future__ import annotations

import apsw

from reos_memory.errors import InvalidInput, NotFound
from reos_memory.graph import api
from reos_memory.graph.relationships import add_relationship
from reos_memory.models import Relationship
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql

RAISE_BY = 0.1
LOWER_BY = 0.2
CEILING = 1.0
FLOOR = 0.1


def learn(db: Database, p: api.LearnParams) -> api.LearnResult:
    """Apply one rating of a reasoning chain, all in one transaction.

    4-5: each outgoing edge of the chain gains 0.1 confidence (cap 1.0). 1-2: each loses 0.2
    (floor 0.1), and with `corrected_block_id` a `corrects` edge (corrected -> chain,
    source=feedback) records the correction. 3: nothing changes. Edges already at the cap or
    floor are not listed as changes.
    """
    chain, rating, corrected = p.chain_block_id, p.rating, p.corrected_block_id
    if corrected is not None and corrected == chain:
        raise InvalidInput("corrected_block_id", "must differ from chain_block_id")
    if corrected is not None and rating > 2:
        raise InvalidInput("corrected_block_id", "is only used with a rating of 1 or 2")

    def tx(conn: apsw.Connection) -> api.LearnResult:
        if not block_sql.block_exists(conn, chain):
            raise NotFound("block", chain, field="chain_block_id")
        changes: list[api.LearnChange] = []
        correction = None
        if rating != 3:
            if corrected is not None:
                correction = _correction(conn, corrected, chain)
            changes = _move_confidence(conn, chain, raise_=rating >= 4)
        return api.LearnResult(
            chain_block_id=chain,
            rating=rating,
            changes=changes,
            count=len(changes),
            correction=correction,
        )

    return db.write(tx)


def _move_confidence(conn: apsw.Connection, chain: str, *, raise_: bool) -> list[api.LearnChange]:
    """Raise (or lower) the confidence of the chain's outgoing edges; the edges that changed."""
    changes = []
    for rel in rel_sql.list_for_block(conn, chain, "outgoing", None):
        before = 1.0 if rel.confidence is None else rel.confidence
        if raise_:
            after = min(CEILING, round(before + RAISE_BY, 6))
        else:
            # a lowering never raises: an edge made below the floor keeps its confidence
            after = min(before, max(FLOOR, round(before - LOWER_BY, 6)))
        if after != before:
            rel_sql.update_relationship(conn, rel.id, after, rel.weight)
            changes.append(
                api.LearnChange(
                    relationship_id=rel.id,
                    relationship_type=rel.relationship_type,
                    target_block_id=rel.target_block_id,
                    before=before,
                    after=after,
                )
            )
    return changes


def _correction(conn: apsw.Connection, corrected: str, chain: str) -> Relationship:
    existing = rel_sql.find_relationship(conn, corrected, chain, "corrects")
    if existing is not None:
        return existing  # the same correction given twice is one edge
    edge = api.RelCreateParams(
        source_id=corrected, target_id=chain, rel_type="corrects", source="feedback"
    )
    names = {"source_id": "corrected_block_id", "target_id": "chain_block_id"}
    return add_relationship(conn, edge, names)
