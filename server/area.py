"""What one endpoint area gives the application: a loader, routes and an OpenAPI part."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from aiohttp import web


@dataclass(frozen=True)
class OpenApiPart:
    """An area's share of the OpenAPI document: its tag, operations and component schemas."""

    tag: str
    description: str
    paths: Callable[[], dict]
    schemas: dict


@dataclass(frozen=True)
class Area:
    """One endpoint area as the application wires it (server.areas.AREAS lists them)."""

    name: str                                   # the area's name in the manifest
    load: Callable[[Path, dict], Any]           # (version dir, manifest entry) -> loaded data
    routes: Callable[[], list[web.RouteDef]]
    openapi: OpenApiPart
    setup: Callable[[web.Application], None] | None = None    # before the routes are added
