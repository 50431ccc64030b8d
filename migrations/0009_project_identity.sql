-- A project is a repository, not a checkout path (reos_memory/squirrel/projects.py): every
-- worktree of one repository and every clone of one origin share one project. What a project
-- is can only be read from the filesystem (its `.git`, the common dir, the origin remote), so
-- SQL cannot re-key the rows here: projects from before this migration keep their ids and get
-- `identity` NULL, and the first time any project is resolved afterwards each of them is given
-- its identity from its root and merged into the project of that identity (memories, episodes,
-- sessions, context requests, baselines and session-log cursors re-pointed, nothing deleted).
ALTER TABLE projects ADD COLUMN identity TEXT;     -- what the id derives from; NULL: not yet known
ALTER TABLE projects ADD COLUMN merged_into TEXT;  -- set when this id became another project's
                                                   -- alias: requests naming it reach that one

CREATE INDEX idx_projects_identity ON projects(identity) WHERE merged_into IS NULL;
CREATE INDEX idx_projects_merged ON projects(merged_into) WHERE merged_into IS NOT NULL;
