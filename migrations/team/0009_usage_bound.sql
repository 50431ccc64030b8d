-- What each key has reported of each memory's use today (squirrel/usage/report): a key's
-- report counts only within a daily bound per memory, so a reader key cannot post a million
-- uses that make CR-Memory promote a memory. Old days are pruned as the reports come in.
CREATE TABLE usage_daily (
  org_id        text NOT NULL REFERENCES orgs(id),
  key_id        text NOT NULL,
  memory_id     text NOT NULL,
  day           date NOT NULL,
  opportunities integer NOT NULL DEFAULT 0,
  uses          integer NOT NULL DEFAULT 0,
  regret_hits   integer NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, key_id, memory_id, day)
);
CREATE INDEX usage_daily_day ON usage_daily (day);
ALTER TABLE usage_daily ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON usage_daily
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
GRANT SELECT, INSERT, UPDATE, DELETE ON usage_daily TO reos_team_server;
