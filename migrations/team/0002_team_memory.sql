-- Team memory (issue 21): members, memory versions and metrics, the ordered change log machines
-- pull from, idempotency of replayed writes, shares proposed by members, the contexts the
-- server gave and the episodes members sent. Every table leads with org_id, as in 0001.

CREATE TABLE members (
  org_id     text NOT NULL REFERENCES orgs(id),
  id         text NOT NULL,
  team_id    text,                      -- NULL: a member of the org only
  name       text NOT NULL,
  email      text,
  created_at timestamptz NOT NULL DEFAULT now(),
  removed_at timestamptz,
  PRIMARY KEY (org_id, id),
  FOREIGN KEY (org_id, team_id) REFERENCES teams(org_id, id)
);
CREATE UNIQUE INDEX members_name ON members (org_id, name) WHERE removed_at IS NULL;

-- a key may belong to a member (who acts, in the audit log and in a memory's history)
ALTER TABLE api_keys ADD COLUMN member_id text;
ALTER TABLE api_keys ADD FOREIGN KEY (org_id, member_id) REFERENCES members(org_id, id);

-- A memory keeps its id across edits; `version` grows by one per change, under the row's lock,
-- so two members editing it are ordered by the server and the earlier text is kept in
-- memory_history as a deprecated version. `seq` is the change-log position of its last change.
ALTER TABLE memories
  ADD COLUMN version    integer NOT NULL DEFAULT 1,
  ADD COLUMN seq        bigint NOT NULL DEFAULT 0,
  ADD COLUMN created_by text,            -- key id of the writer (NULL: the admin command line)
  ADD COLUMN updated_by text,
  ADD COLUMN origin     text NOT NULL DEFAULT 'rpc' CHECK (origin IN ('rpc', 'share', 'episode')),
  ADD COLUMN tsv        tsvector GENERATED ALWAYS AS
                          (to_tsvector('english', coalesce(key, '') || ' ' || text)) STORED;
-- fastupdate off: a pending list would be scanned by every query until vacuum merges it (read
-- far more often than written, a memory store pays the merge once, on insert)
CREATE INDEX memories_tsv ON memories USING gin (tsv) WITH (fastupdate = off);
CREATE UNIQUE INDEX memories_live_key ON memories (org_id, coalesce(team_id, ''), coalesce(project_id, ''), key)
  WHERE key IS NOT NULL AND status <> 'deprecated';

-- How many live (not deprecated) memories of each owner hold each word (the lexemes of their
-- full text), kept by a trigger: a task's distinctive words (held by few memories) are known
-- from a few index lookups instead of counting matches at query time, which at 100K memories
-- cost more than the rest of get_task_context. Writes of one org are already serialized by its
-- change counter, so the counts add no new contention.
CREATE TABLE memory_words (
  org_id   text NOT NULL,
  team_key text NOT NULL,                -- the team's id, '' for org memories
  word     text NOT NULL,
  n        integer NOT NULL,
  PRIMARY KEY (org_id, team_key, word)
);

CREATE FUNCTION memory_words_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status <> 'deprecated' THEN
    UPDATE memory_words SET n = n - 1
     WHERE org_id = OLD.org_id AND team_key = coalesce(OLD.team_id, '')
       AND word = ANY (tsvector_to_array(OLD.tsv));
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status <> 'deprecated' THEN
    INSERT INTO memory_words (org_id, team_key, word, n)
    SELECT NEW.org_id, coalesce(NEW.team_id, ''), w, 1
      FROM unnest(tsvector_to_array(NEW.tsv)) AS w
    ON CONFLICT (org_id, team_key, word) DO UPDATE SET n = memory_words.n + 1;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER memories_words AFTER INSERT OR DELETE OR UPDATE OF text, key, status
  ON memories FOR EACH ROW EXECUTE FUNCTION memory_words_count();

CREATE TABLE memory_history (
  org_id      text NOT NULL,
  memory_id   text NOT NULL,
  version     integer NOT NULL,
  text        text NOT NULL,
  kind        text NOT NULL,
  tier        text NOT NULL,
  status      text NOT NULL,
  key         text,
  polarity    smallint NOT NULL,
  confidence  real,
  expires_at  timestamptz,
  written_by  text,                     -- who wrote this version
  replaced_by text,                     -- who wrote the next one
  replaced_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, memory_id, version),
  FOREIGN KEY (org_id, memory_id) REFERENCES memories(org_id, id) ON DELETE CASCADE
);

-- What team CR-Memory decides on: counted by the server's own contexts and by the usage every
-- member's machine reports for the team memories it injected.
CREATE TABLE memory_metrics (
  org_id                 text NOT NULL,
  memory_id              text NOT NULL,
  use_count              integer NOT NULL DEFAULT 0,
  opportunities          integer NOT NULL DEFAULT 0,
  suspected_regret_hits  integer NOT NULL DEFAULT 0,
  estimated_regret_saved double precision NOT NULL DEFAULT 0,
  last_used_at           timestamptz,
  last_evaluated_at      timestamptz,
  PRIMARY KEY (org_id, memory_id),
  FOREIGN KEY (org_id, memory_id) REFERENCES memories(org_id, id) ON DELETE CASCADE
);

