"""Block CRUD with the rules a user relies on: no silent overwrite, no orphaned subtree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw
import msgspec
from msgspec import UnsetType

from reos_memory.errors import Conflict, InvalidInput, NotFound
from reos_memory.graph import api
from reos_memory.index.vectors import Indexer
from reos_memory.models import (
    MAX_PROPERTIES_BYTES,
    Block,
    RichTextSpan,
    decode_cursor,
    encode_json,
    new_id,
    now_iso,
    page,
    parse_iso,
    spans_text,
)
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import relationships as rel_sql
from reos_memory.store import vectors as vec_sql


def _check_properties(properties: dict[str, Any], field: str = "properties") -> None:
    if len(encode_json(properties)) > MAX_PROPERTIES_BYTES:
        raise InvalidInput(field, f"must encode to at most {MAX_PROPERTIES_BYTES} bytes of JSON")


def _spans(content: str | None, rich_text: list[RichTextSpan] | None) -> list[RichTextSpan]:
    if content is not None and rich_text is not None:
        raise InvalidInput("rich_text", "give either content or rich_text, not both")
    if rich_text is not None:
        return rich_text
    return [RichTextSpan(content=content)] if content else []


def _require_block(conn: apsw.Connection, block_id: str, field: str) -> Block:
    block = block_sql.get_block(conn, block_id)
    if block is None:
        raise NotFound("block", block_id, field=field)
    return block


def _check_parent(conn: apsw.Connection, parent_id: str, act_id: str) -> None:
    parent = _require_block(conn, parent_id, "parent_id")
    if parent.act_id != act_id:
        raise InvalidInput(
            "parent_id", f"parent is in act {parent.act_id!r}; a child must be in the same act"
        )


def _next_position(conn: apsw.Connection, parent_id: str | None, page_id: str | None) -> int:
    if parent_id is None and page_id is None:
        return 0
    top = block_sql.max_position(conn, parent_id=parent_id, page_id=page_id)
    return 0 if top is None else top + 1


def _redacted_spans(spans: list[RichTextSpan], redact: Callable[[Any], Any]) -> list[RichTextSpan]:
    return [msgspec.structs.replace(s, content=redact(s.content)) for s in spans]


def create_block(
    db: Database,
    p: api.BlockCreateParams,
    *,
    indexer: Indexer | None = None,
    redact: Callable[[Any], Any] | None = None,
) -> Block:
    """Store a new block; a client-chosen id that exists already is a conflict, never a replace.

    With an indexer (and `p.index`), the text is embedded first and stored with the block in one
    transaction. `p.created_at` dates imported history (its `updated_at` is the same time);
    default now. With `redact` (the redact_blocks setting), secrets never reach the database.
    """
    written = None if p.created_at is None else parse_iso(p.created_at, "created_at")
    spans = _spans(p.content, p.rich_text)
    props = p.properties or {}
    _check_properties(props)
    if redact is not None:
        spans = _redacted_spans(spans, redact)
        props = redact(props)
    text = spans_text(spans)
    prepared = indexer.prepare(text) if indexer is not None and p.index else None

    def tx(conn: apsw.Connection) -> Block:
        if p.id is not None and block_sql.block_exists(conn, p.id):
            raise Conflict(f"block {p.id!r} exists already", existing_id=p.id, field="$.id")
        if p.parent_id is not None:
            _check_parent(conn, p.parent_id, p.act_id)
        now = written or now_iso()
        position = p.position
        block = Block(
            id=p.id or new_id("block"),
            type=p.type,
            act_id=p.act_id,
            parent_id=p.parent_id,
            page_id=p.page_id,
            position=(
                position if position is not None else _next_position(conn, p.parent_id, p.page_id)
            ),
            content=spans_text(spans),
            rich_text=spans,
            properties=props,
            version=1,
            created_at=now,
            updated_at=now,
        )
        block_sql.insert_block(conn, block)
        if indexer is not None:
            indexer.write(conn, block.id, text, prepared)
        return block

    return db.write(tx)


def get_block(db: Database, p: api.BlockGetParams) -> Block:
    """The block, optionally with its whole subtree nested under `children`."""

    def tx(conn: apsw.Connection) -> Block:
        block = _require_block(conn, p.block_id, "block_id")
        if p.include_children:
            _attach_children(conn, block, seen={block.id})
        return block

    return db.read(tx)


def _attach_children(conn: apsw.Connection, block: Block, seen: set[str]) -> None:
    kids = [k for k in block_sql.children_of(conn, block.id) if k.id not in seen]
    seen.update(k.id for k in kids)
    for kid in kids:
        _attach_children(conn, kid, seen)
    block.children = kids


def list_blocks(db: Database, p: api.BlockListParams) -> api.BlockListResult:
    """One page of blocks in insertion order, and the cursor of the next page (None at the end).

    `parent_id` omitted: any parent; null: root blocks only; an id: that block's children.
    """
    after = decode_cursor(p.cursor, "blocks/list") if p.cursor else None
    parent = None if isinstance(p.parent_id, UnsetType) else p.parent_id

    def tx(conn: apsw.Connection) -> list[tuple[int, Block]]:
        return block_sql.list_blocks(
            conn,
            act_id=p.act_id,
            type=p.type,
            parent_id=parent,
            roots_only=p.parent_id is None,
            page_id=p.page_id,
            after=after,
            limit=p.limit + 1,
        )

    blocks, cursor = page(db.read(tx), p.limit)
    return api.BlockListResult(blocks=blocks, next_cursor=cursor)


def update_block(
    db: Database,
    p: api.BlockUpdateParams,
    *,
    indexer: Indexer | None = None,
    redact: Callable[[Any], Any] | None = None,
) -> Block:
    """Change the given fields only.

    `properties` is merged key by key (a null value removes the key) unless
    `replace_properties` is true. With `expected_version` the update applies only if nobody
    changed the block since that version was read - a stale writer gets a conflict instead of
    silently overwriting newer text.
    """
    new_spans = _new_spans(p)
    properties = p.properties
    if redact is not None:  # the redact_blocks setting: secrets never reach the database
        if new_spans is not None:
            new_spans = _redacted_spans(new_spans, redact)
        if not isinstance(properties, UnsetType):
            properties = redact(properties)
    new_text = spans_text(new_spans) if new_spans is not None else None
    prepared = indexer.prepare(new_text) if indexer is not None and p.index and new_text else None

    def tx(conn: apsw.Connection) -> Block:
        block = _require_block(conn, p.block_id, "block_id")
        _check_version(block, p.expected_version)
        if not isinstance(p.type, UnsetType):
            block.type = p.type
        if new_spans is not None:
            block.rich_text = new_spans
        block.content = spans_text(block.rich_text)
        if not isinstance(properties, UnsetType):
            block.properties = _merged(block.properties, properties, p.replace_properties)
        if not isinstance(p.parent_id, UnsetType) and p.parent_id != block.parent_id:
            if p.parent_id is not None:
                _check_move(conn, block, p.parent_id)
            block.parent_id = p.parent_id
        if not isinstance(p.page_id, UnsetType):
            block.page_id = p.page_id
        if not isinstance(p.position, UnsetType):
            block.position = p.position
        block.version += 1
        block.updated_at = now_iso()
        block_sql.replace_block(conn, block)
        if indexer is not None and new_text is not None:
            indexer.write(conn, block.id, new_text, prepared)
        return block

    return db.write(tx)


def _new_spans(p: api.BlockUpdateParams) -> list[RichTextSpan] | None:
    """The spans an update sets (None: the text stays as it is)."""
    if not isinstance(p.content, UnsetType) and not isinstance(p.rich_text, UnsetType):
        raise InvalidInput("rich_text", "give either content or rich_text, not both")
    if not isinstance(p.content, UnsetType):
        return [RichTextSpan(content=p.content)] if p.content else []
    if not isinstance(p.rich_text, UnsetType):
        return p.rich_text
    return None


def _check_version(block: Block, expected: int | None) -> None:
    if expected is not None and block.version != expected:
        raise Conflict(
            f"block {block.id!r} is at version {block.version}, not {expected};"
            " re-read it and apply your change again",
            current_version=block.version,
            expected_version=expected,
            field="$.expected_version",
        )


def _merged(old: dict[str, Any], new: dict[str, Any], replace: bool) -> dict[str, Any]:
    """`new` over `old` key by key (a None value removes the key), or `new` alone if `replace`."""
    if replace:
        merged = dict(new)
    else:
        merged = dict(old)
        for key, value in new.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
    _check_properties(merged)
    return merged


def _check_move(conn: apsw.Connection, block: Block, parent_id: str) -> None:
    if parent_id == block.id or parent_id in block_sql.descendant_ids(conn, block.id):
        raise InvalidInput("parent_id", "a block cannot move under itself or its descendants")
    _check_parent(conn, parent_id, block.act_id)


def delete_block(db: Database, p: api.BlockDeleteParams) -> api.BlockDeleteResult:
    """Delete a block with its edges and embedding; its children too only if `recursive`.

    A block with children and recursive=false is a conflict: nothing is deleted by surprise.
    Deleting a block that does not exist reports deleted=false (deletes are idempotent).
    """

    block_id = p.block_id

    def tx(conn: apsw.Connection) -> api.BlockDeleteResult:
        if not block_sql.block_exists(conn, block_id):
            return api.BlockDeleteResult(deleted=False, block_id=block_id, deleted_block_ids=[])
        below = block_sql.descendant_ids(conn, block_id)
        if below and not p.recursive:
            raise Conflict(
                f"block {block_id!r} has {len(below)} descendant block(s);"
                " pass recursive=true to delete them too",
                descendants=len(below),
                field="$.recursive",
            )
        ids = [*reversed(below), block_id]
        edges = rel_sql.count_touching(conn, ids)
        embeddings = vec_sql.count_embeddings_of(conn, ids)
        block_sql.delete_blocks(conn, ids)
        return api.BlockDeleteResult(
            deleted=True,
            block_id=block_id,
            deleted_block_ids=ids,
            relationships_removed=edges,
            embeddings_removed=embeddings,
        )

    return db.write(tx)
