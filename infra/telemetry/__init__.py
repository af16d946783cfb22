"""What a Mint process tells its operator: logs (plain or JSON lines) and Prometheus metrics, its own and the
Temporal SDK's."""
