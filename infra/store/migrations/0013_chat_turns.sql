-- One chat at a time per session, without holding a database connection for the length of a chat: a chat
-- takes the session's turn as a row with an expiry (a lease), renews it while it runs, and deletes it when it
-- ends. A chat whose API process died leaves a row that simply expires. (An advisory lock, held on a pooled
-- connection for a whole chat, let 20 slow chats pin every connection of the pool; see mint/chat_turns.py.)
CREATE TABLE chat_turns (
    developer_id uuid NOT NULL,
    session_id   uuid NOT NULL,
    holder       uuid NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (developer_id, session_id),
    FOREIGN KEY (developer_id, session_id) REFERENCES sessions (developer_id, id) ON DELETE CASCADE
);

GRANT SELECT, INSERT, UPDATE, DELETE ON chat_turns TO mint_tenant;
ALTER TABLE chat_turns ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON chat_turns TO mint_tenant
    USING (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid)
    WITH CHECK (developer_id = NULLIF(current_setting('mint.developer_id', true), '')::uuid);
