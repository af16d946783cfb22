-- Sessions (conversations between agents and users) and their history entries, with token counts.
CREATE TABLE sessions (
    id                  uuid PRIMARY KEY,
    developer_id        uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    agents              jsonb NOT NULL,
    users               jsonb NOT NULL DEFAULT '[]',
    situation           text,
    system_template     text,
    token_budget        integer,
    context_overflow    text CHECK (context_overflow IN ('truncate', 'adaptive')),
    render_templates    boolean NOT NULL DEFAULT true,
    recall_options      jsonb,
    auto_run_tools      boolean NOT NULL DEFAULT false,
    forward_tool_calls  boolean NOT NULL DEFAULT false,
    summary             text,
    metadata            jsonb NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_by_developer ON sessions (developer_id, created_at);

CREATE TABLE entries (
    id            uuid PRIMARY KEY,
    session_id    uuid NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    developer_id  uuid NOT NULL,
    seq           bigserial,
    role          text NOT NULL,
    name          text,
    content       jsonb,
    tool_calls    jsonb,
    tool_call_id  text,
    token_count   integer NOT NULL,
    source        text NOT NULL,
    model         text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entries_by_session ON entries (session_id, seq);
