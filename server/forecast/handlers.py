"""Forecast endpoint (docs/api/forecast.md): GET /forecast/{lat},{lon}."""

from __future__ import annotations

import math
from functools import lru_cache

from aiohttp import web
from multidict import MultiMapping

from contract import Forecast as F
from server.forecast import blocks as forecast_blocks
from server.forecast import data as forecast_data
from server.forecast import text
from server.forecast.blocks import BLOCKS, EXTENDED_HOURS, HOURLY_HOURS, Request
from server.forecast.data import ForecastData
from server.forecast.place import locate
from server.forecast.science import units as unit_systems
from server.http import params
from server.http.errors import ApiError, bad_request
from server.http.middleware import NOW, STORE, endpoint

NAME = F.AREA
UNITS = ("us", "si", "ca", "uk", "auto")
PERIOD_S = 60
STALE_RETRY_S = 300
PARAMETERS = frozenset({"units", "lang", "extend"})  # exclude is a list: it may repeat
load = forecast_data.load


def parse(coordinates: str, query: MultiMapping[str]) -> Request:
    """The request as a frozen dataclass; its units are a system's name or "auto" (resolved
    by the handler: auto needs the point's country)."""
    params.once(query, PARAMETERS)
    lat, lon = params.coordinates(coordinates)
    units = params.choice(query, "units", "us", UNITS)
    lang = text.language(params.language(query, "lang"))
    extend = params.choice(query, "extend", "", ("hourly",))
    # exclude=a,b and exclude=a&exclude=b (OpenAPI's form style, exploded or not) mean the
    # same; an empty value is an empty list (how form style writes one).
    exclude = ",".join(v for v in query.getall("exclude", ()) if v)
    return Request(
        lat=lat,
        lon=lon,
        units=units,
        lang=lang,
        hours=EXTENDED_HOURS if extend else HOURLY_HOURS,
        blocks=_blocks(exclude),
    )


@lru_cache(maxsize=256)
def _blocks(exclude: str) -> frozenset[str]:
    """The blocks left when `exclude` (comma-separated names) are left out."""
    excluded = set()
    for name in exclude.split(",") if exclude else ():
        if name not in BLOCKS:
            raise bad_request(
                "exclude",
                f"exclude takes blocks among {', '.join(BLOCKS)}, "
                f"got {params.show(name) if name else 'an empty name'}",
            )
        excluded.add(name)
    return frozenset(b for b in BLOCKS if b not in excluded)


# The answer changes every minute (minutely starts at the current one; currently is
# interpolated to now): the ETag names the minute and the answer is cached at most to its end.
# The gazetteer (elevation, units=auto) shapes it too.
@endpoint(area=NAME, auth="key", period_s=PERIOD_S, also=("geocoding",))
async def forecast(request: web.Request) -> web.Response:
    """GET /forecast/{lat},{lon}: currently, minutely, hourly, daily and alerts at a point."""
    query = parse(request.match_info["coordinates"], request.query)
    store = request.app[STORE]
    data: ForecastData = store.require(NAME).data
    if not data.grid.contains(query.lat, query.lon):
        # A regional model has no weather beyond its edge: its edge values would be a
        # silent answer about another place (a 400: asking again will not help).
        raise bad_request(
            "coordinates",
            f"{query.lat},{query.lon} is outside the forecast model's domain ({data.domain})",
        )
    now = request[NOW]  # the middleware's clock: the minute the ETag names
    if not data.covers(now):
        raise ApiError(
            503,
            "forecast data does not cover the present time (stale); a newer version is expected",
            headers={"Retry-After": str(STALE_RETRY_S)},
        )
    auto = query.units == "auto"
    place = locate(query.lat, query.lon, store.area("geocoding").data, with_country=auto)
    system = unit_systems.for_country(place.country) if auto else unit_systems.SYSTEMS[query.units]
    body = forecast_blocks.respond(data, place, query, system, now)
    return web.Response(
        body=body,
        content_type="application/json",
        headers={"Cache-Control": f"public, max-age={max_age(data, now)}"},
    )


def max_age(data: ForecastData, now: float) -> int:
    """Seconds the answer stays right: to the end of the minute, or sooner when the next
    data version is expected before then (an overdue one does not shorten it further)."""
    left = math.ceil(PERIOD_S - now % PERIOD_S)
    coming = math.floor(data.next_version_s - now)
    return max(1, min(left, coming) if coming > 0 else left)


def routes() -> list[web.RouteDef]:
    """The area's route."""
    return [web.get("/forecast/{coordinates}", forecast)]
