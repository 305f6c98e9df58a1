"""Building blocks of the OpenAPI document: parameters, responses, schema helpers, headers."""

from __future__ import annotations

from contract import Geocoding
from server.http import languages

JSON = "application/json"
PROBLEM_JSON = "application/problem+json"
RATE = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
CACHING = ("ETag", "X-Data-Version", "Cache-Control")
OPTIONAL_KEY = [{}, {"ApiKeyHeader": []}, {"ApiKeyQuery": []}]
KEY = [{"ApiKeyHeader": []}, {"ApiKeyQuery": []}]
NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?"
LANGUAGE = f"^(?:{languages.PATTERN})$"
COUNTRY = "^[A-Za-z]{2}$"
LOCATION_ID = f"^(?:{Geocoding.PUBLIC_ID})$"


def ref(kind: str, name: str) -> dict:
    """A JSON reference into components."""
    return {"$ref": f"#/components/{kind}/{name}"}


def nullable(kind: str, description: str, **extra) -> dict:
    """A value of `kind` that is null when unknown (docs/api/conventions.md#numbers)."""
    return {"type": [kind, "null"], "description": description, **extra}


def obj(
    properties: dict, required: list[str] | None = None, description: str = "", **extra
) -> dict:
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
    props = {
        key: {"type": "array", "items": ref("schemas", item)},
        "count": {
            "type": "integer",
            "minimum": 0,
            "description": f"Number of {key} in this response.",
        },
    }
    props.update(more)
    return obj(props, description=description)


COUNTRY_CODE = {
    "type": "string",
    "pattern": "^[A-Z]{2}$",
    "description": "ISO 3166-1 alpha-2 code, upper case.",
}
LAT = {"type": "number", "minimum": -90, "maximum": 90}
LON = {"type": "number", "minimum": -180, "maximum": 180}
UNIX = {"type": "integer", "description": "Unix timestamp, seconds, UTC."}
ICONS = [
    f"{code}{suffix}"
    for code in ("01", "02", "03", "04", "09", "10", "11", "13", "50")
    for suffix in "dn"
]

# ---- building blocks ----------------------------------------------------------------------


def param(
    name: str, where: str, description: str, schema: dict, required: bool = False, **extra
) -> dict:
    """One parameter object."""
    return {
        "name": name,
        "in": where,
        "description": description,
        "required": required or where == "path",
        "schema": schema,
        **extra,
    }


def headers(*names: str) -> dict:
    """Header references by name."""
    return {name: ref("headers", name) for name in names}


def problem(status: int, description: str, limited: bool = True) -> dict:
    """An application/problem+json response with the headers the middleware sets on it."""
    names: tuple[str, ...] = ()
    # Every 403 draws from the client address's budget of refusals (a 429 once it is spent),
    # whether or not the operation is rate limited: both carry that bucket's headers.
    if limited or status in (403, 429):
        names = RATE + (("Retry-After",) if status in (429, 503) else ())
    if status == 503 and not limited:
        names = ("Retry-After",)
    if status == 500:
        names = ("X-Request-Id",)
    response = {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": ref("schemas", "Problem")}},
    }
    if names:
        response["headers"] = headers(*names)
    return response


# The shape of a request id: 16 hex digits made by the server, or a proxy's own id as
# server.observe.requests.TRUSTED_ID accepts it.
REQUEST_ID_PATTERN = "^[A-Za-z0-9._:+/=-]{1,128}$"

STANDARD = {
    403: "No valid API key: none was sent, or it is unknown (X-API-Key header or api_key). "
    "Refusals count against a budget per client address (the default limit); past it "
    "they are 429.",
    429: "Rate limit exceeded (the key's, the client address's, or that of the address's "
    "requests refused with 403); retry after Retry-After seconds.",
    500: "Unexpected error; the body's request_id (also in X-Request-Id) identifies the log entry.",
}


