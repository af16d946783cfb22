-- Listing a developer's executions across tasks, newest first (GET /executions, `mint ls`), reads an index
-- instead of sorting all of them.
CREATE INDEX executions_by_developer ON executions (developer_id, created_at, id);
