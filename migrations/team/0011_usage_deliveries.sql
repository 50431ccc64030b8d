-- The memories each key received, and in which delivery (issue 32, item 9). A member's machine
-- receives team memories by pulling the change log (`squirrel/changes/pull`); each page that
-- brings memories is a delivery with its own id, recorded here for every memory in it. Usage a
-- machine reports (`squirrel/usage/report`) must name the delivery that brought the memory to
-- the same key: a key cannot report use of a memory it never received, and what all of its
-- deliveries of one memory count stays within the daily bound (`usage_daily`). Contexts the
-- server builds itself count their use when they are given (`context_requests`).
CREATE TABLE deliveries (
  org_id     text NOT NULL REFERENCES orgs(id),
  key_id     text NOT NULL,
  memory_id  text NOT NULL,
  id         text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, key_id, memory_id, id)
);
ALTER TABLE deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON deliveries
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
GRANT SELECT, INSERT, DELETE ON deliveries TO reos_team_server;
