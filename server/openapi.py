"""The OpenAPI 3.1 document (placeholder until written in full)."""

from __future__ import annotations

from functools import lru_cache

import orjson


@lru_cache(maxsize=1)
def document_bytes() -> bytes:
    """The serialised document."""
    return orjson.dumps({"openapi": "3.1.0", "info": {"title": "Weather and Geodata API",
                                                      "version": "0.1.0"}, "paths": {}})
