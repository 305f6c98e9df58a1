"""Component schemas and response headers of the OpenAPI document (server/openapi.py).

Shapes follow interface.md section 2 and decisions.md; geocoding mirrors what
server/areas/geocoding_index.py emits, key for key and in the same order.
"""

from __future__ import annotations

from copy import deepcopy


def ref(kind: str, name: str) -> dict:
    """A JSON reference into components."""
    return {"$ref": f"#/components/{kind}/{name}"}


def nullable(kind: str, description: str, **extra) -> dict:
    """A value of `kind` that is null when unknown (decisions rule 11)."""
    return {"type": [kind, "null"], "description": description, **extra}


def obj(properties: dict, required: list[str] | None = None, description: str = "",
        **extra) -> dict:
    """An object schema; every property is required unless `required` says otherwise."""
    schema = {"type": "object"}
    if description:
        schema["description"] = description
    schema["properties"] = properties
    schema["required"] = list(properties) if required is None else required
    schema.update(extra)
    return schema


def envelope(item: str, key: str = "results", description: str = "", **more) -> dict:
    """`{key: [item], count}` plus any further properties."""
    props = {key: {"type": "array", "items": ref("schemas", item)},
             "count": {"type": "integer", "minimum": 0, "description": f"Number of {key} in "
                                                                       "this response."}}
    props.update(more)
    return obj(props, description=description)


COUNTRY_CODE = {"type": "string", "pattern": "^[A-Z]{2}$",
                "description": "ISO 3166-1 alpha-2 code, upper case."}
LAT = {"type": "number", "minimum": -90, "maximum": 90}
LON = {"type": "number", "minimum": -180, "maximum": 180}
UNIX = {"type": "integer", "description": "Unix timestamp, seconds, UTC."}
ICONS = [f"{code}{suffix}" for code in ("01", "02", "03", "04", "09", "10", "11", "13", "50")
         for suffix in "dn"]

# ---- geocoding ----------------------------------------------------------------------------

_LOCATION = {
    "id": {"type": "string", "pattern": "^(?:[0-9]{1,12}|icao:[A-Z0-9]{4})$",
           "description": "Public location id: the GeoNames id as a decimal string (stable across "
                          "builds). Airports of the packaged offline gazetteer, which have no "
                          "GeoNames id, use `icao:` followed by the ICAO code.",
           "examples": ["2657896", "icao:LSZH"]},
    "name": {"type": "string", "description": "Display name: the name in the requested "
                                              "`language` when the data has one, else the "
                                              "place's default (GeoNames) name."},
    "lat": {**LAT, "description": "Latitude, degrees, 5 decimals."},
    "lon": {**LON, "description": "Longitude, degrees, 5 decimals."},
    "country_code": {**COUNTRY_CODE, "type": ["string", "null"]},
    "country_name": nullable("string", "Country name from Unicode CLDR in the requested "
                                       "language, else English."),
    "admin1_name": nullable("string", "First-level administrative division (state, canton)."),
    "admin2_name": nullable("string", "Second-level administrative division (district, "
                                      "county)."),
    "timezone": nullable("string", "IANA timezone identifier.", examples=["Europe/Zurich"]),
    "population": nullable("integer", "Population; null when unknown (a zero in the source "
                                      "counts as unknown)."),
    "elevation": nullable("integer", "Elevation in metres (GeoNames elevation, else its "
                                     "digital elevation model)."),
    "feature_code": {"type": "string", "description": "GeoNames feature code, e.g. PPL "
                     "(populated place), PPLA (seat of a first-order division), PPLC (capital), "
                     "AIRP (airport).", "examples": ["PPLA", "AIRP"]},
}
_SEARCH_FIELDS = ("id", "name", "lat", "lon", "country_code", "country_name", "admin1_name",
                  "timezone", "population", "feature_code")
_DETAIL_FIELDS = ("id", "name", "lat", "lon", "country_code", "country_name", "admin1_name",
                  "admin2_name", "timezone", "population", "elevation", "feature_code")
ZURICH = {"id": "2657896", "name": "Zürich", "lat": 47.36667, "lon": 8.55, "country_code": "CH",
          "country_name": "Switzerland", "admin1_name": "Zurich", "timezone": "Europe/Zurich",
          "population": 341730, "feature_code": "PPLA"}
ZURICH_DETAIL = {**ZURICH, "admin2_name": "Bezirk Zürich", "elevation": 408}


