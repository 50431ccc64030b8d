-- Which delivery brought each cached team memory (issue 32, item 9): the team server records
-- every pull page that brings memories as a delivery to the key that pulled it, and a usage
-- report must name, for each memory, the delivery that brought it to that same key. Memories
-- cached before this migration have none: the cursor goes back to the start, so the next pull
-- brings them again (with their local counts kept) and their usage can be reported from then.
ALTER TABLE team_memories ADD COLUMN delivery_id TEXT;
UPDATE team_sync SET last_seq = 0, last_mark = NULL;
