-- When the reconciler last compared a live execution with its Temporal workflow.
ALTER TABLE executions ADD COLUMN reconciled_at timestamptz;
CREATE INDEX executions_live ON executions (reconciled_at NULLS FIRST)
    WHERE status IN ('queued', 'starting', 'running', 'awaiting_input');