def _location(fields: tuple[str, ...], description: str, example: dict, **more) -> dict:
    props = {f: deepcopy(_LOCATION[f]) for f in fields}
    props.update(more)
    return obj(props, description=description,
               examples=[{k: example.get(k) for k in props}])


_COUNTRY = {
    "code": COUNTRY_CODE,
    "name": {"type": "string", "description": "English name (Unicode CLDR), in every language."},
    "flag": {"type": "string", "description": "Flag emoji (regional indicator symbols of the "
                                              "code).", "examples": ["🇨🇭"]},
    "population": nullable("integer", "Population (GeoNames country info)."),
    "continent": nullable("string", "GeoNames continent code.",
                          enum=["AF", "AN", "AS", "EU", "NA", "OC", "SA", None]),
    "timezone": nullable("string", "Primary IANA timezone: the capital's, else that of the "
                                   "country's most populous place."),
    "capital": nullable("string", "Capital city name."),
}
_COUNTRY_LIST = ("code", "name", "flag", "population", "continent")

# ---- air quality --------------------------------------------------------------------------


def _ug(description: str) -> dict:
    return nullable("number", f"{description}, µg/m³.", minimum=0)


def _pollen(plant: str) -> dict:
    return nullable("number", f"{plant} pollen, grains/m³ (a number concentration: CAMS pollen "
                              "is not a mass, so interface.md's µg/m³ label does not apply). "
                              "Europe only; null when the model has no value (e.g. out of "
                              "season).", minimum=0)


_AQ_RECORD = obj({
    "time": {**UNIX, "description": "Start of the hour, Unix timestamp (s, UTC)."},
    "europeanAqi": nullable("integer", "European AQI: the 2024 EEA bands (good, fair, moderate, "
                                       "poor, very poor, extremely poor) mapped to 0-100, 20 per "
                                       "band, extrapolated above 100, capped at 500.",
                            minimum=0, maximum=500),
    "usAqi": nullable("integer", "US AQI from the 2024 EPA breakpoints (24 h means for PM, 8 h "
                                 "for CO, max of 1 h and 8 h for O3), capped at 500.",
                      minimum=0, maximum=500),
    "pm25": _ug("Fine particulate matter (PM2.5)"),
    "pm10": _ug("Coarse particulate matter (PM10)"),
    "ozone": _ug("Ground-level ozone"),
    "nitrogenDioxide": _ug("Nitrogen dioxide"),
    "sulphurDioxide": _ug("Sulphur dioxide"),
    "carbonMonoxide": _ug("Carbon monoxide"),
    "dustAod": nullable("number", "Dust aerosol optical depth at 550 nm (dimensionless, CAMS "
                                  "global `duaod550`). Europe only.", minimum=0),
    "pollenBirch": _pollen("Birch"), "pollenGrass": _pollen("Grass"),
    "pollenOlive": _pollen("Olive"), "pollenRagweed": _pollen("Ragweed"),
    "pollenAlder": _pollen("Alder"), "pollenMugwort": _pollen("Mugwort"),
}, required=["time", "europeanAqi", "usAqi", "pm25", "pm10", "ozone", "nitrogenDioxide",
             "sulphurDioxide", "carbonMonoxide"],
    description="Air quality of one hour. The Europe-only fields (dustAod, pollen*) are present "
                "inside the CAMS European domain (longitude -25 to 45, latitude 30 to 72) and "
                "absent outside it.")

# ---- forecast -----------------------------------------------------------------------------

_UNITS = " Unit per `flags.units`: see the units table in the operation description."
_ICON = {"type": "string", "enum": ICONS,
         "description": "Condition code plus d (day) or n (night): 01 clear, 02 few clouds, 03 "
                        "scattered clouds, 04 broken or overcast, 09 showers, 10 rain, 11 "
                        "thunderstorm, 13 snow or sleet, 50 fog or mist."}
_PRECIP_TYPE = {"type": "string", "enum": ["none", "rain", "snow", "sleet"],
                "description": "Freezing rain and ice pellets count as sleet."}
