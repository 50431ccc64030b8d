-- Documents inserted with documents/insert; their text lives in document_chunk blocks.

CREATE TABLE documents (
    id          TEXT PRIMARY KEY,
    act_id      TEXT NOT NULL,
    filename    TEXT NOT NULL,
    format      TEXT NOT NULL,          -- pdf, docx, txt, md, csv, xlsx
    size_bytes  INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    pages       INTEGER,                -- PDF pages, sheets of a workbook
    chunk_count INTEGER NOT NULL,
    source_path TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (act_id, filename)           -- inserting the same file again replaces it
);

CREATE INDEX idx_blocks_source_document
    ON blocks (json_extract(properties, '$.source_document_id'))
    WHERE type = 'document_chunk';
