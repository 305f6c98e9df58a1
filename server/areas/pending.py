"""Areas whose pipeline is not built yet: their endpoints exist, check the key, and answer 503
(decisions rule 8: an area with no artifacts answers 503 while the others keep working)."""

from __future__ import annotations

from aiohttp import web

from server.http import STORE, endpoint


def _unavailable(area: str, auth: str):
    @endpoint(area=area, auth=auth)
    async def handler(request: web.Request) -> web.Response:
        request.app[STORE].require(area)
        raise web.HTTPNotFound()  # unreachable until the area has a loader
    handler.__name__ = f"{area}_unavailable"
    return handler


def routes() -> list[web.RouteDef]:
    """Routes of the forecast area."""
    return [web.get("/forecast/{coordinates}", _unavailable("forecast", "key"))]
