-- A change log of block text for every process's in-memory keyword index (store/keyword_index.py):
-- each insert, delete, and change of a block's content or act logs the block's rowid, so a
-- process's cached postings learn of writes made by any process. Bounded like the vector logs:
-- every 1,000th change forgets all but the newest 100,000; a reader further behind starts afresh.
CREATE TABLE keyword_changes (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    block_rowid INTEGER NOT NULL
);

CREATE TRIGGER blocks_keyword_log_insert AFTER INSERT ON blocks BEGIN
    INSERT INTO keyword_changes(block_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER blocks_keyword_log_update AFTER UPDATE OF content, act_id ON blocks BEGIN
    INSERT INTO keyword_changes(block_rowid) VALUES (new.rowid);
END;
CREATE TRIGGER blocks_keyword_log_delete AFTER DELETE ON blocks BEGIN
    INSERT INTO keyword_changes(block_rowid) VALUES (old.rowid);
END;

CREATE TRIGGER keyword_changes_prune AFTER INSERT ON keyword_changes
WHEN new.seq % 1000 = 0 BEGIN
    DELETE FROM keyword_changes WHERE seq <= new.seq - 100000;
END;
