-- get_task_context and memories/add at 100K memories (measured with tools/bench_team.py): three
-- of their queries read every memory of the org.

-- 1. A project's emergency guards, read on every call, had no index of their own: 92 ms.
--    Guards are few, so this index is small.
CREATE INDEX memories_guards ON memories (org_id, project_id)
  WHERE kind = 'guard' AND tier = 'emergency' AND polarity < 0;


-- 2. Full text under row-level security. `tsv @@ query` is not leakproof, so PostgreSQL never
--    uses it as an index condition ahead of the tenant policy: every memory of the org was read
--    and matched (93 ms for a word held by 2 of 100K). This function runs as the tables' owner,
--    which the policy does not bind, and applies the policy's own condition itself (the org in
--    `reos.org_id`, set by the server for each transaction), so the GIN index is used and still
--    no other org's row is ever read. The reach and filters are store/team/memories.py's Reach
--    and Filters; at most `scan` matching rows are scored, besides the matching ones of `among`
--    (the request's other candidates, found under the same filters).
CREATE FUNCTION memory_text_hits(
  q          tsquery,
  team_ids   text[],     -- NULL: every team of the org (and its org-wide memories)
  project    text,       -- NULL: any project
  with_global boolean,   -- with `project`: also memories of no project; without: project or none
  statuses   text[],
  kinds      text[],     -- NULL: any kind
  in_scope   text,       -- NULL: any scope
  owner_team text,       -- a team's memories only (NULL: no such filter)
  org_owned  boolean,    -- true: org-wide memories only
  scan       integer,
  among      text[]     -- ids within the reach and filters already
) RETURNS TABLE (id text, rank real)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
SET plan_cache_mode = force_custom_plan
AS $$
  WITH hits AS (
    (SELECT h.id, h.tsv FROM memories h
      WHERE h.org_id = current_setting('reos.org_id', true) AND h.tsv @@ q
        AND (team_ids IS NULL OR h.team_id IS NULL OR h.team_id = ANY (team_ids))
        AND (project IS NULL AND (with_global OR h.project_id IS NOT NULL)
             OR h.project_id = project OR with_global AND h.project_id IS NULL)
        AND h.status = ANY (statuses)
        AND (kinds IS NULL OR h.kind = ANY (kinds))
        AND (in_scope IS NULL OR h.scope = in_scope)
        AND (owner_team IS NULL OR h.team_id = owner_team)
        AND (NOT org_owned OR h.team_id IS NULL)
      LIMIT scan)
    UNION
    (SELECT h.id, h.tsv FROM memories h
      WHERE h.org_id = current_setting('reos.org_id', true) AND h.id = ANY (among)
        AND h.tsv @@ q)
  )
  SELECT hits.id, ts_rank_cd(hits.tsv, q) FROM hits
$$;
REVOKE ALL ON FUNCTION memory_text_hits FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_text_hits TO reos_team_server;

-- 3. An add looks for a live memory with the very same text first: 48 ms. A hash index (texts
--    can be longer than a B-tree entry may be; equality of text is leakproof, so row-level
--    security lets it serve).
CREATE INDEX memories_text ON memories USING hash (text);
