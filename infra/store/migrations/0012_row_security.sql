-- Row-level security: the data-layer guard behind every API query. The API runs each request's queries as
-- the role mint_tenant with `mint.developer_id` set to the caller (mint/tenancy.py), and these policies
-- show that role only the caller's rows, whatever a query forgets to filter. The worker, the reconciler
-- and the CLI act for every tenant; they run as the owner of the tables, which policies do not bind.
DO $$
BEGIN
    CREATE ROLE mint_tenant NOLOGIN;
EXCEPTION WHEN duplicate_object THEN
    NULL;  -- another database in this cluster made it first (roles are cluster-wide)
END
$$;
GRANT mint_tenant TO CURRENT_USER;  -- so that Mint's own user may SET ROLE to it

GRANT SELECT, INSERT, UPDATE, DELETE ON
    agents, users, tools, tasks, task_versions, executions, transitions, docs, doc_chunks, sessions, entries,
    secrets
    TO mint_tenant;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO mint_tenant;
-- Claim-checked payloads are addressed by the hash of their content: the API's Temporal client reads and
-- writes them while acting for a tenant.
GRANT SELECT, INSERT ON blobs TO mint_tenant;

DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['agents', 'users', 'tools', 'tasks', 'task_versions', 'executions',
                                'transitions', 'docs', 'doc_chunks', 'sessions', 'entries', 'secrets']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', name);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON %I TO mint_tenant '
            'USING (developer_id = NULLIF(current_setting(''mint.developer_id'', true), '''')::uuid) '
            'WITH CHECK (developer_id = NULLIF(current_setting(''mint.developer_id'', true), '''')::uuid)',
            name
        );
    END LOOP;
END
$$;
