"""Read-only aiohttp server answering every endpoint from the published artifacts."""
