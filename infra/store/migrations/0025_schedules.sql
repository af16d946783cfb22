-- Schedules: a task run on a cron or an interval. Temporal holds each schedule itself (id `schedule-<id>`,
-- on the Temporal UI's Schedules page); this row is what the API lists and checks tenancy on, and what each
-- firing reads (the task version, the input). Deleting a task deletes its rows; a firing that finds no row
-- deletes its Temporal schedule (services/schedules/firing.py).
CREATE TABLE schedules (
    id              uuid PRIMARY KEY,
    developer_id    uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    task_id         uuid NOT NULL,
    task_version    integer,             -- the version each run runs; NULL: the task's latest
    cron            text,                -- a cron expression, or
    timezone        text,                -- (the cron's; NULL is UTC)
    every           text,                -- an interval such as `30s`
    input           jsonb,
    overlap         text NOT NULL DEFAULT 'skip',
    catchup_window  text,
    paused          boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((cron IS NULL) <> (every IS NULL)),
    FOREIGN KEY (developer_id, task_id) REFERENCES tasks (developer_id, id) ON DELETE CASCADE
);
CREATE INDEX schedules_by_task ON schedules (developer_id, task_id, created_at);

-- Row-level security, as migration 0012 gives every tenant table.
GRANT SELECT, INSERT, UPDATE, DELETE ON schedules TO mint_tenant;
ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON schedules TO mint_tenant
    USING (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid)
    WITH CHECK (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid);
