-- Usage must refer to what the same key received (issue 32, item 9). A member's machine
-- receives team memories by pulling the change log (`squirrel/changes/pull`); each upsert it
-- receives carries a receipt, an HMAC under this secret of the org, the key, the memory and the
-- change's number. A usage report (`squirrel/usage/report`) names, for each memory, the receipt
-- of the delivery that brought it: a key cannot report use of a memory it never received, nor
-- use another key's receipts. The secret is made here, at random, once per database; nothing
-- but the server's role reads it.
CREATE TABLE server_secrets (
  name  text PRIMARY KEY,
  value text NOT NULL
);
INSERT INTO server_secrets (name, value) VALUES (
  'usage_receipts',
  encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text
                           || gen_random_uuid()::text || clock_timestamp()::text, 'UTF8')), 'hex')
);
GRANT SELECT ON server_secrets TO reos_team_server;
