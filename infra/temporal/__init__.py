"""Temporal plumbing: the client connection, the data converter (claim check, encryption), which errors are
retried, and the reconciler."""
