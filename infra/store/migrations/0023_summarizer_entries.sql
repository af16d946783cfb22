-- Adaptive context (issue 29): what compression writes is history too. A summarizer entry (source
-- 'summarizer': key entities, a summary, a trimmed message) names the entries it stands for in `replaces`
-- (they are marked `summarized`) and sits where the first of them sat: `at_seq` is that entry's order key.
-- A session's history is read in order (coalesce(at_seq, seq), seq).
ALTER TABLE entries ADD COLUMN replaces uuid[];
ALTER TABLE entries ADD COLUMN at_seq bigint;
