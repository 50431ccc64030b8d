"""Typed relationships: one edge per (source, target, type), never a self-loop."""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.models import Relationship, new_id, now_iso
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as sql


def add_relationship(
    conn: apsw.Connection,
    *,
    source_id: str,
    target_id: str,
    rel_type: str,
    confidence: float = 1.0,
    weight: float = 1.0,
    source: str = "user",
    field_names: dict[str, str] | None = None,
) -> Relationship:
    """Insert an edge inside the caller's write transaction, enforcing every edge rule."""
    field_names = field_names or {}
    if source_id == target_id:
        raise InvalidInput("target_id", "must differ from source_id (no self-loops)")
    for field, bid in (("source_id", source_id), ("target_id", target_id)):
        if not block_sql.block_exists(conn, bid):
            raise NotFound("block", bid, field=field_names.get(field, field))
    existing = sql.find_relationship(conn, source_id, target_id, rel_type)
    if existing is not None:
        raise Conflict(
            f"a {rel_type!r} relationship from {source_id!r} to {target_id!r} exists already"
            f" ({existing.id}); update it instead",
            existing_id=existing.id,
        )
    rel = Relationship(
        id=new_id("rel"),
        source_block_id=source_id,
        target_block_id=target_id,
        relationship_type=rel_type,
        confidence=confidence,
        weight=weight,
        source=source,
        created_at=now_iso(),
    )
    sql.insert_relationship(conn, rel)
    return rel


def create_relationship(db: Database, **fields: object) -> Relationship:
    """Create one edge in its own transaction (see `add_relationship` for the rules)."""
    return db.write(lambda conn: add_relationship(conn, **fields))  # type: ignore[arg-type]


def list_relationships(
    db: Database, *, block_id: str, direction: str = "both", rel_types: Sequence[str] | None = None
) -> list[Relationship]:
    """Edges touching a block in the given direction, optionally of some types only."""

    def tx(conn: apsw.Connection) -> list[Relationship]:
        if not block_sql.block_exists(conn, block_id):
            raise NotFound("block", block_id, field="block_id")
        return sql.list_for_block(conn, block_id, direction, rel_types)

    return db.read(tx)


def update_relationship(
    db: Database,
    *,
    relationship_id: str,
    confidence: float | None = None,
    weight: float | None = None,
) -> Relationship:
    """Change an edge's confidence and/or weight."""
    if confidence is None and weight is None:
        raise InvalidInput("confidence", "give confidence, weight or both")

    def tx(conn: apsw.Connection) -> Relationship:
        rel = sql.get_relationship(conn, relationship_id)
        if rel is None:
            raise NotFound("relationship", relationship_id, field="relationship_id")
        if confidence is not None:
            rel.confidence = confidence
        if weight is not None:
            rel.weight = weight
        sql.update_relationship(conn, rel.id, rel.confidence, rel.weight)
        return rel

    return db.write(tx)


def delete_relationship(db: Database, *, relationship_id: str) -> bool:
    """Remove an edge; False when there was none (deletes are idempotent)."""
    return db.write(lambda conn: sql.delete_relationship(conn, relationship_id))