def responses(ok: dict, errors: dict[int, str], cached: bool = True, limited: bool = True) -> dict:
    """200 (and 304) plus the problem responses; 429 and 500 are added for every operation
    that is rate limited."""
    out = {"200": ok}
    if cached:
        out["304"] = {
            "description": "Not Modified: If-None-Match matched the current ETag.",
            "headers": headers(*CACHING, *(RATE if limited else ())),
        }
    codes = dict(errors)
    if limited or 403 in codes:  # refusals are limited (problem)
        codes.setdefault(429, STANDARD[429])
    codes.setdefault(500, STANDARD[500])
    for status in sorted(codes):
        out[str(status)] = problem(status, codes[status] or STANDARD[status], limited)
    return out


def success(
    description: str, schema: str, media: str = JSON, cached: bool = True, limited: bool = True
) -> dict:
    """A 200 response with the schema `schema` (a component name or an inline schema)."""
    names = (*(CACHING if cached else ("Cache-Control",)), *(RATE if limited else ()))
    body = ref("schemas", schema) if isinstance(schema, str) else schema
    return {
        "description": description,
        "headers": headers(*names),
        "content": {media: {"schema": body}},
    }


def operation(
    op_id: str,
    tag: str,
    summary: str,
    description: str,
    parameters: list[dict],
    responses_: dict,
    security: list[dict],
    cached: bool = True,
) -> dict:
    """One operation object; cached operations accept If-None-Match."""
    params = parameters + ([ref("parameters", "IfNoneMatch")] if cached else [])
    op = {"operationId": op_id, "tags": [tag], "summary": summary, "description": description}
    if params:
        op["parameters"] = params
    if any("ApiKeyHeader" in scheme for scheme in security):
        responses_ = _key_twice(responses_)
    op["responses"] = responses_
    op["security"] = security
    return op


TWICE = (
    "An API key sent more than once (two X-API-Key values, as two lines or a comma list, "
    "or two non-empty api_key parameters)."
)


def _key_twice(responses_: dict) -> dict:
    """The responses with the 400 of an operation that reads an API key saying it covers a key
    sent twice (which of them would the caller mean?)."""
    out = dict(responses_)
    if "400" in out:
        out["400"] = {**out["400"], "description": f"{out['400']['description']} Or: {TWICE}"}
    else:
        out["400"] = problem(400, TWICE)
    return {status: out[status] for status in sorted(out)}


def unavailable(area: str) -> str:
    """503 description of an area."""
    return (
        f"{area} data is not available: not yet loaded, absent from the published build, "
        "unreadable"
        + (", or not covering the present (stale)." if area in ("Air quality", "Forecast") else ".")
    )


def coordinates(example: str) -> dict:
    """The lat,lon path segment."""
    return param(
        "coordinates",
        "path",
        "Latitude and longitude in decimal degrees separated "
        "by a comma (`lat,lon`): lat -90 to 90, lon -180 to 180, finite numbers only "
        "(no NaN, inf or 1e999); anything else is 400.",
        {"type": "string", "pattern": f"^{NUMBER},{NUMBER}$"},
        example=example,
    )


def limit(default: int, maximum: int, what: str) -> dict:
    """A limit parameter (above its maximum is a 400, never clamped)."""
    return param(
        "limit",
        "query",
        f"{what}, 1 to {maximum}. Above {maximum} is a 400 (not clamped).",
        {"type": "integer", "minimum": 1, "maximum": maximum, "default": default},
    )


LANGUAGE_TEXT = (
    "Language for names: a BCP 47 tag such as `de`, `fr`, `pt-BR`, `zh-TW` or `sr-Latn` "
    "(case-insensitive, `_` accepted for `-`; extensions and private use such as "
    "`ja-JP-u-ca-japanese` are accepted and ignored). Place names use the place's name in that "
    "language, trying the full tag, then the language with its region, then with its script "
    "(as CLDR's likely subtags give it: `zh-TW` is `zh-Hant`), then the language alone when it "
    "is written in that script (`zh-TW` never shows Simplified `zh` names, `sr-Latn` never "
    "Cyrillic `sr` ones), then English, else the place's default (GeoNames) name; "
    "`country_name` comes from the Unicode CLDR in that language, else English. A well-formed "
    "tag the data does not cover falls back to English; a malformed one is 400."
)


