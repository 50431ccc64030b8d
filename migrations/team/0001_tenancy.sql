-- The team server's schema v1 (issue 21): tenants, API keys, the audit log and team memories.
-- Every org-owned table leads with org_id (its primary key and its foreign keys), so a row can
-- only point at rows of its own org, and a later split by org (Citus) has its distribution key.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE orgs (
  id         text PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE teams (
  org_id     text NOT NULL REFERENCES orgs(id),
  id         text NOT NULL,
  name       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id),
  UNIQUE (org_id, name)
);

-- A key is rmk_<key_id>_<secret>; only a hash of the secret is kept (reos_memory/team/keys.py).
CREATE TABLE api_keys (
  org_id     text NOT NULL REFERENCES orgs(id),
  key_id     text NOT NULL UNIQUE,      -- what a presented key is looked up by
  team_id    text,                      -- NULL: the key reaches the whole org
  role       text NOT NULL CHECK (role IN ('reader', 'writer', 'admin')),
  name       text NOT NULL DEFAULT '',
  hash       text NOT NULL,
  prefix     text NOT NULL,             -- rmk_<key_id>: shown in lists, never the secret
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  PRIMARY KEY (org_id, key_id),
  FOREIGN KEY (org_id, team_id) REFERENCES teams(org_id, id)
);

CREATE TABLE audit_log (
  org_id     text NOT NULL REFERENCES orgs(id),
  id         bigint GENERATED ALWAYS AS IDENTITY,
  key_id     text,                      -- NULL: the admin command line (actor says who)
  actor      text NOT NULL,
  request_id text,
  method     text NOT NULL,
  target_ids text[] NOT NULL DEFAULT '{}',
  at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id),
  FOREIGN KEY (org_id, key_id) REFERENCES api_keys(org_id, key_id)
);

CREATE INDEX audit_log_at ON audit_log (org_id, at);
CREATE INDEX audit_log_prune ON audit_log (at);

-- The columns of the local memories table (migrations/0004_squirrel.sql) that a team or org
-- memory needs; team_id is NULL for an org-wide memory.
CREATE TABLE memories (
  org_id      text NOT NULL REFERENCES orgs(id),
  team_id     text,
  id          text NOT NULL,
  project_id  text,
  scope       text NOT NULL CHECK (scope IN ('global', 'project', 'repo_path')),
  owner_type  text NOT NULL CHECK (owner_type IN ('team', 'org')),
  kind        text NOT NULL CHECK (kind IN ('preference', 'invariant', 'pattern', 'guard', 'note')),
  tier        text NOT NULL CHECK (tier IN ('short_term', 'long_term', 'emergency')),
  key         text,
  text        text NOT NULL,
  status      text NOT NULL CHECK (status IN ('provisional', 'active', 'deprecated')),
  confidence  real,
  expires_at  timestamptz,
  embedding   vector(384),              -- all-MiniLM-L6-v2, normalized; NULL until embedded
  polarity    smallint NOT NULL DEFAULT 1 CHECK (polarity IN (-1, 1)),
  path_prefix text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id),
  FOREIGN KEY (org_id, team_id) REFERENCES teams(org_id, id),
  CHECK ((owner_type = 'team') = (team_id IS NOT NULL))
);

-- L2 on normalized vectors ranks as cosine does (as the local index); tenant columns in B-trees
-- so a small tenant's rows are found exactly, without the vector index.
CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_l2_ops);
CREATE INDEX memories_team ON memories (org_id, team_id, status);
CREATE INDEX memories_project ON memories (org_id, project_id, status, scope);
CREATE INDEX memories_key ON memories (org_id, key, project_id) WHERE key IS NOT NULL;
CREATE INDEX memories_updated ON memories (org_id, updated_at);

-- Row-level security, defence in depth behind the server's own org filter: a transaction sees
-- the rows of the org in `reos.org_id` (set with SET LOCAL / set_config(..., true) per
-- transaction from the API key), none when it is unset. The server's connections run as
-- reos_team_server, which owns nothing and cannot bypass RLS; the tables' owner (the operator
-- who migrates and runs the admin commands) is not subject to these policies, by design.
ALTER TABLE orgs ENABLE ROW LEVEL SECURITY;
ALTER TABLE teams ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant ON orgs
  USING (id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON teams
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON api_keys
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
-- Authentication happens before the org is known: the presented key's id (`reos.key_id`)
-- makes exactly that one row readable.
CREATE POLICY authenticate ON api_keys FOR SELECT
  USING (key_id = current_setting('reos.key_id', true));
CREATE POLICY tenant ON audit_log
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));
CREATE POLICY tenant ON memories
  USING (org_id = current_setting('reos.org_id', true))
  WITH CHECK (org_id = current_setting('reos.org_id', true));

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'reos_team_server') THEN
    CREATE ROLE reos_team_server NOLOGIN NOBYPASSRLS;
  END IF;
END
$$;
-- the migrating role's own connections SET ROLE to it (psycopg: store/team/connection.py)
GRANT reos_team_server TO CURRENT_USER;
GRANT USAGE ON SCHEMA public TO reos_team_server;
GRANT SELECT ON orgs TO reos_team_server;
GRANT SELECT, INSERT, UPDATE, DELETE ON teams, api_keys, memories TO reos_team_server;
GRANT SELECT, INSERT ON audit_log TO reos_team_server;