-- The ordered change log. A write takes the next number of its org under the row lock of
-- change_counters and holds it to commit, so numbers commit in order: a pull cursor at N has
-- seen every change <= N, and no later commit can appear behind it.
CREATE TABLE change_counters (
  org_id text PRIMARY KEY REFERENCES orgs(id),
  seq    bigint NOT NULL DEFAULT 0
);
CREATE TABLE changes (
  org_id    text NOT NULL REFERENCES orgs(id),
  seq       bigint NOT NULL,
  memory_id text NOT NULL,              -- no foreign key: a forgotten memory's change remains
  team_id   text,                       -- NULL: an org memory
  op        text NOT NULL CHECK (op IN ('upsert', 'forget')),
  at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, seq)
);
CREATE INDEX changes_memory ON changes (org_id, memory_id);

-- A write sent again with the same idempotency key (an outbox replayed after a lost reply)
-- gets the first reply back and changes nothing.
CREATE TABLE idempotency (
  org_id       text NOT NULL REFERENCES orgs(id),
  idem_key     text NOT NULL,
  key_id       text NOT NULL,
  method       text NOT NULL,
  request_hash text NOT NULL,
  response     jsonb NOT NULL,
  at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, idem_key)
);
CREATE INDEX idempotency_at ON idempotency (at);

-- A member's personal memory proposed to a team (`sqrl share`), until a writer approves it (it
-- becomes a team memory) or rejects it.
CREATE TABLE shares (
  org_id          text NOT NULL REFERENCES orgs(id),
  id              text NOT NULL,
  team_id         text,                 -- NULL: proposed to the whole org
  proposed_by     text NOT NULL,        -- key id
  local_memory_id text,
  memory          jsonb NOT NULL,       -- the proposed memory's fields
  status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'approved', 'rejected')),
  decided_by      text,
  decided_at      timestamptz,
  reason          text,
  memory_id       text,                 -- the team memory an approval made
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id),
  FOREIGN KEY (org_id, team_id) REFERENCES teams(org_id, id)
);
CREATE INDEX shares_status ON shares (org_id, status, created_at);

-- The contexts the server gave (squirrel/get_task_context over HTTP), for their feedback.
CREATE TABLE context_requests (
  org_id     text NOT NULL REFERENCES orgs(id),
  id         text NOT NULL,
  team_id    text,
  key_id     text NOT NULL,
  project_id text,
  session_id text,
  task       text NOT NULL,
  memory_ids text[] NOT NULL DEFAULT '{}',
  tokens     integer NOT NULL,
  feedback   jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id)
);

-- Each project's running averages of task outcomes, against which feedback finds regret saved
-- (as locally: squirrel/memory/feedback.py).
CREATE TABLE project_baselines (
  org_id      text NOT NULL REFERENCES orgs(id),
  project_id  text NOT NULL,
  outcomes    integer NOT NULL DEFAULT 0,
  avg_errors  double precision NOT NULL DEFAULT 0,
  avg_retries double precision NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, project_id)
);

-- Episodes members sent (squirrel/ingest_episode): already cut and redacted on their machine.
CREATE INDEX context_requests_session ON context_requests (org_id, key_id, session_id)
  WHERE session_id IS NOT NULL;

CREATE TABLE episodes (
  org_id       text NOT NULL REFERENCES orgs(id),
  id           text NOT NULL,
  team_id      text,
  key_id       text NOT NULL,
  project_id   text NOT NULL,
  episode      jsonb NOT NULL,
  outcome      text NOT NULL DEFAULT 'pending'
                 CHECK (outcome IN ('pending', 'written', 'skipped', 'failed')),
  reason       text,
  ops          jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  PRIMARY KEY (org_id, id),
  FOREIGN KEY (org_id, team_id) REFERENCES teams(org_id, id)
);
CREATE INDEX episodes_outcome ON episodes (org_id, outcome, created_at);

ALTER TABLE members ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_history ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_words ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_metrics ENABLE ROW LEVEL SECURITY;
ALTER TABLE change_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE changes ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency ENABLE ROW LEVEL SECURITY;
ALTER TABLE shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE context_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE episodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_baselines ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant ON members
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON memory_words
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON memory_history
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON memory_metrics
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON change_counters
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON changes
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON idempotency
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON shares
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON context_requests
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON episodes
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON project_baselines
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));

GRANT SELECT, INSERT, UPDATE, DELETE ON members, memory_words, memory_history, memory_metrics, change_counters,
  changes, idempotency, shares, context_requests, episodes, project_baselines TO reos_team_server;
-- the audit log stays append-only for the server role: pruning by age runs as the tables' owner
