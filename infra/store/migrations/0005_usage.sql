-- Model usage summed per execution by the transition writer (from each transition's metadata.usage/cost).
ALTER TABLE executions
    ADD COLUMN prompt_tokens      bigint NOT NULL DEFAULT 0,
    ADD COLUMN completion_tokens  bigint NOT NULL DEFAULT 0,
    ADD COLUMN cost               double precision NOT NULL DEFAULT 0;
