-- An idempotency key belongs to the API key that sent it, not to the whole org: with (org_id,
-- idem_key) another team's key sending the same string got the first team's stored reply, and
-- could take a key another team was about to use. The rows kept are unchanged (each already
-- names its key).
ALTER TABLE idempotency DROP CONSTRAINT idempotency_pkey;
ALTER TABLE idempotency ADD PRIMARY KEY (org_id, key_id, idem_key);
