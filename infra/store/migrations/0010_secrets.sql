-- Secrets: values sealed with AES-GCM under MINT_ENCRYPTION_KEY (mint/crypto.py); the plaintext is never
-- stored. A secret belongs to its developer, or to one of the developer's agents (which then overrides a
-- developer secret of the same name for that agent's tools and models).
CREATE TABLE secrets (
    id            uuid PRIMARY KEY,
    developer_id  uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    agent_id      uuid REFERENCES agents(id) ON DELETE CASCADE,
    name          text NOT NULL,
    description   text,
    metadata      jsonb NOT NULL DEFAULT '{}',
    sealed_value  bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- One name per developer, and one per agent (NULLs are distinct, so the developer's own are separate).
CREATE UNIQUE INDEX secrets_developer_names ON secrets (developer_id, name) WHERE agent_id IS NULL;
CREATE UNIQUE INDEX secrets_agent_names ON secrets (agent_id, name) WHERE agent_id IS NOT NULL;
