-- The keys whose evidence of a memory's use the server has: the key that received a context
-- holding it, reported its use (squirrel/usage/report) or judged a context holding it
-- (squirrel/feedback). Team CR-Memory decides by use only on the evidence of at least two keys,
-- so one key (a reader posting fabricated usage, or one machine) can neither promote nor
-- deprecate a team memory alone.
CREATE TABLE usage_reporters (
  org_id    text NOT NULL REFERENCES orgs(id),
  memory_id text NOT NULL,
  key_id    text NOT NULL,
  PRIMARY KEY (org_id, memory_id, key_id)
);
ALTER TABLE usage_reporters ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON usage_reporters
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
GRANT SELECT, INSERT, DELETE ON usage_reporters TO reos_team_server;
