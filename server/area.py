"""What one endpoint area gives the application: a loader, routes and an OpenAPI part."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from aiohttp import web

import contract

DataT = TypeVar("DataT", covariant=True)
# (version dir, manifest entry) -> the area's loaded data, what its handlers read from the store
Loader = Callable[[Path, contract.AreaEntry], DataT]


@dataclass(frozen=True)
class OpenApiPart:
    """An area's share of the OpenAPI document: its tag, operations and component schemas."""

    tag: str
    description: str
    paths: Callable[[], dict[str, Any]]
    schemas: dict[str, Any]


@dataclass(frozen=True)
class Area(Generic[DataT]):
    """One endpoint area as the application wires it (server.areas.AREAS lists them); DataT is
    the type of its loaded data (Area[ForecastData]), a type only: no cost at run time."""

    name: str  # the area's name in the manifest
    load: Loader[DataT]  # (version dir, manifest entry) -> loaded data
    routes: Callable[[], list[web.RouteDef]]
    openapi: OpenApiPart
    setup: Callable[[web.Application], None] | None = None  # before the routes are added
