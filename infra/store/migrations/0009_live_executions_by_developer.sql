-- Counting a developer's executions in flight (MINT_MAX_EXECUTIONS_IN_FLIGHT) on every start stays cheap.
CREATE INDEX executions_in_flight ON executions (developer_id)
    WHERE status IN ('queued', 'starting', 'running', 'awaiting_input');
