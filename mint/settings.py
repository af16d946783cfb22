"""Settings from the environment (the names are a contract: see DESIGN.md 1.1)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Settings:
    api_port: int = 8080
    api_host: str = "127.0.0.1"
    api_key: str | None = None
    database_url: str | None = None
    temporal_address: str | None = None
    temporal_namespace: str = "default"
    temporal_api_key: str | None = None
    egress_allow: tuple[str, ...] = field(default_factory=tuple)
    task_queue: str = "mint-tasks"
    # Executions continue as new past this many Temporal history events (Temporal stops at 51,200).
    max_history_events: int = 10_000
    # Temporal payloads larger than this are stored in Postgres and travel as references (claim check).
    claim_check_bytes: int = 64 * 1024
    # The reconciler: how often it runs, and how long an execution must be quiet before it is checked.
    reconcile_interval: float = 30.0
    reconcile_quiet: float = 120.0

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            api_port=int(env.get("MINT_API_PORT", "8080")),
            api_host=env.get("MINT_API_HOST", "127.0.0.1"),
            api_key=env.get("MINT_API_KEY") or None,
            database_url=env.get("MINT_DATABASE_URL") or None,
            temporal_address=env.get("TEMPORAL_ADDRESS") or None,
            temporal_namespace=env.get("TEMPORAL_NAMESPACE", "default"),
            temporal_api_key=env.get("TEMPORAL_API_KEY") or None,
            egress_allow=tuple(h.strip() for h in env.get("MINT_EGRESS_ALLOW", "").split(",") if h.strip()),
            task_queue=env.get("MINT_TASK_QUEUE", "mint-tasks"),
            max_history_events=int(env.get("MINT_MAX_HISTORY_EVENTS", "10000")),
            claim_check_bytes=int(env.get("MINT_CLAIM_CHECK_BYTES", str(64 * 1024))),
            reconcile_interval=float(env.get("MINT_RECONCILE_INTERVAL", "30")),
            reconcile_quiet=float(env.get("MINT_RECONCILE_QUIET", "120")),
        )
