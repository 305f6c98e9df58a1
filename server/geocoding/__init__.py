"""Geocoding area: search, lookup by id, reverse geocoding, countries."""

from server.area import Area, OpenApiPart
from server.geocoding import handlers, openapi

AREA = Area(
    name=handlers.NAME,
    load=handlers.load,
    routes=handlers.routes,
    openapi=OpenApiPart(
        "geocoding",
        "Search, lookup, reverse geocoding, countries. No key needed.",
        openapi.paths,
        openapi.SCHEMAS,
    ),
)
