-- Embeddings of more than one size (issue 28): Julep's are 1024-dimensional, Mint's offline default 384, and
-- a developer may choose another model (PUT /developer/settings). The column takes any size; `dimensions`
-- says each chunk's, and one partial HNSW index per supported size serves the chunks of that size (pgvector
-- indexes a fixed size only: the query casts to the same vector(n) and filters on the same `dimensions`).
-- mint.store.docs.SUPPORTED_DIMENSIONS lists the sizes; a size added there needs its index added here.
DROP INDEX doc_chunks_embedding;
ALTER TABLE doc_chunks ALTER COLUMN embedding TYPE vector;
ALTER TABLE doc_chunks ADD COLUMN dimensions smallint;
UPDATE doc_chunks SET dimensions = 384 WHERE embedding IS NOT NULL;
ALTER TABLE doc_chunks ADD CONSTRAINT doc_chunks_dimensions_known
    CHECK ((embedding IS NULL AND dimensions IS NULL) OR dimensions = vector_dims(embedding));

CREATE INDEX doc_chunks_embedding_384 ON doc_chunks USING hnsw ((embedding::vector(384)) vector_cosine_ops)
    WITH (m = 16, ef_construction = 64) WHERE dimensions = 384;
CREATE INDEX doc_chunks_embedding_768 ON doc_chunks USING hnsw ((embedding::vector(768)) vector_cosine_ops)
    WITH (m = 16, ef_construction = 64) WHERE dimensions = 768;
CREATE INDEX doc_chunks_embedding_1024 ON doc_chunks USING hnsw ((embedding::vector(1024)) vector_cosine_ops)
    WITH (m = 16, ef_construction = 64) WHERE dimensions = 1024;
CREATE INDEX doc_chunks_embedding_1536 ON doc_chunks USING hnsw ((embedding::vector(1536)) vector_cosine_ops)
    WITH (m = 16, ef_construction = 64) WHERE dimensions = 1536;

-- The developer's embedding model (null: the server's MINT_EMBEDDING_MODEL) and its size.
ALTER TABLE developer_settings
    ADD COLUMN embedding_model       text,
    ADD COLUMN embedding_dimensions  integer;
