-- Each developer's webhook secret: the key of the HMAC in every completion webhook's Mint-Signature header.
-- Made on first read (GET /developer/settings, or the first delivery), replaced by
-- POST /developer/webhook-secret/rotate; a delivery reads it as it is when each attempt is sent.
CREATE TABLE webhook_secrets (
    developer_id  uuid PRIMARY KEY REFERENCES developers(id) ON DELETE CASCADE,
    secret        text NOT NULL,
    rotated_at    timestamptz NOT NULL DEFAULT now()
);

-- Row-level security, as migration 0012 gives every tenant table.
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_secrets TO mint_tenant;
ALTER TABLE webhook_secrets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON webhook_secrets TO mint_tenant
    USING (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid)
    WITH CHECK (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid);
