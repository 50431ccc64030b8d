-- Retrieval: keyword index, embedding model identity, and a change log that lets every
-- process keep its in-memory vector index coherent with writes made by other processes.

CREATE TABLE embedding_meta (
    key   TEXT PRIMARY KEY,   -- 'model_id', 'dimensions', 'vector_table_dimensions'
    value TEXT NOT NULL
);

CREATE TABLE embedding_changes (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    block_id TEXT NOT NULL
);

CREATE TRIGGER block_embeddings_log_insert AFTER INSERT ON block_embeddings BEGIN
    INSERT INTO embedding_changes(block_id) VALUES (new.block_id);
END;
CREATE TRIGGER block_embeddings_log_update AFTER UPDATE ON block_embeddings BEGIN
    INSERT INTO embedding_changes(block_id) VALUES (new.block_id);
END;
CREATE TRIGGER block_embeddings_log_delete AFTER DELETE ON block_embeddings BEGIN
    INSERT INTO embedding_changes(block_id) VALUES (old.block_id);
END;

-- BM25 keyword index over block text, kept in step by triggers (so writes from any process,
-- including older code paths, are indexed). Porter stemming helps prose and scientific text.
CREATE VIRTUAL TABLE blocks_fts USING fts5(
    content,
    content = 'blocks',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER blocks_fts_insert AFTER INSERT ON blocks BEGIN
    INSERT INTO blocks_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER blocks_fts_delete AFTER DELETE ON blocks BEGIN
    INSERT INTO blocks_fts(blocks_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER blocks_fts_update AFTER UPDATE OF content ON blocks
WHEN old.content IS NOT new.content BEGIN
    INSERT INTO blocks_fts(blocks_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO blocks_fts(rowid, content) VALUES (new.rowid, new.content);
END;

INSERT INTO blocks_fts(blocks_fts) VALUES ('rebuild');
