"""Forecast endpoint (interface 4.7, decisions rules 25-35): GET /forecast/{lat},{lon}."""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping

import orjson
from aiohttp import web

from server import params
from server.areas import forecast_data, forecast_text
from server.areas.forecast_blocks import (EXTENDED_HOURS, HOURLY_HOURS, Forecast, Request,
                                          now_utc)
from server.areas.forecast_data import ForecastData
from server.areas.forecast_place import locate
from server.errors import ApiError, bad_request
from server.http import STORE, endpoint
from server.science import units as unit_systems

AREA = "forecast"
BLOCKS = ("currently", "minutely", "hourly", "daily", "alerts")
UNITS = ("us", "si", "ca", "uk", "auto")
MIN_MAX_AGE_S = 60
STALE_RETRY_S = 300
load = forecast_data.load


def parse(coordinates: str, query: Mapping[str, str]) -> tuple[Request, str]:
    """The request as a frozen dataclass, plus the units asked for (the request holds si until
    the handler resolves them: auto needs the point's country)."""
    lat, lon = params.coordinates(coordinates)
    units = params.choice(query, "units", "us", UNITS)
    lang = forecast_text.language(params.language(query, "lang"))
    extend = params.choice(query, "extend", "", ("hourly",))
    excluded = set()
    raw = query.get("exclude")
    if raw is not None:
        for name in (part.strip() for part in raw.split(",")):
            if name and name not in BLOCKS:
                raise bad_request("exclude", f"exclude takes blocks among {', '.join(BLOCKS)}, "
                                             f"got {params.show(name)}")
            excluded.add(name)
    request = Request(lat=lat, lon=lon, units=unit_systems.SYSTEMS["si"], lang=lang,
                      hours=EXTENDED_HOURS if extend else HOURLY_HOURS,
                      blocks=frozenset(b for b in BLOCKS if b not in excluded))
    return request, units


@endpoint(area=AREA, auth="key")
async def forecast(request: web.Request) -> web.Response:
    """GET /forecast/{lat},{lon}: currently, minutely, hourly, daily and alerts at a point."""
    query, units = parse(request.match_info["coordinates"], request.query)
    store = request.app[STORE]
    data: ForecastData = store.require(AREA).data
    now = now_utc()
    if not data.covers(now):
        raise ApiError(503, "forecast data does not cover the present time (stale); a newer "
                            "version is expected", headers={"Retry-After": str(STALE_RETRY_S)})
    gazetteer = store.area("geocoding").data
    place = locate(query.lat, query.lon, gazetteer)
    system = unit_systems.for_country(place.country) if units == "auto" \
        else unit_systems.SYSTEMS[units]
    query = dataclasses.replace(query, units=system)
    body = Forecast(data, place, query, now).body()
    max_age = max(MIN_MAX_AGE_S, math.floor(data.next_version_s - now))
    return web.Response(body=orjson.dumps(body), content_type="application/json",
                        headers={"Cache-Control": f"public, max-age={max_age}"})


def routes() -> list[web.RouteDef]:
    """The area's route."""
    return [web.get("/forecast/{coordinates}", forecast)]

