-- The local cache of a team server's memories (issue 21). Team and org memories a machine pulls
-- are ordinary rows of `memories` (owner_type team/org), so the one ranking sees them and they
-- are embedded locally like any memory; `team_memories` marks which rows mirror the server, and
-- a pull only ever touches rows marked there, never a user's own. `team_sync` holds the pull
-- cursor per server and org; `team_outbox` the team writes waiting to be sent, each with the
-- idempotency key the server deduplicates a replay by. The API key itself is never stored.

CREATE TABLE team_sync (
  server          TEXT NOT NULL,            -- the server's URL without credentials or query
  org_id          TEXT NOT NULL,
  key_id          TEXT NOT NULL,            -- the public id of the key that pulled (not secret)
  team_id         TEXT,                     -- the key's team (NULL: an org-wide key)
  role            TEXT NOT NULL,
  last_seq        INTEGER NOT NULL DEFAULT 0,   -- every change <= last_seq is applied
  last_pull_at    TEXT,                     -- the last pull that reached the end of the log
  last_attempt_at TEXT,
  last_error      TEXT,                     -- the last attempt's failure (NULL: it worked)
  PRIMARY KEY (server, org_id)
);

CREATE TABLE team_memories (
  memory_id   TEXT PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
  server      TEXT NOT NULL,
  org_id      TEXT NOT NULL,
  version     INTEGER NOT NULL,
  seq         INTEGER NOT NULL,
  pulled_at   TEXT NOT NULL,
  -- the local counts already sent by squirrel/usage/report: what is above them is still owed
  reported_opportunities INTEGER NOT NULL DEFAULT 0,
  reported_uses          INTEGER NOT NULL DEFAULT 0,
  reported_regret_hits   INTEGER NOT NULL DEFAULT 0,
  reported_regret_saved  REAL NOT NULL DEFAULT 0.0
);

CREATE INDEX idx_team_memories_org ON team_memories(server, org_id);

CREATE TABLE team_outbox (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,   -- the order items are sent in
  server          TEXT NOT NULL,
  idempotency_key TEXT NOT NULL UNIQUE,
  method          TEXT NOT NULL,
  params          TEXT NOT NULL,            -- JSON, idempotency_key included
  local_memory_id TEXT,                     -- the memory it is about, when there is one
  created_at      TEXT NOT NULL,
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_attempt_at TEXT,
  last_error      TEXT,
  state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'refused')),
  done_at         TEXT,
  result          TEXT                      -- JSON: the server's reply to a done item
);

CREATE INDEX idx_team_outbox_pending ON team_outbox(server, id) WHERE state = 'pending';
