"""Forecast area: the Dark-Sky-style forecast of a point."""

from server.area import Area, OpenApiPart
from server.forecast import handlers, openapi

AREA = Area(
    name=handlers.NAME,
    load=handlers.load,
    routes=handlers.routes,
    openapi=OpenApiPart(
        "forecast", "Weather forecast. Key required.", openapi.paths, openapi.SCHEMAS
    ),
)
