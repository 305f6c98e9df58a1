"""API keys, rate limits and the private files they live in."""
