"""Business logic that is more than one store call, between the API and the layers below (docs/layout.md)."""
