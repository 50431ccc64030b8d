-- The Squirrel logs are kept for `log_retention_days` (squirrel/service.py prunes them): context
-- requests with their injections, writer calls, and sessions idle since before the cut-off.
CREATE INDEX idx_context_created ON context_requests(created_at);
CREATE INDEX idx_sessions_last_event ON squirrel_sessions(last_event_at);
