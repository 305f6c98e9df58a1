"""Parameters of the webcam endpoints: every malformed value is a 400 naming the parameter."""

from __future__ import annotations

import re
from collections.abc import Mapping

from contract import Geocoding as G
from contract import Webcams as W
from server.http import params
from server.http.errors import ApiError, bad_request
from server.webcams.catalog import BBox, ListQuery, Nearby
from server.webcams.clusters import ClusterQuery
from server.webcams.snapshots import RANGES

PUBLIC_ID = re.compile(W.PUBLIC_ID)
COUNTRY = re.compile(r"[A-Za-z]{2}")
LOCATION = re.compile(G.PUBLIC_ID)  # geocoding's public ids
LIST_LIMIT_MAX = 200
# Any offset is fine (beyond the total: an empty page, docs/api/webcams.md#list); the bound only
# keeps it an integer the compiled selection takes (int64).
OFFSET_MAX = 10**18 - 1
RADIUS_MAX_KM = 1000.0
SORTS = ("views", "views_asc")
LIST_PARAMETERS = frozenset({"bbox", "nearby", "country", "location", "limit", "offset", "sort"})
CLUSTER_PARAMETERS = frozenset({"bbox", "zoom"})  # token: read (once) by the middleware
SNAPSHOT_PARAMETERS = frozenset({"range"})
EMBED_PARAMETERS = frozenset({"range", "token"})


def bbox(raw: str, name: str = "bbox") -> BBox:
    """min_lat,min_lng,max_lat,max_lng (docs/api/webcams.md#bbox)."""
    parts = raw.split(",")
    if len(parts) != 4:
        raise bad_request(
            name, f"{name} must be min_lat,min_lng,max_lat,max_lng, got {params.show(raw)}"
        )
    min_lat = params.number(parts[0], name, -90, 90)
    min_lon = params.number(parts[1], name, -180, 180)
    max_lat = params.number(parts[2], name, -90, 90)
    max_lon = params.number(parts[3], name, -180, 180)
    if min_lat > max_lat:
        raise bad_request(name, f"{name} min_lat {min_lat:g} exceeds max_lat {max_lat:g}")
    return BBox(min_lat, min_lon, max_lat, max_lon)


def nearby(raw: str) -> Nearby:
    """lat,lng,radius_km with the radius in (0, 1000]."""
    parts = raw.split(",")
    if len(parts) != 3:
        raise bad_request("nearby", f"nearby must be lat,lng,radius_km, got {params.show(raw)}")
    lat = params.number(parts[0], "nearby", -90, 90)
    lon = params.number(parts[1], "nearby", -180, 180)
    radius = params.number(parts[2], "nearby", 0, RADIUS_MAX_KM)
    if radius <= 0:
        raise bad_request("nearby", "nearby radius_km must be above 0 (at most 1000)")
    return Nearby(lat, lon, radius)


def list_query(query: Mapping[str, str]) -> ListQuery:
    """GET /webcams parameters."""
    params.once(query, LIST_PARAMETERS)
    country = query.get("country")
    if country is not None:
        if not COUNTRY.fullmatch(country):
            raise bad_request(
                "country",
                "country must be an ISO 3166-1 alpha-2 code such as "
                f"CH, got {params.show(country)}",
            )
        country = country.upper()
        if country not in W.COUNTRIES:  # a fixed list: the answer never depends on the data
            raise bad_request("country", f"country {country} is not an ISO 3166-1 alpha-2 code")
    location = query.get("location")
    if location is not None and not LOCATION.fullmatch(location):
        raise bad_request(
            "location",
            "location must be a location id (as in "
            f"/geocoding/lookup?id=), got {params.show(location)}",
        )
    return ListQuery(
        bbox=bbox(query["bbox"]) if "bbox" in query else None,
        nearby=nearby(query["nearby"]) if "nearby" in query else None,
        country=country,
        location=location,
        limit=params.integer(query, "limit", 50, 1, LIST_LIMIT_MAX),
        offset=params.integer(query, "offset", 0, 0, OFFSET_MAX),
        sort=params.choice(query, "sort", "views", SORTS),
    )


def cluster_query(query: Mapping[str, str]) -> ClusterQuery:
    """GET /webcams/clusters parameters (bbox and zoom required)."""
    params.once(query, CLUSTER_PARAMETERS)
    errors = [
        {"parameter": p, "message": f"{p} is required"} for p in ("bbox", "zoom") if p not in query
    ]
    if errors:
        raise ApiError(400, "; ".join(e["message"] for e in errors), errors=errors)
    return ClusterQuery(
        bbox(query["bbox"]), params.integer(query, "zoom", 0, W.ZOOM_MIN, W.ZOOM_MAX)
    )


def range_(query: Mapping[str, str], names: frozenset[str] = SNAPSHOT_PARAMETERS) -> str:
    """24h (default) or 30d; `names`: the parameters the operation reads."""
    params.once(query, names)
    return params.choice(query, "range", RANGES[0], RANGES)


def public_id(raw: str) -> str:
    """A well-formed webcam public id (path parameter)."""
    if not PUBLIC_ID.fullmatch(raw):
        raise bad_request(
            "public_id",
            f"public_id must be 1-64 letters, digits, '.', '_' or '-', got {params.show(raw)}",
        )
    return raw
