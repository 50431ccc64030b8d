-- Which memory replaced which: the writer's UPDATE, or a write to a key another live memory
-- held, deprecates the old one and adds the new. Kept with the episode (or explicit write) that
-- did it, this is a memory's history (squirrel/memories/get, the web UI). Replacements made
-- before this migration are read back from the ops the episodes recorded; explicit writes
-- recorded none, so theirs start here.
CREATE TABLE memory_replacements (
  memory_id   TEXT NOT NULL,   -- the new memory
  replaced_id TEXT NOT NULL,   -- the memory it deprecated
  episode_id  TEXT NOT NULL,
  at          TEXT NOT NULL,
  PRIMARY KEY (memory_id, replaced_id)
) WITHOUT ROWID;

CREATE INDEX idx_replacements_replaced ON memory_replacements(replaced_id);

INSERT OR IGNORE INTO memory_replacements (memory_id, replaced_id, episode_id, at)
SELECT json_extract(op.value, '$.memory_id'), r.value, e.id, e.end_ts
  FROM episodes e, json_each(e.ops_json) op, json_each(op.value, '$.replaced') r
 WHERE e.ops_json IS NOT NULL AND json_valid(e.ops_json) AND json_type(e.ops_json) = 'array'
   AND json_type(op.value, '$.replaced') = 'array'
   AND json_type(op.value, '$.memory_id') = 'text' AND r.type = 'text';
