-- The receipt each cached team memory came with (issue 32, item 9): the team server signs every
-- memory a pull delivers for the key that pulled it, and a usage report must name, for each
-- memory, the receipt of the delivery that brought it to that same key. Memories cached before
-- this migration have none: the cursor goes back to the start, so the next pull brings them
-- again (with their local counts kept) and their usage can be reported from then.
ALTER TABLE team_memories ADD COLUMN receipt TEXT;
UPDATE team_sync SET last_seq = 0, last_mark = NULL;

-- A usage report queued before this migration names no receipt, and the server refuses it:
-- its counts are owed again (the next report, with receipts, carries them) and it goes.
UPDATE team_memories SET
  reported_opportunities = max(0, reported_opportunities - w.opportunities),
  reported_uses = max(0, reported_uses - w.uses),
  reported_regret_hits = max(0, reported_regret_hits - w.regret_hits),
  reported_regret_saved = max(0.0, reported_regret_saved - w.regret_saved)
FROM (
  SELECT o.server, json_extract(j.value, '$.memory_id') AS memory_id,
         sum(coalesce(json_extract(j.value, '$.opportunities'), 0)) AS opportunities,
         sum(coalesce(json_extract(j.value, '$.uses'), 0)) AS uses,
         sum(coalesce(json_extract(j.value, '$.regret_hits'), 0)) AS regret_hits,
         sum(coalesce(json_extract(j.value, '$.regret_saved'), 0.0)) AS regret_saved
  FROM team_outbox o, json_each(o.params, '$.items') j
  WHERE o.state = 'pending' AND o.method = 'squirrel/usage/report'
  GROUP BY 1, 2
) AS w
WHERE w.server = team_memories.server AND w.memory_id = team_memories.memory_id;
DELETE FROM team_outbox WHERE state = 'pending' AND method = 'squirrel/usage/report';
