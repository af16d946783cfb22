-- A session's settings of Mint's own (issue 17): `{pass_by_reference, reference_threshold}` for its chats'
-- tool loops (workflows/references.py); NULL for a session without any.
ALTER TABLE sessions ADD COLUMN settings jsonb;
