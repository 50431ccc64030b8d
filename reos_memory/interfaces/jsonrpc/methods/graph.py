"""memory/related, memory/path, memory/stats - walks and counts over the graph."""

from __future__ import annotations

from reos_memory.errors import NotFound
from reos_memory.graph import api as t
from reos_memory.graph import export, traversal
from reos_memory.graph import stats as stats_svc
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext

method = REGISTRY.method


@method("memory/related", params=t.RelatedParams, result=t.RelatedResult, errors=[NotFound])
def related(ctx: RequestContext, p: t.RelatedParams) -> t.RelatedResult:
    """Breadth-first neighbourhood of a block up to `depth` hops and `max_nodes` blocks.

    Stronger edges are followed first; `truncated` says whether max_nodes cut the walk.
    """
    return traversal.neighbourhood(ctx.app.db, p)


@method("memory/path", params=t.PathParams, result=t.PathResult, errors=[NotFound])
def path(ctx: RequestContext, p: t.PathParams) -> t.PathResult:
    """Shortest path between two blocks, at most `max_depth` edges; `weighted` for the most confident.

    `path` lists the edges from start to end (null when none is found); `nodes` the blocks on it;
    `confidence` the product of the edge confidences.
    """
    return traversal.shortest_path(ctx.app.db, p)


@method("memory/stats", params=t.StatsParams, result=t.StatsResult)
def stats(ctx: RequestContext, p: t.StatsParams) -> t.StatsResult:
    """Counts of blocks, relationships (by type and source), embeddings (and stale ones), embedder
    state, and the keyword postings this process holds."""
    app = ctx.app
    kx = app.indexer.keywords
    return stats_svc.graph_stats(
        app.db,
        p,
        embedder=app.embedder_status(),
        inflight_requests=ctx.server.inflight_count(),
        keyword_index=None if kx is None else t.KeywordIndexStatus(**kx.status()),
    )


@method("memory/export", params=t.ExportParams, result=t.ExportResult, errors=[NotFound])
def export_graph(ctx: RequestContext, p: t.ExportParams) -> t.ExportResult:
    """Draw the graph, or the neighbourhood of `block_id`, as Graphviz DOT, Mermaid and/or HTML.

    The HTML is one self-contained file (no network) that lays the graph out and draws it as SVG,
    with node colours by block type and the full text on hover.
    """
    return export.export(ctx.app.db, p)