_FRACTION = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_POINT = {
    "time": UNIX,
    "summary": {"type": "string", "description": "Human-readable, in `lang`."},
    "icon": _ICON,
    "is_day": {"type": "boolean", "description": "True during daylight."},
    "temperature": nullable("number", "Air temperature." + _UNITS),
    "apparentTemperature": nullable("number", "Feels-like temperature." + _UNITS),
    "humidity": {**_FRACTION, "description": "Relative humidity, 0 to 1."},
    "pressure": nullable("number", "Sea-level pressure, hPa."),
    "windSpeed": nullable("number", "Wind speed." + _UNITS, minimum=0),
    "windDirection": nullable("integer", "Direction the wind comes from, degrees.", minimum=0,
                              maximum=360),
    "cloudCover": {**_FRACTION, "description": "Cloud cover, 0 to 1."},
    "visibility": nullable("number", "Visibility, capped at 16 km (10 mi)." + _UNITS,
                           minimum=0),
}
_HOUR = {**_POINT,
         "precipitation": nullable("number", "Precipitation intensity." + _UNITS, minimum=0),
         "precipitationType": _PRECIP_TYPE}
_DAY = {
    "time": {**UNIX, "description": "Local midnight starting the calendar day, Unix timestamp."},
    "summary": {"type": "string"}, "icon": {**_ICON, "description": "Dominant condition; daily "
                                                                    "icons always end in d."},
    "is_day": {"type": "boolean"},
    "temperatureHigh": nullable("number", "Maximum from 06:00 to 18:00 local." + _UNITS),
    "temperatureLow": nullable("number", "Minimum from 18:00 to 06:00 the next morning." + _UNITS),
    "humidity": _FRACTION, "pressure": nullable("number", "hPa."),
    "windSpeed": nullable("number", "Wind speed." + _UNITS, minimum=0),
    "windDirection": nullable("integer", "Degrees.", minimum=0, maximum=360),
    "cloudCover": _FRACTION,
    "precipitation": nullable("number", "Daily precipitation total." + _UNITS, minimum=0),
    "sunriseTime": nullable("integer", "NOAA algorithm at -0.833°; null on days of polar night "
                                       "or midnight sun."),
    "sunsetTime": nullable("integer", "As sunriseTime."),
    "moonPhase": {"type": "number", "minimum": 0, "maximum": 1,
                  "description": "Lunation fraction at local noon: 0 new, 0.25 first quarter, "
                                 "0.5 full, 0.75 last quarter."},
}
_MINUTE = obj({"time": UNIX,
               "precipitation": nullable("number", "Precipitation intensity." + _UNITS,
                                         minimum=0),
               "precipitationProbability": {**_FRACTION, "description": "0 to 1."},
               "precipitationType": _PRECIP_TYPE})


def _block(item: str, description: str) -> dict:
    return obj({"summary": {"type": "string"}, "icon": _ICON,
                "data": {"type": "array", "items": ref("schemas", item)}},
               description=description)


_ALERT = obj({
    "title": {"type": "string"}, "description": {"type": "string"},
    "time": {**UNIX, "description": "Start, Unix timestamp."},
    "expires": nullable("integer", "End, Unix timestamp; null when open-ended."),
    "severity": {"type": "string", "enum": ["Extreme", "Severe", "Moderate", "Minor", "Unknown"],
                 "description": "CAP severity."},
    "regions": {"type": "array", "items": {"type": "string"}, "description": "When known."},
    "uri": {"type": "string", "format": "uri", "description": "When known."},
}, required=["title", "description", "time", "expires", "severity"])
_FLAGS = obj({
    "units": {"type": "string", "enum": ["us", "si", "ca", "uk"],
              "description": "Unit system used (the resolved one when `units=auto`)."},
    "sources": {"type": "array", "description": "Models that answered, with their run time.",
                "items": obj({"name": {"type": "string"},
                              "run_time": {"type": "string", "format": "date-time"}})},
    "version": {"type": "string", "description": "Data version (also in X-Data-Version)."},
})
_FORECAST = obj({
    "latitude": LAT, "longitude": LON,
    "timezone": {"type": "string", "description": "IANA timezone of the coordinate."},
    "offset": {"type": "number", "description": "UTC offset of the timezone now, in hours "
                                                "(DST-aware), e.g. 5.5 or -4."},
    "elevation": {"type": "number", "description": "Elevation; ft for `us`, m otherwise."},
    "currently": ref("schemas", "ForecastPoint"),
    "minutely": ref("schemas", "MinutelyBlock"),
    "hourly": ref("schemas", "HourlyBlock"),
    "daily": ref("schemas", "DailyBlock"),
    "alerts": {"type": "array", "items": ref("schemas", "Alert"),
               "description": "Active alerts; always an array, empty when none."},
    "flags": ref("schemas", "ForecastFlags"),
}, required=["latitude", "longitude", "timezone", "offset", "elevation", "flags"],
    description="Blocks named in `exclude` are absent; all others are present.")

