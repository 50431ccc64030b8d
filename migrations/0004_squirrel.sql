-- Squirrel (seed 001): the memory of a coding assistant.
-- memories, evidence, memory_metrics and episodes are exactly as seed 001 section 1 defines them;
-- columns after the seed's own ones are additions (polarity and path_prefix as the design asks,
-- and the episode bookkeeping the pipeline needs). Everything else here is new bookkeeping.

CREATE TABLE memories (
  id          TEXT PRIMARY KEY,
  project_id  TEXT,                     -- NULL for scope 'global'
  scope       TEXT NOT NULL,            -- 'global' | 'project' | 'repo_path'

  owner_type  TEXT NOT NULL,            -- 'user' | 'team' | 'org'
  owner_id    TEXT NOT NULL,

  kind        TEXT NOT NULL,            -- 'preference' | 'invariant' | 'pattern' | 'guard' | 'note'
  tier        TEXT NOT NULL,            -- 'short_term' | 'long_term' | 'emergency'
  key         TEXT,                     -- optional slot name: 'project.http_client', 'user.pref.x'
  text        TEXT NOT NULL,

  status      TEXT NOT NULL,            -- 'provisional' | 'active' | 'deprecated'
  confidence  REAL,
  expires_at  TEXT,
  embedding   BLOB,                     -- float32 vector of `text`; NULL until embedded

  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,

  polarity    INTEGER NOT NULL DEFAULT 1,   -- -1: an anti-pattern ("don't do X")
  path_prefix TEXT                          -- scope 'repo_path': the sub-tree it applies to
);

CREATE INDEX idx_memories_project ON memories(project_id, status, scope);
CREATE INDEX idx_memories_key ON memories(key, project_id, status) WHERE key IS NOT NULL;
CREATE INDEX idx_memories_owner ON memories(owner_type, owner_id, status);
CREATE INDEX idx_memories_kind ON memories(project_id, kind, tier, status);
-- exact-duplicate checks of the commit layer compare this expression
CREATE INDEX idx_memories_same_text ON memories(project_id, kind, lower(trim(text)));

CREATE TABLE evidence (
  id           TEXT PRIMARY KEY,
  memory_id    TEXT NOT NULL,
  episode_id   TEXT NOT NULL,
  source       TEXT,      -- 'failure_then_success' | 'user_correction' | 'explicit_statement'
  frustration  TEXT,      -- 'none' | 'mild' | 'moderate' | 'severe'
  created_at   TEXT NOT NULL,
  FOREIGN KEY (memory_id) REFERENCES memories(id)
);

CREATE INDEX idx_evidence_memory ON evidence(memory_id);
CREATE INDEX idx_evidence_episode ON evidence(episode_id);

CREATE TABLE memory_metrics (
  memory_id              TEXT PRIMARY KEY,
  use_count              INTEGER DEFAULT 0,
  opportunities          INTEGER DEFAULT 0,
  suspected_regret_hits  INTEGER DEFAULT 0,
  estimated_regret_saved REAL DEFAULT 0.0,
  last_used_at           TEXT,
  last_evaluated_at      TEXT,
  FOREIGN KEY (memory_id) REFERENCES memories(id)
);

CREATE TABLE episodes (
  id          TEXT PRIMARY KEY,
  project_id  TEXT NOT NULL,
  start_ts    TEXT NOT NULL,
  end_ts      TEXT NOT NULL,
  events_json TEXT NOT NULL,            -- {"events": [...compressed...], "stats": {...}}
  processed   INTEGER DEFAULT 0,        -- 1 once the writer ran (or the pre-filter skipped it)

  session_id   TEXT,
  owner_type   TEXT NOT NULL DEFAULT 'user',
  owner_id     TEXT NOT NULL DEFAULT '',
  cut_reason   TEXT NOT NULL DEFAULT 'flush',  -- task_boundary | resolved_frustration | flush
                                               -- | session_end | size_cap
  prefilter    TEXT,                           -- JSON: {"call_writer": bool, "reasons": [...]}
  outcome      TEXT NOT NULL DEFAULT 'pending', -- pending | written | skipped | failed
  outcome_reason TEXT,
  attempts     INTEGER NOT NULL DEFAULT 0,
  ops_json     TEXT,                           -- what the writer decided, as committed
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);

CREATE INDEX idx_episodes_project ON episodes(project_id, end_ts);
CREATE INDEX idx_episodes_session ON episodes(session_id, end_ts);
CREATE INDEX idx_episodes_pending ON episodes(processed) WHERE processed = 0;

