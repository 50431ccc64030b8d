"""memory/relationships/* - typed edges between blocks."""

from __future__ import annotations

from reos_memory.errors import Conflict, NotFound
from reos_memory.graph import api as t
from reos_memory.graph import relationships as svc
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext

method = REGISTRY.method


@method(
    "memory/relationships/create",
    params=t.RelCreateParams,
    result=t.RelationshipResult,
    kind="write",
    errors=[NotFound, Conflict],
)
def create(ctx: RequestContext, p: t.RelCreateParams) -> t.RelationshipResult:
    """Create a typed edge source -> target.

    No self-loops; one edge per (source, target, type): a duplicate is -32009 with
    `data.existing_id`.
    """
    return t.RelationshipResult(relationship=svc.create_relationship(ctx.app.db, p))


@method(
    "memory/relationships/list", params=t.RelListParams, result=t.RelListResult, errors=[NotFound]
)
def list_(ctx: RequestContext, p: t.RelListParams) -> t.RelListResult:
    """List the edges of a block: outgoing, incoming or both, optionally of some types."""
    return svc.list_relationships(ctx.app.db, p)


@method(
    "memory/relationships/update",
    params=t.RelUpdateParams,
    result=t.RelationshipResult,
    kind="write",
    errors=[NotFound],
)
def update(ctx: RequestContext, p: t.RelUpdateParams) -> t.RelationshipResult:
    """Change an edge's confidence and/or weight."""
    return t.RelationshipResult(relationship=svc.update_relationship(ctx.app.db, p))


@method(
    "memory/relationships/delete", params=t.RelDeleteParams, result=t.RelDeleteResult, kind="write"
)
def delete(ctx: RequestContext, p: t.RelDeleteParams) -> t.RelDeleteResult:
    """Delete an edge; deleted=false if there was none."""
    return svc.delete_relationship(ctx.app.db, p)
