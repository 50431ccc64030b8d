"""blocks/* - the blocks this service owns (CAIRN's block model)."""

from __future__ import annotations

from reos_memory.errors import Conflict, NotFound
from reos_memory.graph import api as t
from reos_memory.graph import blocks as svc
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext

method = REGISTRY.method


@method(
    "blocks/create",
    params=t.BlockCreateParams,
    result=t.BlockResult,
    kind="write",
    errors=[NotFound, Conflict],
)
def create(ctx: RequestContext, p: t.BlockCreateParams) -> t.BlockResult:
    """Create a block from `content` (plain text) or `rich_text` spans.

    `id` may be chosen by the client (an existing id is a conflict, never a replace); position
    defaults to after the last sibling. A parent must exist and be in the same act. The block is
    embedded for semantic search before the reply (pass `index: false` to skip).
    """
    app = ctx.app
    return t.BlockResult(
        block=svc.create_block(app.db, p, indexer=app.indexer, redact=app.block_redact)
    )


@method("blocks/get", params=t.BlockGetParams, result=t.BlockResult, errors=[NotFound])
def get(ctx: RequestContext, p: t.BlockGetParams) -> t.BlockResult:
    """Get one block, optionally with its subtree nested under `children`."""
    return t.BlockResult(block=svc.get_block(ctx.app.db, p))


@method("blocks/list", params=t.BlockListParams, result=t.BlockListResult)
def list_(ctx: RequestContext, p: t.BlockListParams) -> t.BlockListResult:
    """List blocks in creation order, filtered by act, type, parent and page; paged by cursor.

    `parent_id` omitted lists any block, null lists root blocks, an id lists its children.
    Pass the returned `next_cursor` back as `cursor` for the next page (null at the end).
    """
    return svc.list_blocks(ctx.app.db, p)


@method(
    "blocks/update",
    params=t.BlockUpdateParams,
    result=t.BlockResult,
    kind="write",
    errors=[NotFound, Conflict],
)
def update(ctx: RequestContext, p: t.BlockUpdateParams) -> t.BlockResult:
    """Change the given fields of a block; others stay as they are.

    `properties` merges key by key (null removes a key) unless `replace_properties` is true.
    Pass `expected_version` (the `version` you read) to get -32009 instead of overwriting a
    change made by someone else meanwhile.
    """
    app = ctx.app
    return t.BlockResult(
        block=svc.update_block(app.db, p, indexer=app.indexer, redact=app.block_redact)
    )


@method(
    "blocks/delete",
    params=t.BlockDeleteParams,
    result=t.BlockDeleteResult,
    kind="write",
    errors=[Conflict],
)
def delete(ctx: RequestContext, p: t.BlockDeleteParams) -> t.BlockDeleteResult:
    """Delete a block with its relationships and embedding.

    A block with children needs `recursive: true` (then its whole subtree goes), otherwise
    -32009. Deleting a missing block answers deleted=false.
    """
    return svc.delete_block(ctx.app.db, p)
