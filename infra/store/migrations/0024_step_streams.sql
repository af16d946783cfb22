-- Live text of prompt steps that stream (`stream: true`): one row per model call while it runs, holding the
-- text so far (infra/store/step_streams.py). The worker upserts it at most every few tens of ms and notifies
-- `mint_executions` with the execution's id in the same statement, so the transition stream of the execution
-- (services/executions/feeds.py) wakes and sends the new text as a delta. `run` changes with each attempt
-- (a crashed call run again), so readers start the new text from its start; `done` rows are the ends of calls
-- whose answers are in transitions now: readers send what they had not sent yet and nothing to newcomers.
CREATE TABLE step_streams (
    execution_id  uuid NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
    call_key      text NOT NULL,
    step          text NOT NULL,
    run           uuid NOT NULL,
    attempt       integer NOT NULL,
    text          text NOT NULL,
    done          boolean NOT NULL DEFAULT false,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (execution_id, call_key)
);

-- What the sweep of finished and abandoned rows reads.
CREATE INDEX step_streams_by_age ON step_streams (updated_at);

-- Streams read as their developer (migration 0012): a row shows through its execution, which row security
-- shows only to its own developer. Only the worker (the owner's role) writes.
GRANT SELECT ON step_streams TO mint_tenant;
ALTER TABLE step_streams ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON step_streams TO mint_tenant
    USING (EXISTS (SELECT 1 FROM executions e WHERE e.id = step_streams.execution_id));
