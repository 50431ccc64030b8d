"""Typed relationships: one edge per (source, target, type), never a self-loop."""

from __future__ import annotations

import apsw

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.graph import api
from reos_memory.models import Relationship, new_id, now_iso
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql


def add_relationship(
    conn: apsw.Connection, p: api.RelCreateParams, field_names: dict[str, str] | None = None
) -> Relationship:
    """Insert an edge inside the caller's write transaction, enforcing every edge rule.

    `field_names` renames `source_id` / `target_id` in the error of a missing block, for a
    caller whose request calls them something else.
    """
    field_names = field_names or {}
    if p.source_id == p.target_id:
        raise InvalidInput("target_id", "must differ from source_id (no self-loops)")
    for field, bid in (("source_id", p.source_id), ("target_id", p.target_id)):
        if not block_sql.block_exists(conn, bid):
            raise NotFound("block", bid, field=field_names.get(field, field))
    existing = rel_sql.find_relationship(conn, p.source_id, p.target_id, p.rel_type)
    if existing is not None:
        raise Conflict(
            f"a {p.rel_type!r} relationship from {p.source_id!r} to {p.target_id!r} exists already"
            f" ({existing.id}); update it instead",
            existing_id=existing.id,
        )
    rel = Relationship(
        id=new_id("rel"),
        source_block_id=p.source_id,
        target_block_id=p.target_id,
        relationship_type=p.rel_type,
        confidence=p.confidence,
        weight=p.weight,
        source=p.source,
        created_at=now_iso(),
    )
    rel_sql.insert_relationship(conn, rel)
    return rel


def create_relationship(db: Database, p: api.RelCreateParams) -> Relationship:
    """Create one edge in its own transaction (see `add_relationship` for the rules)."""
    return db.write(lambda conn: add_relationship(conn, p))


def list_relationships(db: Database, p: api.RelListParams) -> api.RelListResult:
    """Edges touching a block in the given direction, optionally of some types only."""

    def tx(conn: apsw.Connection) -> list[Relationship]:
        if not block_sql.block_exists(conn, p.block_id):
            raise NotFound("block", p.block_id, field="block_id")
        return rel_sql.list_for_block(conn, p.block_id, p.direction, p.rel_types)

    rels = db.read(tx)
    return api.RelListResult(relationships=rels, count=len(rels))


def update_relationship(db: Database, p: api.RelUpdateParams) -> Relationship:
    """Change an edge's confidence and/or weight."""
    if p.confidence is None and p.weight is None:
        raise InvalidInput("confidence", "give confidence, weight or both")

    def tx(conn: apsw.Connection) -> Relationship:
        rel = rel_sql.get_relationship(conn, p.relationship_id)
        if rel is None:
            raise NotFound("relationship", p.relationship_id, field="relationship_id")
        if p.confidence is not None:
            rel.confidence = p.confidence
        if p.weight is not None:
            rel.weight = p.weight
        rel_sql.update_relationship(conn, rel.id, rel.confidence, rel.weight)
        return rel

    return db.write(tx)


def delete_relationship(db: Database, p: api.RelDeleteParams) -> api.RelDeleteResult:
    """Remove an edge; deleted=false when there was none (deletes are idempotent)."""
    deleted = db.write(lambda conn: rel_sql.delete_relationship(conn, p.relationship_id))
    return api.RelDeleteResult(deleted=deleted, relationship_id=p.relationship_id)
