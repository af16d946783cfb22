"""The records the store answers and services and routes pass around: frozen, typed, and read from their rows
only in infra/store/ (a route may name them: they are data, not the store)."""
