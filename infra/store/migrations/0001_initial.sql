-- Tenants, their keys, and the engine's resources. Every resource row carries developer_id, and every
-- query in mint/store.py filters on it.
CREATE TABLE developers (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id            uuid PRIMARY KEY,
    developer_id  uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    key_hash      text NOT NULL UNIQUE,          -- sha256 of the key; the key itself is never stored
    prefix        text NOT NULL,                 -- first characters, to tell keys apart
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);

CREATE TABLE agents (
    id                       uuid PRIMARY KEY,
    developer_id             uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    name                     text NOT NULL,
    canonical_name           text,
    about                    text,
    model                    text,
    instructions             jsonb,
    default_settings         jsonb,
    default_system_template  text,
    project                  text,
    metadata                 jsonb NOT NULL DEFAULT '{}',
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_by_developer ON agents (developer_id, created_at);

CREATE TABLE users (
    id            uuid PRIMARY KEY,
    developer_id  uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    name          text,
    about         text,
    project       text,
    metadata      jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_by_developer ON users (developer_id, created_at);

CREATE TABLE tools (
    id            uuid PRIMARY KEY,
    developer_id  uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    agent_id      uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name          text NOT NULL,
    type          text NOT NULL,
    description   text,
    spec          jsonb NOT NULL,                -- the whole tool definition as validated
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (agent_id, name)
);

CREATE TABLE tasks (
    id            uuid PRIMARY KEY,
    developer_id  uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    agent_id      uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name          text NOT NULL,
    version       integer NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_by_agent ON tasks (developer_id, agent_id, created_at);

-- Each update of a task is a new version; an execution keeps the version it started with.
CREATE TABLE task_versions (
    task_id     uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    version     integer NOT NULL,
    document    jsonb NOT NULL,
    dialect     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, version)
);

CREATE TABLE executions (
    id                    uuid PRIMARY KEY,
    developer_id          uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    task_id               uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    task_version          integer NOT NULL,
    status                text NOT NULL CHECK (status IN ('queued', 'starting', 'running', 'awaiting_input',
                                                          'succeeded', 'failed', 'cancelled')),
    input                 jsonb NOT NULL,
    output                jsonb,
    error                 text,
    metadata              jsonb NOT NULL DEFAULT '{}',
    last_seq              integer NOT NULL DEFAULT 0,
    last_transition_type  text,
    transition_count      integer NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX executions_by_task ON executions (developer_id, task_id, created_at);

CREATE TABLE transitions (
    id            uuid PRIMARY KEY,
    execution_id  uuid NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    developer_id  uuid NOT NULL,
    seq           integer NOT NULL,
    type          text NOT NULL CHECK (type IN ('init', 'init_branch', 'step', 'wait', 'resume', 'finish',
                                                'finish_branch', 'error', 'cancelled')),
    output        jsonb,
    current       jsonb NOT NULL,
    next          jsonb,
    step_label    text,
    metadata      jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (execution_id, seq)
);
