"""Params and results of the block graph's methods (blocks, relationships, walks, stats, index,
search, learning, export): what its functions take and return, whatever interface called them.
The OpenRPC document is made from them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from reos_memory.models import (
    MAX_CONTENT_CHARS,
    Block,
    BlockType,
    Confidence,
    Direction,
    EdgeRef,
    Ident,
    Params,
    ProgressToken,
    Relationship,
    RelSource,
    RelType,
    RichTextSpan,
    Weight,
)

Content = Annotated[str, Meta(max_length=MAX_CONTENT_CHARS)]
Position = Annotated[int, Meta(ge=0, le=2**31)]

# -- blocks ------------------------------------------------------------------------------------


class BlockCreateParams(Params):
    type: BlockType
    act_id: Ident
    content: Content | None = None
    rich_text: Annotated[list[RichTextSpan], Meta(max_length=10_000)] | None = None
    parent_id: Ident | None = None
    page_id: Ident | None = None
    position: Position | None = None
    properties: dict[str, Any] | None = None
    id: Ident | None = None
    index: bool = True
    # for imported history: when the block was written (ISO 8601; default now)
    created_at: Annotated[str, Meta(min_length=1, max_length=64)] | None = None


class BlockResult(Struct, kw_only=True):
    block: Block


class BlockGetParams(Params):
    block_id: Ident
    include_children: bool = False


class BlockListParams(Params):
    act_id: Ident | None = None
    type: BlockType | None = None
    parent_id: Ident | UnsetType | None = UNSET
    page_id: Ident | None = None
    limit: Annotated[int, Meta(ge=1, le=1000)] = 100
    cursor: Annotated[str, Meta(max_length=512)] | None = None


class BlockListResult(Struct, kw_only=True):
    blocks: list[Block]
    next_cursor: str | None


class BlockUpdateParams(Params):
    block_id: Ident
    expected_version: Annotated[int, Meta(ge=1)] | None = None
    type: BlockType | UnsetType = UNSET
    content: Content | UnsetType = UNSET
    rich_text: Annotated[list[RichTextSpan], Meta(max_length=10_000)] | UnsetType = UNSET
    properties: dict[str, Any] | UnsetType = UNSET
    replace_properties: bool = False
    parent_id: Ident | UnsetType | None = UNSET
    page_id: Ident | UnsetType | None = UNSET
    position: Position | UnsetType = UNSET
    index: bool = True


class BlockDeleteParams(Params):
    block_id: Ident
    recursive: bool = False


class BlockDeleteResult(Struct, kw_only=True):
    deleted: bool
    block_id: str
    deleted_block_ids: list[str]
    relationships_removed: int = 0
    embeddings_removed: int = 0


# -- relationships -----------------------------------------------------------------------------


class RelCreateParams(Params):
    source_id: Ident
    target_id: Ident
    rel_type: RelType
    confidence: Confidence = 1.0
    weight: Weight = 1.0
    source: RelSource = "user"


class RelationshipResult(Struct, kw_only=True):
    relationship: Relationship


class RelListParams(Params):
    block_id: Ident
    direction: Direction = "both"
    rel_types: Annotated[list[RelType], Meta(max_length=14)] | None = None


class RelListResult(Struct, kw_only=True):
    relationships: list[Relationship]
    count: int


class RelUpdateParams(Params):
    relationship_id: Ident
    confidence: Confidence | None = None
    weight: Weight | None = None


class RelDeleteParams(Params):
    relationship_id: Ident


class RelDeleteResult(Struct, kw_only=True):
    deleted: bool
    relationship_id: str


# -- walks -------------------------------------------------------------------------------------


class RelatedParams(Params):
    block_id: Ident
    depth: Annotated[int, Meta(ge=0, le=10)] = 2
    rel_types: Annotated[list[RelType], Meta(max_length=14)] | None = None
    direction: Direction = "both"
    max_nodes: Annotated[int, Meta(ge=1, le=10_000)] = 50


class RelatedResult(Struct, kw_only=True):
    start_block_id: str
    visited_blocks: list[str]
    blocks_by_depth: dict[str, list[str]]
    edges: list[EdgeRef]
    truncated: bool
    depth_reached: int


class PathParams(Params):
    start_id: Ident
    end_id: Ident
    max_depth: Annotated[int, Meta(ge=1, le=20)] = 5
    direction: Direction = "both"
    rel_types: Annotated[list[RelType], Meta(max_length=14)] | None = None
    weighted: bool = False


class PathResult(Struct, kw_only=True):
    path: list[EdgeRef] | None
    found: bool
    length: int
    nodes: list[str] | None
    confidence: float | None


# -- stats -------------------------------------------------------------------------------------


class StatsParams(Params):
    act_id: Ident | None = None


class EmbedderStatus(Struct, kw_only=True):
    backend: str
    status: str
    model_id: str | None = None
    dimensions: int | None = None
    detail: str | None = None
    load_seconds: float | None = None
    database_model_id: str | None = None
    vector_search: str | None = None
    vector_index: VectorIndexStatus | None = None


class VectorIndexStatus(Struct, kw_only=True):
    """The block vectors' memory index as this process holds it (it loads on the first search)."""

    kind: Literal["not_loaded", "flat", "ivf", "sqlite"]
    vectors: int
    lists: int | None = None
    probe: int | None = None
    # "vectors": built from the stored vectors; "snapshot": read from the saved index file
    loaded_from: Literal["vectors", "snapshot"] | None = None


