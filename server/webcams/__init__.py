"""Webcams area: catalog, clusters, snapshots, images, tokens, the embeddable player."""

from server.area import Area, OpenApiPart
from server.webcams import handlers, openapi

AREA = Area(
    name=handlers.NAME,
    load=handlers.load,
    routes=handlers.routes,
    openapi=OpenApiPart(
        "webcams", "Webcam catalog, clusters, snapshots, player.", openapi.paths, openapi.SCHEMAS
    ),
    setup=handlers.setup,
)
