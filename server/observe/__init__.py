"""Observability: request ids, Server-Timing, structured logs and the /metrics endpoint."""
