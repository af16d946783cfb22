-- Ids a client may choose (agents, users, tasks, sessions: `POST /agents/{id}` creates or updates) are unique
-- per developer, not globally. Otherwise creating with another tenant's id would have to fail, and that
-- failure would tell the caller the id exists. Keys become (developer_id, id), and every reference to
-- these rows names the developer too, so a row can only ever point at its own tenant's rows.
ALTER TABLE tools DROP CONSTRAINT tools_agent_id_fkey;
ALTER TABLE tools DROP CONSTRAINT tools_agent_id_name_key;
ALTER TABLE tasks DROP CONSTRAINT tasks_agent_id_fkey;
ALTER TABLE secrets DROP CONSTRAINT secrets_agent_id_fkey;
ALTER TABLE executions DROP CONSTRAINT executions_task_id_fkey;
ALTER TABLE task_versions DROP CONSTRAINT task_versions_task_id_fkey;
ALTER TABLE entries DROP CONSTRAINT entries_session_id_fkey;

ALTER TABLE agents DROP CONSTRAINT agents_pkey, ADD PRIMARY KEY (developer_id, id);
ALTER TABLE users DROP CONSTRAINT users_pkey, ADD PRIMARY KEY (developer_id, id);
ALTER TABLE tasks DROP CONSTRAINT tasks_pkey, ADD PRIMARY KEY (developer_id, id);
ALTER TABLE sessions DROP CONSTRAINT sessions_pkey, ADD PRIMARY KEY (developer_id, id);

ALTER TABLE tools
    ADD FOREIGN KEY (developer_id, agent_id) REFERENCES agents (developer_id, id) ON DELETE CASCADE,
    ADD UNIQUE (developer_id, agent_id, name);
ALTER TABLE tasks
    ADD FOREIGN KEY (developer_id, agent_id) REFERENCES agents (developer_id, id) ON DELETE CASCADE;
-- An agent's secret (agent_id set) must be an agent of the same developer; a developer's has no agent.
ALTER TABLE secrets
    ADD FOREIGN KEY (developer_id, agent_id) REFERENCES agents (developer_id, id) ON DELETE CASCADE;
DROP INDEX secrets_agent_names;
CREATE UNIQUE INDEX secrets_agent_names ON secrets (developer_id, agent_id, name) WHERE agent_id IS NOT NULL;
ALTER TABLE executions
    ADD FOREIGN KEY (developer_id, task_id) REFERENCES tasks (developer_id, id) ON DELETE CASCADE;

ALTER TABLE task_versions ADD COLUMN developer_id uuid;
UPDATE task_versions v SET developer_id = t.developer_id FROM tasks t WHERE t.id = v.task_id;
ALTER TABLE task_versions
    ALTER COLUMN developer_id SET NOT NULL,
    DROP CONSTRAINT task_versions_pkey,
    ADD PRIMARY KEY (developer_id, task_id, version),
    ADD FOREIGN KEY (developer_id, task_id) REFERENCES tasks (developer_id, id) ON DELETE CASCADE;

ALTER TABLE entries
    ADD FOREIGN KEY (developer_id, session_id) REFERENCES sessions (developer_id, id) ON DELETE CASCADE;
DROP INDEX entries_by_session;
CREATE INDEX entries_by_session ON entries (developer_id, session_id, seq);
