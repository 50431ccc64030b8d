-- Block memory graph (seed 004): blocks, typed relationships, embeddings.
-- Blocks mirror CAIRN's block model; rich_text and properties are JSON text.

CREATE TABLE blocks (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    act_id      TEXT NOT NULL,
    parent_id   TEXT REFERENCES blocks(id),
    page_id     TEXT,
    position    INTEGER NOT NULL DEFAULT 0,
    content     TEXT NOT NULL DEFAULT '',      -- plain text, derived from rich_text
    content_hash TEXT NOT NULL,                -- sha256 of content; embeddings compare to it
    rich_text   TEXT NOT NULL DEFAULT '[]',    -- JSON array of spans
    properties  TEXT NOT NULL DEFAULT '{}',    -- JSON object
    version     INTEGER NOT NULL DEFAULT 1,    -- bumped on every update (optimistic concurrency)
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE INDEX idx_blocks_act_type ON blocks(act_id, type);
CREATE INDEX idx_blocks_parent ON blocks(parent_id, position);
CREATE INDEX idx_blocks_page ON blocks(page_id, position);

-- Typed relationships between blocks (exactly as seed 004)
CREATE TABLE block_relationships (
    id TEXT PRIMARY KEY,
    source_block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
    target_block_id TEXT NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
    relationship_type TEXT NOT NULL,
    confidence REAL DEFAULT 1.0,
    weight REAL DEFAULT 1.0,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE(source_block_id, target_block_id, relationship_type),
    CHECK(source_block_id != target_block_id)
);

-- Both edge directions, covering what a traversal reads so walks never touch the table.
CREATE INDEX idx_rel_out ON block_relationships(
    source_block_id, relationship_type, target_block_id, confidence, id);
CREATE INDEX idx_rel_in ON block_relationships(
    target_block_id, relationship_type, source_block_id, confidence, id);
CREATE INDEX idx_rel_type_source ON block_relationships(relationship_type, source);

-- Vector embeddings for semantic search (exactly as seed 004)
CREATE TABLE block_embeddings (
    block_id TEXT PRIMARY KEY REFERENCES blocks(id) ON DELETE CASCADE,
    embedding BLOB NOT NULL,
    embedding_model TEXT DEFAULT 'all-MiniLM-L6-v2',
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);
