-- Which key made a key (team/keys/create): a key made by another expires no later than its
-- maker, and revoking a maker can revoke what it made. NULL: made by the admin command line.
ALTER TABLE api_keys ADD COLUMN made_by text;
CREATE INDEX api_keys_made_by ON api_keys (org_id, made_by) WHERE made_by IS NOT NULL;