-- Where a project_id came from, so a project's own policy file can be found again.
CREATE TABLE projects (
  id           TEXT PRIMARY KEY,
  root         TEXT,
  name         TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  last_seen_at TEXT NOT NULL
);

-- Events of a session that are not yet part of an episode (they survive a restart).
CREATE TABLE squirrel_sessions (
  session_id    TEXT PRIMARY KEY,
  project_id    TEXT NOT NULL,
  owner_type    TEXT NOT NULL,
  owner_id      TEXT NOT NULL,
  started_at    TEXT NOT NULL,
  last_event_at TEXT NOT NULL,
  state_json    TEXT NOT NULL DEFAULT '{}',  -- the running state of the open episode
  ended         INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE squirrel_events (
  session_id TEXT NOT NULL REFERENCES squirrel_sessions(session_id) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  event_json TEXT NOT NULL,                 -- compressed and redacted already
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- One row per get_task_context: what was asked, what came back, and how the task went.
CREATE TABLE context_requests (
  context_id     TEXT PRIMARY KEY,
  project_id     TEXT,
  owner_type     TEXT NOT NULL,
  owner_id       TEXT NOT NULL,
  session_id     TEXT,
  task           TEXT NOT NULL,
  path           TEXT,
  created_at     TEXT NOT NULL,
  budget_tokens  INTEGER NOT NULL,
  tokens         INTEGER NOT NULL,
  feedback_at    TEXT,                      -- set once: feedback for a context counts once
  feedback_source TEXT,                     -- 'explicit' | 'episode'
  errors         INTEGER,
  retries        INTEGER,
  tests_final_status TEXT,
  user_frustration TEXT
);

CREATE INDEX idx_context_session ON context_requests(session_id, created_at);

CREATE TABLE memory_injections (
  context_id TEXT NOT NULL REFERENCES context_requests(context_id) ON DELETE CASCADE,
  memory_id  TEXT NOT NULL,
  rank       INTEGER NOT NULL,
  score      REAL NOT NULL,
  PRIMARY KEY (context_id, memory_id)
) WITHOUT ROWID;

CREATE INDEX idx_injections_memory ON memory_injections(memory_id);

-- Per project running averages of how tasks go, for estimated_regret_saved (seed 001 section 4.2).
CREATE TABLE project_baselines (
  project_id   TEXT PRIMARY KEY,
  outcomes     INTEGER NOT NULL DEFAULT 0,
  avg_errors   REAL NOT NULL DEFAULT 0.0,
  avg_retries  REAL NOT NULL DEFAULT 0.0,
  updated_at   TEXT NOT NULL
);

-- Every Memory Writer call: tokens and time spent, for squirrel/status and the daily cap.
CREATE TABLE writer_calls (
  id            TEXT PRIMARY KEY,
  episode_id    TEXT NOT NULL,
  writer        TEXT NOT NULL,              -- 'rules' | 'openai' | 'anthropic'
  model         TEXT,
  started_at    TEXT NOT NULL,
  duration_ms   REAL NOT NULL,
  input_tokens  INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  ok            INTEGER NOT NULL,
  ops           INTEGER NOT NULL DEFAULT 0,
  error         TEXT
);

CREATE INDEX idx_writer_calls_day ON writer_calls(started_at);

-- The in-memory vector index of every process follows memory vectors through this log, as it
-- follows block vectors through embedding_changes. Only live memories are indexed.
CREATE TABLE memory_embedding_changes (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_id TEXT NOT NULL
);

CREATE TRIGGER memories_vec_log_insert AFTER INSERT ON memories
WHEN new.embedding IS NOT NULL BEGIN
  INSERT INTO memory_embedding_changes(memory_id) VALUES (new.id);
END;
CREATE TRIGGER memories_vec_log_update AFTER UPDATE OF embedding, status, project_id ON memories
BEGIN
  INSERT INTO memory_embedding_changes(memory_id) VALUES (new.id);
END;
CREATE TRIGGER memories_vec_log_delete AFTER DELETE ON memories BEGIN
  INSERT INTO memory_embedding_changes(memory_id) VALUES (old.id);
END;

-- Keyword search over memory text and key.
CREATE VIRTUAL TABLE memories_fts USING fts5(
  text,
  key,
  content = 'memories',
  content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, text, key) VALUES (new.rowid, new.text, coalesce(new.key, ''));
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, text, key)
  VALUES ('delete', old.rowid, old.text, coalesce(old.key, ''));
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, key ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, text, key)
  VALUES ('delete', old.rowid, old.text, coalesce(old.key, ''));
  INSERT INTO memories_fts(rowid, text, key) VALUES (new.rowid, new.text, coalesce(new.key, ''));
END;
