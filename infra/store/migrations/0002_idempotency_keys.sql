-- POST /tasks/{id}/executions with an Idempotency-Key header returns the same execution for the same key.
ALTER TABLE executions ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX executions_idempotency ON executions (developer_id, task_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
