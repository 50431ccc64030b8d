-- The receipt each cached team memory came with (issue 32, item 9): the team server signs every
-- memory a pull delivers for the key that pulled it, and a usage report must name, for each
-- memory, the receipt of the delivery that brought it to that same key. Memories cached before
-- this migration have none: the cursor goes back to the start, so the next pull brings them
-- again (with their local counts kept) and their usage can be reported from then.
ALTER TABLE team_memories ADD COLUMN receipt TEXT;
UPDATE team_sync SET last_seq = 0, last_mark = NULL;
