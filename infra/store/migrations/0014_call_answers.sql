-- The answers of call steps that ran in the worker (local activities, activities/worker_calls.py). Temporal
-- records a local activity's result only when the workflow task it ran in completes, and a chain of fast
-- calls runs in one workflow task, so a worker lost mid-chain would make every call since that task's start
-- again. Each answer is recorded here (with the next call, or the next transition write) and looked up before
-- a call runs: a call that already answered is not made again. Rows go when their execution ends.
CREATE TABLE call_answers (
    execution_id uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    call_id      uuid NOT NULL,
    developer_id uuid NOT NULL,
    answer       jsonb NOT NULL,
    PRIMARY KEY (execution_id, call_id)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON call_answers TO mint_tenant;
ALTER TABLE call_answers ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON call_answers TO mint_tenant
    USING (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid)
    WITH CHECK (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid);
