"""Geocoding endpoints (docs/api/geocoding.md): search, lookup by id, reverse, countries."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import orjson
from aiohttp import web

from contract import AreaEntry
from contract import Geocoding as G
from server.geocoding.index import GeocodingIndex
from server.geocoding.search import TyposNeeded, query_parts, search
from server.http import params
from server.http.errors import ApiError, bad_request
from server.http.middleware import STORE, endpoint

NAME = G.AREA
ID = re.compile(G.PUBLIC_ID)
COUNTRY = re.compile(r"[A-Za-z]{2}")
MAX_AGE_S = 3600
COUNTRIES_MAX_AGE_S = 86400
LOOKUP_PARAMETERS = frozenset({"q", "id", "language", "country", "field", "limit"})
REVERSE_PARAMETERS = frozenset({"lat", "lon", "language", "limit"})


def load(version_dir: Path, entry: AreaEntry) -> GeocodingIndex:
    """Loader for the store: map the area's indexes."""
    return GeocodingIndex(version_dir)


@dataclass(frozen=True)
class SearchQuery:
    text: str
    field_all: bool
    country: str | None
    limit: int
    languages: tuple[str, ...]


@dataclass(frozen=True)
class IdQuery:
    place_id: str
    languages: tuple[str, ...]


@dataclass(frozen=True)
class ReverseQuery:
    lat: float
    lon: float
    limit: int
    languages: tuple[str, ...]


def parse_lookup(query: Mapping[str, str]) -> SearchQuery | IdQuery:
    """Either a search (q) or a lookup by id, never both
    (docs/api/geocoding.md#search-or-lookup)."""
    params.once(query, LOOKUP_PARAMETERS)
    has_q, has_id = "q" in query, "id" in query
    if has_q and has_id:
        raise ApiError(
            400,
            "give either q (search) or id (lookup), not both",
            errors=[
                {"parameter": "q", "message": "not allowed together with id"},
                {"parameter": "id", "message": "not allowed together with q"},
            ],
        )
    if not has_q and not has_id:
        raise ApiError(
            400,
            "q (search text) or id (location id) is required",
            errors=[{"parameter": "q", "message": "q or id is required"}],
        )
    languages = params.language(query)
    # Every parameter is validated, even those an id lookup does not use
    # (docs/api/conventions.md#validation).
    country = query.get("country")
    if country is not None and not COUNTRY.fullmatch(country):
        raise bad_request(
            "country",
            f"country must be an ISO 3166-1 alpha-2 code such as CH, got {params.show(country)}",
        )
    field_all = params.choice(query, "field", "name", ("name", "all")) == "all"
    limit = params.integer(query, "limit", 10, 1, 50)
    if has_id:
        place_id = query["id"]
        if not ID.fullmatch(place_id):
            raise bad_request(
                "id",
                "id must be a location id (GeoNames digits, or icao: and an "
                f"ICAO code), got {params.show(query['id'])}",
            )
        return IdQuery(place_id, languages)
    text = params.free_text(query["q"], "q")
    if len(text) < 2 or len(text) > 200:
        raise bad_request("q", f"q must be 2 to 200 characters after trimming, got {len(text)}")
    # "a." or "a," is two characters but a one-letter search: a list of every place in "a".
    # With a context it names a place (Å, Norway; Y, Somme).
    parts = query_parts(text)
    if not parts or (len(parts) == 1 and len(parts[0]) < 2):
        raise bad_request(
            "q", f"q must name a place with at least 2 letters or digits, got {params.show(text)}"
        )
    return SearchQuery(
        text=text,
        field_all=field_all,
        country=country.upper() if country else None,
        limit=limit,
        languages=languages,
    )


def parse_reverse(query: Mapping[str, str]) -> ReverseQuery:
    """lat and lon required and in range; limit 1 to 50."""
    params.once(query, REVERSE_PARAMETERS)
    lat, lon = params.latlon(query)
    return ReverseQuery(lat, lon, params.integer(query, "limit", 1, 1, 50), params.language(query))


