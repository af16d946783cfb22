"""Mint: a durable workflow engine for AI agents."""
