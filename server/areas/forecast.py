"""Forecast endpoint (interface 4.7, decisions rules 25-35): GET /forecast/{lat},{lon}."""

from __future__ import annotations

import math
import time
from functools import lru_cache
from typing import Mapping

from aiohttp import web

from server import params
from server.areas import forecast_blocks, forecast_data, forecast_text
from server.areas.forecast_blocks import BLOCKS, EXTENDED_HOURS, HOURLY_HOURS, Request
from server.areas.forecast_data import ForecastData
from server.areas.forecast_place import locate
from server.errors import ApiError, bad_request
from server.http import STORE, endpoint
from server.science import units as unit_systems

AREA = "forecast"
UNITS = ("us", "si", "ca", "uk", "auto")
MIN_MAX_AGE_S = 60
STALE_RETRY_S = 300
load = forecast_data.load


def parse(coordinates: str, query: Mapping[str, str]) -> Request:
    """The request as a frozen dataclass; its units are a system's name or "auto" (resolved
    by the handler: auto needs the point's country)."""
    lat, lon = params.coordinates(coordinates)
    units = params.choice(query, "units", "us", UNITS)
    lang = forecast_text.language(params.language(query, "lang"))
    extend = params.choice(query, "extend", "", ("hourly",))
    return Request(lat=lat, lon=lon, units=units, lang=lang,
                   hours=EXTENDED_HOURS if extend else HOURLY_HOURS,
                   blocks=_blocks(query.get("exclude")))


@lru_cache(maxsize=256)
def _blocks(exclude: str | None) -> frozenset[str]:
    """The blocks left when `exclude` (comma-separated names) are left out."""
    excluded = set()
    for name in (part.strip() for part in (exclude or "").split(",")):
        if name and name not in BLOCKS:
            raise bad_request("exclude", f"exclude takes blocks among {', '.join(BLOCKS)}, "
                                         f"got {params.show(name)}")
        excluded.add(name)
    return frozenset(b for b in BLOCKS if b not in excluded)


@endpoint(area=AREA, auth="key")
async def forecast(request: web.Request) -> web.Response:
    """GET /forecast/{lat},{lon}: currently, minutely, hourly, daily and alerts at a point."""
    query = parse(request.match_info["coordinates"], request.query)
    store = request.app[STORE]
    data: ForecastData = store.require(AREA).data
    now = time.time()
    if not data.covers(now):
        raise ApiError(503, "forecast data does not cover the present time (stale); a newer "
                            "version is expected", headers={"Retry-After": str(STALE_RETRY_S)})
    place = locate(query.lat, query.lon, store.area("geocoding").data)
    system = unit_systems.for_country(place.country) if query.units == "auto" \
        else unit_systems.SYSTEMS[query.units]
    body = forecast_blocks.respond(data, place, query, system, now)
    max_age = max(MIN_MAX_AGE_S, math.floor(data.next_version_s - now))
    return web.Response(body=body, content_type="application/json",
                        headers={"Cache-Control": f"public, max-age={max_age}"})


def routes() -> list[web.RouteDef]:
    """The area's route."""
    return [web.get("/forecast/{coordinates}", forecast)]