def language(name: str = "language") -> dict:
    """The language parameter."""
    return param(
        name,
        "query",
        LANGUAGE_TEXT,
        {"type": "string", "pattern": LANGUAGE, "maxLength": languages.MAX_CHARS, "default": "en"},
    )


PROBLEM = obj(
    {
        "type": {
            "type": "string",
            "format": "uri-reference",
            "default": "about:blank",
            "description": "Problem type URI; `about:blank` means the status says it all.",
        },
        "title": {"type": "string", "description": "HTTP reason phrase of the status."},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {
            "type": "string",
            "description": "What went wrong, for a human; never holds "
            "stack traces, SQL or file paths.",
        },
        "errors": {
            "type": "array",
            "description": "Validation failures only: the offending "
            "parameter (validation stops at the first; "
            "both coordinates' problems are listed "
            "together, and both of q and id).",
            "items": obj({"parameter": {"type": "string"}, "message": {"type": "string"}}),
        },
        "request_id": {
            "type": "string",
            "pattern": REQUEST_ID_PATTERN,
            "description": "500 only: the request's id, under which the error was "
            "logged (also in X-Request-Id).",
        },
    },
    required=["type", "title", "status", "detail"],
    description="RFC 9457 problem details, media type application/problem+json.",
    examples=[
        {
            "type": "about:blank",
            "title": "Bad Request",
            "status": 400,
            "detail": "lat must be between -90 and 90, got '91'",
            "errors": [{"parameter": "lat", "message": "lat must be between -90 and 90, got '91'"}],
        }
    ],
)


def _header(kind: str, description: str, **extra) -> dict:
    return {"description": description, "schema": {"type": kind, **extra}}


HEADERS = {
    "RateLimit-Limit": _header(
        "integer",
        "Sustained quota of this client, requests a minute "
        "(the API key's own limit, else the server default; keyless "
        "calls are counted per client address).",
        minimum=1,
    ),
    "RateLimit-Remaining": _header(
        "integer", "Whole requests left in the client's token bucket.", minimum=0
    ),
    "RateLimit-Reset": _header("integer", "Seconds until the bucket is full again.", minimum=0),
    "Retry-After": _header("integer", "Seconds to wait before retrying.", minimum=1),
    "ETag": _header(
        "string",
        "Weak entity tag (W/...) derived from the data version, path and query "
        "(api_key excluded); send it in If-None-Match.",
    ),
    "X-Data-Version": _header("string", "Version of the data artifact that answered."),
    "Cache-Control": _header(
        "string",
        "`public, max-age=N` chosen by area (decisions rule 9); `no-store` when not cacheable.",
    ),
    "X-Request-Id": _header(
        "string",
        "The request's id, in every log line written for it "
        "(every answer carries it): 16 hex digits, or the id a trusted "
        "proxy sent.",
        pattern=REQUEST_ID_PATTERN,
    ),
    "Allow": _header("string", "The methods the path accepts."),
}

SECURITY_SCHEMES = {
    "ApiKeyHeader": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "API key; wins over api_key when both are sent.",
    },
    "ApiKeyQuery": {
        "type": "apiKey",
        "in": "query",
        "name": "api_key",
        "description": "API key as a query parameter.",
    },
    "ClustersToken": {
        "type": "apiKey",
        "in": "query",
        "name": "token",
        "description": "Token from POST /webcams/token, valid 3600 s; accepted by "
        "GET /webcams/clusters only.",
    },
    "EmbedToken": {
        "type": "apiKey",
        "in": "query",
        "name": "token",
        "description": "Webcam-specific embed token, delivered inside player.embed "
        "of the webcam detail; valid 3600 s, for that webcam's embed "
        "page only.",
    },
}
