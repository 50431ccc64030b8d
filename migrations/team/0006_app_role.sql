-- The team server's requests log in as reos_team_app, a role that is no superuser, owns no
-- table, cannot bypass row-level security and can become nothing but reos_team_server (whose
-- grants are what a request may touch). Only migrations and the admin command line connect as
-- the owner. On the embedded cluster only the server's OS user can log in as either
-- (peer authentication mapped from that user: reos_memory/team/cluster.py); on a database
-- given by URL, give the role a password and pass --app-database-url.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'reos_team_app') THEN
    CREATE ROLE reos_team_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
END
$$;
GRANT reos_team_server TO reos_team_app;

-- A SECURITY DEFINER function searches pg_temp first unless the path names it: a temporary
-- table called `memories` would have stood in for the real one. Last, and nobody but the owner
-- may create temporary tables here at all.
ALTER FUNCTION memory_text_hits SET search_path = pg_catalog, public, pg_temp;
DO $$
BEGIN
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
END
$$;
