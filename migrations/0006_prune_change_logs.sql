-- The vector change logs (read by every process's in-memory index) stay bounded whatever writes
-- to them: every 1,000th change forgets all but the newest 100,000. A reader further behind
-- than that reloads its index from the vectors themselves (store/vector_index.py).
CREATE TRIGGER embedding_changes_prune AFTER INSERT ON embedding_changes
WHEN new.seq % 1000 = 0 BEGIN
    DELETE FROM embedding_changes WHERE seq <= new.seq - 100000;
END;

CREATE TRIGGER memory_embedding_changes_prune AFTER INSERT ON memory_embedding_changes
WHEN new.seq % 1000 = 0 BEGIN
    DELETE FROM memory_embedding_changes WHERE seq <= new.seq - 100000;
END;
