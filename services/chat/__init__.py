"""Chat: a session's agents answer in turn, with recalled docs, the session's history and tools."""
