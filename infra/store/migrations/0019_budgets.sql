-- Budgets (issue 17 item 6) and restarts (item 7).
-- An execution's budget is fixed when it starts (the task's `budget`, else the developer's default) and its
-- spending is counted by the model call activity itself: it reserves a call before asking the model and
-- settles the call's tokens and cost after (budget_calls makes both idempotent across activity retries).
-- These counters are separate from prompt_tokens/completion_tokens/cost, which the transition writer sums
-- only when a batch is written (and a fan-out child's only when the child ends): too late to enforce.
ALTER TABLE executions
    ADD COLUMN budget          jsonb,
    ADD COLUMN spent_calls     integer NOT NULL DEFAULT 0,
    ADD COLUMN spent_tokens    bigint NOT NULL DEFAULT 0,
    ADD COLUMN spent_cost      double precision NOT NULL DEFAULT 0,
    ADD COLUMN restarted_from  uuid REFERENCES executions(id) ON DELETE SET NULL;

CREATE TABLE budget_calls (
    execution_id  uuid NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    call_key      text NOT NULL,   -- the activity's identity: the same across its retries
    settled       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (execution_id, call_key)
);

-- A session's budget covers all its chats: its model calls, tokens and cost so far.
ALTER TABLE sessions
    ADD COLUMN budget        jsonb,
    ADD COLUMN spent_calls   integer NOT NULL DEFAULT 0,
    ADD COLUMN spent_tokens  bigint NOT NULL DEFAULT 0,
    ADD COLUMN spent_cost    double precision NOT NULL DEFAULT 0;

-- Developer-level settings (GET/PUT /developer/settings): for now the default budget of executions and
-- sessions that set none.
CREATE TABLE developer_settings (
    developer_id    uuid PRIMARY KEY REFERENCES developers(id) ON DELETE CASCADE,
    default_budget  jsonb,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- budget_calls is the worker's alone (the tenant role has no grant on it).
GRANT SELECT, INSERT, UPDATE, DELETE ON developer_settings TO mint_tenant;
ALTER TABLE developer_settings ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON developer_settings TO mint_tenant
    USING (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid)
    WITH CHECK (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid);
