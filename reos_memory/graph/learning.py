"""Learning from feedback (seed 004 "Learning Flow"): ratings move edge confidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import apsw

from reos_memory.errors import InvalidInput, NotFound
from reos_memory.graph.relationships import add_relationship
from reos_memory.models import Relationship
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql

RAISE_BY = 0.1
LOWER_BY = 0.2
CEILING = 1.0
FLOOR = 0.1


@dataclass
class LearnOutcome:
    chain_block_id: str
    rating: int
    changes: list[dict[str, Any]] = field(default_factory=list)
    correction: Relationship | None = None


def learn(
    db: Database, *, chain_block_id: str, rating: int, corrected_block_id: str | None = None
) -> LearnOutcome:
    """Apply one rating of a reasoning chain, all in one transaction.

    4-5: each outgoing edge of the chain gains 0.1 confidence (cap 1.0). 1-2: each loses 0.2
    (floor 0.1), and with `corrected_block_id` a `corrects` edge (corrected -> chain,
    source=feedback) records the correction. 3: nothing changes. Edges already at the cap or
    floor are not listed as changes.
    """
    if corrected_block_id is not None and corrected_block_id == chain_block_id:
        raise InvalidInput("corrected_block_id", "must differ from chain_block_id")
    if corrected_block_id is not None and rating > 2:
        raise InvalidInput("corrected_block_id", "is only used with a rating of 1 or 2")

    def tx(conn: apsw.Connection) -> LearnOutcome:
        if not block_sql.block_exists(conn, chain_block_id):
            raise NotFound("block", chain_block_id, field="chain_block_id")
        out = LearnOutcome(chain_block_id=chain_block_id, rating=rating)
        if rating == 3:
            return out
        if corrected_block_id is not None:
            out.correction = _correction(conn, corrected_block_id, chain_block_id)
        for rel in rel_sql.list_for_block(conn, chain_block_id, "outgoing", None):
            before = 1.0 if rel.confidence is None else rel.confidence
            if rating >= 4:
                after = min(CEILING, round(before + RAISE_BY, 6))
            else:
                # a lowering never raises: an edge made below the floor keeps its confidence
                after = min(before, max(FLOOR, round(before - LOWER_BY, 6)))
            if after != before:
                rel_sql.update_relationship(conn, rel.id, after, rel.weight)
                out.changes.append(
                    {
                        "relationship_id": rel.id,
                        "relationship_type": rel.relationship_type,
                        "target_block_id": rel.target_block_id,
                        "before": before,
                        "after": after,
                    }
                )
        return out

    return db.write(tx)


def _correction(conn: apsw.Connection, corrected: str, chain: str) -> Relationship:
    existing = rel_sql.find_relationship(conn, corrected, chain, "corrects")
    if existing is not None:
        return existing  # the same correction given twice is one edge
    return add_relationship(
        conn,
        source_id=corrected,
        target_id=chain,
        rel_type="corrects",
        source="feedback",
        field_names={"source_id": "corrected_block_id", "target_id": "chain_block_id"},
    )