# ---- webcams ------------------------------------------------------------------------------

_WEBCAM = {
    "public_id": {"type": "string", "description": "Unique webcam identifier."},
    "name": {"type": "string"},
    "latitude": LAT, "longitude": LON,
    "location_public_id": nullable("string", "Public id of the associated location "
                                             "(as in /geocoding/lookup?id=)."),
    "location_name": nullable("string", "Name of the associated location."),
    "country_code": COUNTRY_CODE,
    "views": {"type": "integer", "minimum": 0, "description": "Total view count."},
    "image": obj({"current": {"type": "string", "format": "uri", "description": "Signed, "
                              "expiring URL ({cdn_url}) of the latest snapshot image."}}),
}
_WEBCAM_DETAIL = {**_WEBCAM,
                  "last_updated": {"type": "string", "format": "date-time",
                                   "description": "Time of the latest snapshot, ISO 8601 UTC "
                                                  "with Z."},
                  "player": obj({
                      "embed": {"type": "string", "format": "uri", "description": "Signed URL "
                                "({embed_base_url}) of the embeddable HTML player, for an "
                                "iframe; carries a webcam-specific embed token."},
                      "expires_in": {"type": "integer", "const": 3600,
                                     "description": "Seconds the embed token stays valid."}})}

PROBLEM = obj({
    "type": {"type": "string", "format": "uri-reference", "default": "about:blank",
             "description": "Problem type URI; `about:blank` means the status says it all."},
    "title": {"type": "string", "description": "HTTP reason phrase of the status."},
    "status": {"type": "integer", "minimum": 400, "maximum": 599},
    "detail": {"type": "string", "description": "What went wrong, for a human; never holds "
                                                "stack traces, SQL or file paths."},
    "errors": {"type": "array", "description": "Validation failures only: one entry per "
                                                "offending parameter.",
               "items": obj({"parameter": {"type": "string"}, "message": {"type": "string"}})},
    "request_id": {"type": "string", "pattern": "^[0-9a-f]{16}$",
                   "description": "500 only: the id under which the error was logged (also "
                                  "in X-Request-Id)."},
}, required=["type", "title", "status", "detail"],
    description="RFC 9457 problem details, media type application/problem+json.",
    examples=[{"type": "about:blank", "title": "Bad Request", "status": 400,
               "detail": "lat must be between -90 and 90, got '91'",
               "errors": [{"parameter": "lat",
                           "message": "lat must be between -90 and 90, got '91'"}]}])