class StatsResult(Struct, kw_only=True):
    act_id: str | None
    total_blocks: int
    blocks_by_type: dict[str, int]
    total_relationships: int
    relationships_by_type: dict[str, int]
    relationships_by_source: dict[str, int]
    total_embeddings: int
    stale_embeddings: int
    unindexed_blocks: int
    embedder: EmbedderStatus
    database: str
    inflight_requests: int
    keyword_index: KeywordIndexStatus | None = None


class KeywordIndexStatus(Struct, kw_only=True):
    """The block postings this process holds in memory for keyword search (null when
    `vector_search` is `sqlite`: FTS5 answers alone)."""

    terms: int  # terms whose postings are cached
    postings: int  # (block, frequency) pairs cached
    changed: int  # blocks changed since, patched in at query time


# -- index -------------------------------------------------------------------------------------


class IndexBlockParams(Params):
    block_id: Ident


class IndexBlockResult(Struct, kw_only=True):
    indexed: bool
    block_id: str
    reason: str | None = None


class IndexBatchParams(Params):
    block_ids: Annotated[list[Ident], Meta(max_length=1_000_000)] | None = None
    act_id: Ident | None = None
    progress_token: ProgressToken = None


class IndexFailure(Struct, kw_only=True):
    block_id: str
    reason: str


class IndexBatchResult(Struct, kw_only=True):
    indexed: int
    failed: int
    skipped: int
    total: int
    failures: list[IndexFailure]


class IndexRemoveParams(Params):
    block_id: Ident


class IndexRemoveResult(Struct, kw_only=True):
    removed: bool
    block_id: str


# -- search ------------------------------------------------------------------------------------


class SearchParams(Params):
    query: Annotated[str, Meta(min_length=1, max_length=10_000)]
    act_id: Ident | None = None
    max_results: Annotated[int, Meta(ge=1, le=200)] = 20
    include_graph: bool = True
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    min_similarity: Annotated[float, Meta(ge=-1.0, le=1.0)] = 0.2
    graph_depth: Annotated[int, Meta(ge=1, le=3)] = 2
    candidates: Annotated[int, Meta(ge=1, le=2000)] = 100
    recency_weight: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.0
    recency_half_life_days: Annotated[float, Meta(gt=0.0, le=36500.0)] = 30.0
    type_weights: dict[BlockType, Annotated[float, Meta(ge=0.0, le=10.0)]] | None = None


