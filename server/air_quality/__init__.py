"""Air-quality area: CAMS Europe and global point answers."""

from server.air_quality import handlers, openapi
from server.area import Area, OpenApiPart

AREA = Area(
    name=handlers.NAME,
    load=handlers.load,
    routes=handlers.routes,
    openapi=OpenApiPart(
        "air quality", "CAMS-based air quality. Key required.", openapi.paths, openapi.SCHEMAS
    ),
)
