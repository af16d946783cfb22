"""Model clients: chat models through the OpenAI and Anthropic SDKs (used by the worker's activities and by
the API's session chat alike), their recordings, and text embeddings."""