SCHEMAS = {
    "Location": _location(_SEARCH_FIELDS, "A location as listed in search results.", ZURICH),
    "LocationDetail": _location(_DETAIL_FIELDS, "A location with admin2_name and elevation "
                                "(lookup by id).", ZURICH_DETAIL),
    "NearestLocation": _location(
        _DETAIL_FIELDS, "A location near the query coordinate (reverse geocoding).",
        {**ZURICH_DETAIL, "distance_km": 0.412},
        distance_km={"type": "number", "minimum": 0, "description": "Great-circle (haversine, "
                     "Earth radius 6371.0088 km) distance from the query coordinate, km, "
                     "rounded to 3 decimals."}),
    "LocationSearchResults": envelope("Location", description="Search results, best first."),
    "NearestLocations": envelope("NearestLocation", description="Nearest places first."),
    "Country": obj({k: _COUNTRY[k] for k in _COUNTRY_LIST}, description="A country (list)."),
    "CountryDetail": obj(dict(_COUNTRY), description="A country with timezone and capital.",
                         examples=[{"code": "CH", "name": "Switzerland", "flag": "🇨🇭",
                                    "population": 8516543, "continent": "EU",
                                    "timezone": "Europe/Zurich", "capital": "Bern"}]),
    "CountryList": envelope("Country", description="Every country, sorted by English name."),
    "AirQualityRecord": _AQ_RECORD,
    "AirQuality": obj({
        "latitude": LAT, "longitude": LON, "timezone": {"type": "string"},
        "current": ref("schemas", "AirQualityRecord"),
        "hourly": obj({"data": {"type": "array", "items": ref("schemas", "AirQualityRecord"),
                                "description": "From the current hour to the end of the "
                                               "loaded forecast."}}),
    }, description="`current` is the current hour."),
    "ForecastPoint": obj(_POINT, description="Conditions at one time (`currently`)."),
    "HourlyPoint": obj(_HOUR, description="One hour: the `currently` fields plus precipitation."),
    "DailyPoint": obj(_DAY, description="One calendar day in the location's timezone."),
    "MinutelyPoint": _MINUTE,
    "MinutelyBlock": _block("MinutelyPoint", "61 entries, one a minute from the start of the "
                                             "current minute."),
    "HourlyBlock": _block("HourlyPoint", "The next 48 hours; longer with `extend=hourly`."),
    "DailyBlock": _block("DailyPoint", "The next 7 days."),
    "Alert": _ALERT,
    "ForecastFlags": _FLAGS,
    "Forecast": _FORECAST,
    "Webcam": obj(dict(_WEBCAM), description="A webcam in lists and clusters."),
    "WebcamDetail": obj(_WEBCAM_DETAIL, description="A webcam with last_updated and player."),
    "WebcamList": envelope("Webcam", description="One page of webcams.",
                           total={"type": "integer", "minimum": 0,
                                  "description": "Matches across all pages."}),
    "Cluster": obj({
        "latitude": {**LAT, "description": "Centroid latitude."},
        "longitude": {**LON, "description": "Centroid longitude."},
        "count": {"type": "integer", "minimum": 1},
        "webcam": ref("schemas", "Webcam"),
    }, required=["latitude", "longitude", "count"],
        description="`webcam` is present exactly when count is 1."),
    "ClusterList": envelope("Cluster", key="clusters", description="Counts sum to the number "
                                                                  "of webcams in the bbox."),
    "Snapshot": obj({"captured_at": {"type": "string", "format": "date-time"},
                     "image_url": {"type": "string", "format": "uri",
                                   "description": "Signed, expiring image URL."}}),
    "SnapshotList": envelope("Snapshot", key="snapshots", description="Oldest first."),
    "Token": obj({"token": {"type": "string", "description": "Opaque signed token."},
                  "expires_in": {"type": "integer", "const": 3600,
                                 "description": "Seconds of validity."}}),
    "Health": obj({"status": {"type": "string", "const": "ok"}}),
    "Readiness": obj({
        "state": {"type": "string", "enum": ["ready", "loading", "degraded"]},
        "build_id": {"type": ["string", "null"], "description": "Published build answering."},
        "areas": {"type": "object", "description": "One entry per area (geocoding, air_quality, "
                  "forecast, webcams).", "additionalProperties": obj({
                      "state": {"type": "string",
                                "enum": ["loading", "loaded", "absent", "failed"]},
                      "version": {"type": "string"}, "error": {"type": "string"}},
                      required=["state"])},
    }),
    "Problem": PROBLEM,
}


def _header(kind: str, description: str, **extra) -> dict:
    return {"description": description, "schema": {"type": kind, **extra}}


HEADERS = {
    "RateLimit-Limit": _header("integer", "Sustained quota of this client, requests a minute "
                               "(the API key's own limit, else the server default; keyless "
                               "calls are counted per client address).", minimum=1),
    "RateLimit-Remaining": _header("integer", "Whole requests left in the client's token "
                                   "bucket.", minimum=0),
    "RateLimit-Reset": _header("integer", "Seconds until the bucket is full again.", minimum=0),
    "Retry-After": _header("integer", "Seconds to wait before retrying.", minimum=1),
    "ETag": _header("string", "Weak entity tag (W/...) derived from the data version, path and query "
                    "(api_key excluded); send it in If-None-Match."),
    "X-Data-Version": _header("string", "Version of the data artifact that answered."),
    "Cache-Control": _header("string", "`public, max-age=N` chosen by area (decisions rule 9); "
                             "`no-store` when not cacheable."),
    "X-Request-Id": _header("string", "Id under which a 500 was logged.",
                            pattern="^[0-9a-f]{16}$"),
}

SECURITY_SCHEMES = {
    "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key",
                     "description": "API key; wins over api_key when both are sent."},
    "ApiKeyQuery": {"type": "apiKey", "in": "query", "name": "api_key",
                    "description": "API key as a query parameter."},
    "ClustersToken": {"type": "apiKey", "in": "query", "name": "token",
                      "description": "Token from POST /webcams/token, valid 3600 s; accepted by "
                                     "GET /webcams/clusters only."},
    "EmbedToken": {"type": "apiKey", "in": "query", "name": "token",
                   "description": "Webcam-specific embed token, delivered inside player.embed "
                                  "of the webcam detail; valid 3600 s, for that webcam's embed "
                                  "page only."},
}
