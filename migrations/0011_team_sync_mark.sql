-- What identifies the change a team pull cursor stands on (the server's `next_mark`): the next
-- pull sends it back, and a server whose log no longer holds that change (its database was
-- restored from an earlier backup, or replaced) says so. The cursor then goes back to the start
-- (`restarted_at` notes when) and the cache is pulled again instead of silently missing the
-- changes numbered again after the restore; cached memories not pulled again by the end of that
-- pull are no longer on the server and are dropped. Those pulled again keep their local counts.
ALTER TABLE team_sync ADD COLUMN last_mark TEXT;
ALTER TABLE team_sync ADD COLUMN restarted_at TEXT;