def _json(body: object) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def _raw_json(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json")


def _results(items: list[bytes]) -> bytes:
    return b'{"results":[%b],"count":%d}' % (b",".join(items), len(items))


def _default_language(languages: tuple[str, ...]) -> bool:
    """True when the pipeline's pre-rendered JSON answers (no other language asked for)."""
    return languages == (G.DEFAULT_LANGUAGE,)


@endpoint(area=NAME, auth="optional", max_age=MAX_AGE_S)
async def lookup(request: web.Request) -> web.Response:
    """GET /geocoding/lookup: search by q, or one location by id."""
    query = parse_lookup(request.query)
    if isinstance(query, SearchQuery) and "%" in query.text:  # rare: checked only then
        params.percent_escapes(request.rel_url.raw_query_string, "q")
    index: GeocodingIndex = request.app[STORE].require(NAME).data
    if isinstance(query, IdQuery):
        row = index.find_id(query.place_id)
        if row is None:
            raise ApiError(404, f"no location with id {query.place_id}")
        if _default_language(query.languages):
            return _raw_json(index.location_json(row, detail=True))
        return _json(index.location(row, query.languages, detail=True))
    if query.country and index.country_index(query.country) < 0:
        raise bad_request("country", f"country {query.country} is not a known country code")
    find = partial(
        search,
        index,
        query.text,
        field_all=query.field_all,
        country=query.country,
        limit=query.limit,
    )
    try:
        # On the event loop: most searches take 0.05-1 ms, less than a hand-off to a thread
        # and back costs under load (the thread then waits for the GIL behind the loop). A
        # long typo pass is made in a thread, so that it does not hold up other requests.
        rows = find(bounded=True)
    except TyposNeeded:
        rows = await asyncio.get_running_loop().run_in_executor(None, find)
    if _default_language(query.languages):
        return _raw_json(_results([index.location_json(r, detail=False) for r in rows]))
    results = [index.location(r, query.languages, detail=False) for r in rows]
    return _json({"results": results, "count": len(results)})


@endpoint(area=NAME, auth="optional", max_age=MAX_AGE_S)
async def reverse(request: web.Request) -> web.Response:
    """GET /geocoding/reverse: the nearest places by great-circle distance."""
    query = parse_reverse(request.query)
    index: GeocodingIndex = request.app[STORE].require(NAME).data
    nearest = index.nearest(query.lat, query.lon, query.limit)
    if _default_language(query.languages):
        return _raw_json(
            _results(
                [
                    index.location_json(row, detail=True)[:-1]
                    + b',"distance_km":%b}' % orjson.dumps(round(distance, 3))
                    for row, distance in nearest
                ]
            )
        )
    results = []
    for row, distance in nearest:
        item = index.location(row, query.languages, detail=True)
        item["distance_km"] = round(distance, 3)
        results.append(item)
    return _json({"results": results, "count": len(results)})


@endpoint(area=NAME, auth="optional", max_age=COUNTRIES_MAX_AGE_S)
async def countries(request: web.Request) -> web.Response:
    """GET /geocoding/countries: every country, sorted by English name."""
    index: GeocodingIndex = request.app[STORE].require(NAME).data
    return web.Response(body=index.countries_body, content_type="application/json")


@endpoint(area=NAME, auth="optional", max_age=COUNTRIES_MAX_AGE_S)
async def country(request: web.Request) -> web.Response:
    """GET /geocoding/countries/{code}: one country with timezone and capital."""
    code = request.match_info["code"]
    if not COUNTRY.fullmatch(code):
        raise bad_request(
            "code", f"code must be an ISO 3166-1 alpha-2 code, got {params.show(code)}"
        )
    index: GeocodingIndex = request.app[STORE].require(NAME).data
    body = index.country_bodies.get(code.upper())
    if body is None:
        raise ApiError(404, f"no country with code {code.upper()}")
    return web.Response(body=body, content_type="application/json")


def routes() -> list[web.RouteDef]:
    """The area's routes."""
    return [
        web.get("/geocoding/lookup", lookup),
        web.get("/geocoding/reverse", reverse),
        web.get("/geocoding/countries", countries),
        web.get("/geocoding/countries/{code}", country),
    ]
