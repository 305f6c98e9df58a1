"""The OpenAPI 3.1 document: shared parts here, each area's own in its package."""
