-- Audit rows carry the team an action concerned (NULL: the org as a whole), so an admin can
-- filter the log by team and a team-scoped admin sees its own team's rows; `detail` holds what
-- an action's ids cannot say (how many rows a prune deleted, and before when).
ALTER TABLE audit_log
  ADD COLUMN team_id text,
  ADD COLUMN detail  jsonb;
ALTER TABLE audit_log ADD FOREIGN KEY (org_id, team_id) REFERENCES teams(org_id, id);
CREATE INDEX audit_log_team ON audit_log (org_id, team_id, id);

-- A member's keys are found when the member is removed (they are revoked with it).
CREATE INDEX api_keys_member ON api_keys (org_id, member_id) WHERE member_id IS NOT NULL;
