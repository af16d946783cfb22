-- Docs (text snippets owned by an agent or a user) and their chunks, searched by Postgres full-text search
-- and by pgvector (cosine distance over an HNSW index). Every embedding has 384 dimensions: the local
-- all-MiniLM-L6-v2, or OpenAI's text-embedding-3 models asked for 384.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE docs (
    id                    uuid PRIMARY KEY,
    developer_id          uuid NOT NULL REFERENCES developers(id) ON DELETE CASCADE,
    owner_type            text NOT NULL CHECK (owner_type IN ('agent', 'user')),
    owner_id              uuid NOT NULL,
    title                 text NOT NULL,
    content               jsonb NOT NULL,
    metadata              jsonb NOT NULL DEFAULT '{}',
    embed_instruction     text,
    embedding_model       text,
    embedding_dimensions  integer,
    status                text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'indexed', 'failed')),
    error                 text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX docs_by_owner ON docs (developer_id, owner_type, owner_id, created_at);
CREATE INDEX docs_by_metadata ON docs USING gin (metadata jsonb_path_ops);

CREATE TABLE doc_chunks (
    doc_id        uuid NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
    idx           integer NOT NULL,
    developer_id  uuid NOT NULL,
    owner_type    text NOT NULL,
    owner_id      uuid NOT NULL,
    content       text NOT NULL,
    search_text   tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    embedding     vector(384),
    PRIMARY KEY (doc_id, idx)
);
CREATE INDEX doc_chunks_by_owner ON doc_chunks (developer_id, owner_type, owner_id);
CREATE INDEX doc_chunks_text ON doc_chunks USING gin (search_text);
-- m = 16, ef_construction = 64 (pgvector's defaults): recall@10 above 0.95 at ef_search 100 on 100k chunks
-- (bench/docs.py); queries raise ef_search and use iterative scans so filtered searches still fill `limit`.
CREATE INDEX doc_chunks_embedding ON doc_chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
