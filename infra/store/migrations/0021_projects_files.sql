-- Projects and files (issue 28 item 1), as Julep v1 serves them to an API-key caller.
--
-- A project groups a developer's agents, users and files under a canonical name, unique per developer
-- whatever its case (Julep's column is citext). Every developer has one named `default`, made with the
-- developer (the trigger below), as Julep's migration 39 makes it. A resource names its project by that
-- canonical name, as stored; the foreign keys keep it pointing at a project of the same developer.
CREATE TABLE projects (
    id              uuid PRIMARY KEY,
    developer_id    uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    canonical_name  text NOT NULL,
    name            text NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (developer_id, canonical_name)  -- what the resources' foreign keys refer to
);
CREATE UNIQUE INDEX projects_by_name ON projects (developer_id, lower(canonical_name));
CREATE INDEX projects_by_developer ON projects (developer_id, created_at);

CREATE FUNCTION mint_default_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO projects (id, developer_id, canonical_name, name, metadata)
    VALUES (gen_random_uuid(), NEW.id, 'default', 'Default Project',
            '{"is_default": true, "description": "Default project containing all existing resources"}');
    RETURN NEW;
END
$$;
CREATE TRIGGER developers_default_project AFTER INSERT ON developers
    FOR EACH ROW EXECUTE FUNCTION mint_default_project();

INSERT INTO projects (id, developer_id, canonical_name, name, metadata)
SELECT gen_random_uuid(), id, 'default', 'Default Project',
       '{"is_default": true, "description": "Default project containing all existing resources"}'
FROM developers;

-- Agents and users had a free-text `project` that nothing checked. Each name in use becomes a project of
-- that name (names differing only in case become one), and the rows name it as stored; rows without one go
-- into `default`, as Julep's migration put every existing agent and user there.
INSERT INTO projects (id, developer_id, canonical_name, name)
SELECT DISTINCT ON (developer_id, lower(project)) gen_random_uuid(), developer_id, project, left(project, 255)
FROM (SELECT developer_id, project FROM agents UNION SELECT developer_id, project FROM users) named
WHERE project <> '' AND lower(project) <> 'default'
ORDER BY developer_id, lower(project), project;

UPDATE agents a SET project = p.canonical_name
FROM projects p
WHERE p.developer_id = a.developer_id
  AND lower(p.canonical_name) = lower(COALESCE(NULLIF(a.project, ''), 'default'))
  AND a.project IS DISTINCT FROM p.canonical_name;
UPDATE users u SET project = p.canonical_name
FROM projects p
WHERE p.developer_id = u.developer_id
  AND lower(p.canonical_name) = lower(COALESCE(NULLIF(u.project, ''), 'default'))
  AND u.project IS DISTINCT FROM p.canonical_name;

ALTER TABLE agents ADD CONSTRAINT agents_project FOREIGN KEY (developer_id, project)
    REFERENCES projects (developer_id, canonical_name) ON UPDATE CASCADE;
ALTER TABLE users ADD CONSTRAINT users_project FOREIGN KEY (developer_id, project)
    REFERENCES projects (developer_id, canonical_name) ON UPDATE CASCADE;

-- Files: the bytes themselves (Julep kept them in blob storage, keyed by the file's id), with their size
-- and sha256 (hex). Reads that list files select the other columns, so the content (TOASTed, out of line)
-- is read only where it is answered.
CREATE TABLE files (
    id            uuid PRIMARY KEY,
    developer_id  uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    name          text NOT NULL,
    description   text NOT NULL DEFAULT '',
    mime_type     text,
    project       text NOT NULL,
    size          bigint NOT NULL CHECK (size > 0),
    hash          text NOT NULL,
    content       bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (developer_id, project) REFERENCES projects (developer_id, canonical_name) ON UPDATE CASCADE
);
CREATE INDEX files_by_developer ON files (developer_id, created_at);

-- Row-level security, as migration 0012 gives every tenant table.
GRANT SELECT, INSERT, UPDATE, DELETE ON projects, files TO mint_tenant;
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['projects', 'files']
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
