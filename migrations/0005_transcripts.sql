-- Where each agent session log has been read up to (seed 001 section 3.2: Squirrel follows the
-- logs agents already write). One row per file; the offset only ever covers complete lines
-- whose events were committed in the same transaction, so a line is never read twice or missed.
CREATE TABLE transcript_cursors (
  path        TEXT PRIMARY KEY,
  agent       TEXT NOT NULL,               -- claude-code | codex
  head_sha256 TEXT NOT NULL,               -- of the first head_bytes bytes: a rewrite changes it
  head_bytes  INTEGER NOT NULL,
  size_seen   INTEGER NOT NULL,            -- the file's size when last read (on disk)
  offset      INTEGER NOT NULL,            -- bytes of complete lines consumed (decompressed)
  session_id  TEXT,
  project_id  TEXT,
  state_json  TEXT NOT NULL DEFAULT '{}',  -- the adapter's parse state, to resume mid-file
  lines       INTEGER NOT NULL DEFAULT 0,
  events      INTEGER NOT NULL DEFAULT 0,
  malformed   INTEGER NOT NULL DEFAULT 0,
  rewrites    INTEGER NOT NULL DEFAULT 0,
  ended       INTEGER NOT NULL DEFAULT 0,  -- its session was flushed as ended
  first_read_at TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);
CREATE INDEX transcript_cursors_session ON transcript_cursors(session_id);
