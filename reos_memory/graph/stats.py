"""Counts that describe what the memory holds."""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql
from reos_memory.store import vectors as vec_sql


@dataclass
class GraphStats:
    total_blocks: int
    blocks_by_type: dict[str, int]
    total_relationships: int
    relationships_by_type: dict[str, int]
    relationships_by_source: dict[str, int]
    total_embeddings: int
    stale_embeddings: int
    unindexed_blocks: int


def graph_stats(db: Database, *, act_id: str | None = None) -> GraphStats:
    """Blocks, relationships (by type and source) and embeddings, optionally for one act."""

    def tx(conn: apsw.Connection) -> GraphStats:
        by_type = block_sql.count_blocks(conn, act_id)
        rel_by_type, rel_by_source, rel_total = rel_sql.count_relationships(conn, act_id)
        emb = vec_sql.count_embeddings(conn, act_id)
        total = sum(by_type.values())
        unindexed, stale = vec_sql.count_needing_index(conn, act_id)
        return GraphStats(
            total_blocks=total,
            blocks_by_type=by_type,
            total_relationships=rel_total,
            relationships_by_type=rel_by_type,
            relationships_by_source=rel_by_source,
            total_embeddings=emb,
            stale_embeddings=stale,
            unindexed_blocks=unindexed,
        )

    return db.read(tx)
