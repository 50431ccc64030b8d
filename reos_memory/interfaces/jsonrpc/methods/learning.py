"""memory/learn and memory/auto_link - the graph learning from feedback and from similarity."""

from __future__ import annotations

from reos_memory.errors import Cancelled, EmbedderUnavailable, InvalidInput, NotFound
from reos_memory.graph import api as t
from reos_memory.graph import autolink, extraction, learning
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext

method = REGISTRY.method


@method("memory/learn", params=t.LearnParams, result=t.LearnResult, kind="write", errors=[NotFound])
def learn(ctx: RequestContext, p: t.LearnParams) -> t.LearnResult:
    """Learn from a 1-5 rating of a reasoning chain.

    4-5 raise the confidence of the chain's outgoing edges by 0.1 (cap 1.0); 1-2 lower it by
    0.2 (floor 0.1), and with `corrected_block_id` add a `corrects` edge (corrected -> chain,
    source=feedback); 3 changes nothing. `changes` lists each edge with its before/after.
    """
    return learning.learn(ctx.app.db, p)


@method(
    "memory/auto_link",
    params=t.AutoLinkParams,
    result=t.AutoLinkResult,
    kind="heavy",
    errors=[Cancelled, EmbedderUnavailable],
)
def auto_link(ctx: RequestContext, p: t.AutoLinkParams) -> t.AutoLinkResult:
    """Create `similar_to` edges (source=embedding) between blocks with cosine >= threshold.

    Each block gets at most `max_links` new outgoing links; pairs already joined by `similar_to`
    in either direction are skipped; confidence is the similarity. Computed in batched matrix
    products; `$/progress` with `progress_token`; `$/cancelRequest` stops it with nothing written.
    """
    return autolink.auto_link(
        ctx.app.db,
        ctx.app.indexer,
        p,
        progress=lambda done, total: ctx.progress(done, total, "comparing embeddings"),
        cancelled=ctx.cancelled.is_set,
    )


@method(
    "memory/extract",
    params=t.ExtractParams,
    result=t.ExtractResult,
    kind="heavy",  # with use_llm it waits on the network: nothing may queue behind that
    errors=[NotFound],
)
def extract(ctx: RequestContext, p: t.ExtractParams) -> t.ExtractResult:
    """Extract relationships from a block's text (source=inferred); running it again adds nothing.

    Explicit references (`[[id]]`, `@id`, bare block ids) become `references`; clauses after
    logical connectors (because, therefore, as a result, however, ...) are matched to the most
    similar block of the act (`follows_from`, `supports`, `causes`, `contradicts`); similar
    blocks become `related_to`. `semantic` is false when no embedding model was available (then
    only explicit references are found). `use_llm` (default: the `llm_extraction` setting, off)
    also asks the configured LLM provider, in one call, for edges to the act's nearest blocks; a
    failed call is reported in `llm_error` and the other edges are still stored.
    """
    use_llm = ctx.app.config.llm_extraction if p.use_llm is None else p.use_llm
    llm = ctx.app.llm() if use_llm else None
    if p.use_llm and llm is None:
        raise InvalidInput(
            "use_llm", "no LLM provider is configured (set llm_provider and llm_model)"
        )
    return extraction.extract(ctx.app.db, ctx.app.indexer, p, llm)
