-- Run once when the docker-compose Postgres is created: pgvector for Mint's document search.
CREATE EXTENSION IF NOT EXISTS vector;
