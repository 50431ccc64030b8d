"""memory/index/* and memory/search - embeddings and three-stage retrieval."""

from __future__ import annotations

from reos_memory.errors import Cancelled, EmbedderUnavailable, NotFound
from reos_memory.graph import api as t
from reos_memory.graph import retrieval
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext

method = REGISTRY.method


@method(
    "memory/index/block",
    params=t.IndexBlockParams,
    result=t.IndexBlockResult,
    kind="heavy",
    errors=[NotFound, EmbedderUnavailable],
)
def index_block(ctx: RequestContext, p: t.IndexBlockParams) -> t.IndexBlockResult:
    """Embed one block now (blocks are indexed on create/update by default)."""
    reason = ctx.app.indexer.index_one(p.block_id)
    return t.IndexBlockResult(indexed=reason is None, block_id=p.block_id, reason=reason)


@method(
    "memory/index/batch",
    params=t.IndexBatchParams,
    result=t.IndexBatchResult,
    kind="heavy",
    errors=[Cancelled, EmbedderUnavailable],
)
def index_batch(ctx: RequestContext, p: t.IndexBatchParams) -> t.IndexBatchResult:
    """Embed many blocks in batches and store them in one transaction.

    Without `block_ids`, indexes every block (of `act_id`, if given) that has no embedding or a
    stale one. Sends `$/progress` when `progress_token` is given; `$/cancelRequest` stops it with
    nothing written. Missing blocks count as `failed` (listed in `failures`); empty ones as `skipped`.
    """
    report = ctx.app.indexer.index_blocks(
        p.block_ids,
        act_id=p.act_id,
        progress=lambda done, total: ctx.progress(done, total, "embedding"),
        cancelled=ctx.cancelled.is_set,
    )
    return t.IndexBatchResult(
        indexed=report.indexed,
        failed=report.failed,
        skipped=report.skipped,
        total=report.total,
        failures=[
            t.IndexFailure(block_id=f["block_id"], reason=f["reason"]) for f in report.failures
        ],
    )


@method("memory/index/remove", params=t.IndexRemoveParams, result=t.IndexRemoveResult, kind="write")
def index_remove(ctx: RequestContext, p: t.IndexRemoveParams) -> t.IndexRemoveResult:
    """Drop a block's embedding (the block stays; semantic search stops finding it)."""
    return t.IndexRemoveResult(removed=ctx.app.indexer.remove(p.block_id), block_id=p.block_id)


@method("memory/search", params=t.SearchParams, result=t.SearchResult, errors=[EmbedderUnavailable])
def search(ctx: RequestContext, p: t.SearchParams) -> t.SearchResult:
    """Three-stage retrieval: vector + BM25 fused by rank, graph expansion, rank & merge.

    Each match has `source` (semantic, keyword, graph or both), its `relationship_chain`, and a
    `score_breakdown`; `markdown` is the "Relevant Memory" section for an agent's prompt. Without
    an embedding model, keyword and graph stages still run and `stats` says why vectors were not used.
    `mode` restricts stage 1 to `vector` or `keyword`.
    """
    app = ctx.app
    return retrieval.search(
        app.db, app.indexer, p, keyword_budget=app.config.keyword_postings_budget
    )
