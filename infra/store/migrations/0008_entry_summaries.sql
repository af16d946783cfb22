-- Adaptive context: entries folded into the session's summary stay in the history but leave the context.
ALTER TABLE entries ADD COLUMN summarized boolean NOT NULL DEFAULT false;
