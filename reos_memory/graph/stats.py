"""Counts that describe what the memory holds."""

from __future__ import annotations

import apsw

from reos_memory.graph import api
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql
from reos_memory.store import vectors as vec_sql


def graph_stats(
    db: Database,
    p: api.StatsParams,
    *,
    embedder: api.EmbedderStatus,
    inflight_requests: int,
    keyword_index: api.KeywordIndexStatus | None,
) -> api.StatsResult:
    """Blocks, relationships (by type and source) and embeddings, optionally for one act, with
    the state of the process that serves them (its embedder, requests and keyword postings)."""
    act_id = p.act_id

    def tx(conn: apsw.Connection) -> api.StatsResult:
        by_type = block_sql.count_blocks(conn, act_id)
        rel_by_type, rel_by_source, rel_total = rel_sql.count_relationships(conn, act_id)
        unindexed, stale = vec_sql.count_needing_index(conn, act_id)
        return api.StatsResult(
            act_id=act_id,
            total_blocks=sum(by_type.values()),
            blocks_by_type=by_type,
            total_relationships=rel_total,
            relationships_by_type=rel_by_type,
            relationships_by_source=rel_by_source,
            total_embeddings=vec_sql.count_embeddings(conn, act_id),
            stale_embeddings=stale,
            unindexed_blocks=unindexed,
            embedder=embedder,
            database=db.path,
            inflight_requests=inflight_requests,
            keyword_index=keyword_index,
        )

    return db.read(tx)