class ScoreBreakdown(Struct, kw_only=True):
    """score = (fusion + graph_weight x graph) x type_weight x recency (x time_match)
    (x correction_penalty); fusion is 0 for a block reached only over edges."""

    vector_similarity: float | None = None
    neighbourhood: float | None = None  # added to vector_similarity for the vector ranking
    vector_rank: int | None = None
    keyword_bm25: float | None = None
    keyword_rank: int | None = None
    second_hop_rank: int | None = None  # in the BM25 ranking of the second hop's words
    fusion: float | None = None
    graph: float | None = None  # relevance spread to it over edges
    graph_weight: float | None = None
    type_weight: float | None = None
    recency: float | None = None
    time_match: float | None = None  # written inside the time the query names
    correction_penalty: float | None = None
    final: float | None = None


class SearchMatch(Struct, kw_only=True, omit_defaults=True):
    block_id: str
    block_type: str
    act_id: str
    content: str
    score: float
    source: Literal["semantic", "keyword", "graph", "both"]
    relationship_chain: list[str]
    via: list[str]
    score_breakdown: ScoreBreakdown
    properties: dict[str, Any]
    reached_from: str | None = None
    superseded_by: str | None = None


class SearchStats(Struct, kw_only=True, omit_defaults=True):
    total_semantic: int
    total_keyword: int
    total_graph: int
    returned: int
    semantic_available: bool
    keyword_terms: list[str] = []
    keyword_terms_dropped: list[str] = []
    second_hop_terms: list[str] = []
    semantic_unavailable_reason: str | None = None


class SearchResult(Struct, kw_only=True):
    query: str
    matches: list[SearchMatch]
    stats: SearchStats
    markdown: str


# -- learning and linking ----------------------------------------------------------------------


class LearnParams(Params):
    chain_block_id: Ident
    rating: Annotated[int, Meta(ge=1, le=5)]
    corrected_block_id: Ident | None = None


class LearnChange(Struct, kw_only=True):
    relationship_id: str
    relationship_type: str
    target_block_id: str
    before: float
    after: float


class LearnResult(Struct, kw_only=True):
    chain_block_id: str
    rating: int
    changes: list[LearnChange]
    count: int
    correction: Relationship | None


class AutoLinkParams(Params):
    act_id: Ident | None = None
    threshold: Annotated[float, Meta(ge=-1.0, le=1.0)] = 0.8
    max_links: Annotated[int, Meta(ge=1, le=100)] = 3
    progress_token: ProgressToken = None


class AutoLinkResult(Struct, kw_only=True):
    relationships_created: int
    blocks_examined: int
    candidate_pairs: int
    already_linked: int
    seconds: float


class ExtractParams(Params):
    block_id: Ident
    content: Content
    act_id: Ident | None = None
    use_llm: bool | None = None


class ExtractResult(Struct, kw_only=True):
    block_id: str
    relationships_created: list[Relationship]
    count: int
    semantic: bool
    llm_used: bool
    llm_error: str | None


# -- export ------------------------------------------------------------------------------------


class ExportParams(Params):
    block_id: Ident | None = None
    depth: Annotated[int, Meta(ge=0, le=10)] = 2
    act_id: Ident | None = None
    rel_types: Annotated[list[RelType], Meta(max_length=14)] | None = None
    max_nodes: Annotated[int, Meta(ge=1, le=5000)] = 200
    formats: Annotated[
        list[Literal["dot", "mermaid", "html"]], Meta(min_length=1, max_length=3)
    ] = msgspec.field(default_factory=lambda: ["dot", "mermaid", "html"])


class ExportResult(Struct, kw_only=True, omit_defaults=True):
    nodes: int
    edges: int
    truncated: bool
    dot: str | None = None
    mermaid: str | None = None
    html: str | None = None
