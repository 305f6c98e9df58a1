"""The built-in image host ({cdn_url} by default): signed snapshot images.

`GET /cdn/webcams/{public_id}/{captured_at}{ext}?expires=…&kid=…&sig=…`. The signature is
checked before anything is looked up. A snapshot is found by its webcam and capture time in
the memory-mapped arrays; a copied file is located through the image index the pipeline wrote,
never through a path made from the request; a generated image is rendered on demand.
Copied files never change: cacheable as immutable until their link expires. A rendered image
depends on the forecast's cloud cover, which a new forecast version changes: cacheable until the
link expires but not immutable (the ETag names both versions, so a revalidation is cheap).
"""

from __future__ import annotations

import datetime as dt
import re
import zlib
from functools import lru_cache

from aiohttp import web

from contract import Webcams as W
from server.http import params
from server.http.errors import ApiError
from server.http.middleware import STORE, endpoint
from server.webcams import queries, sky
from server.webcams.data import WebcamsData
from server.webcams.tokens import SIGNER, TokenError

NAME = W.AREA
IMAGE_NAME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})Z(\.[a-z]{3,4})")
MAX_IMMUTABLE_S = 31_536_000
SIGNATURE_PARAMETERS = frozenset({"expires", "kid", "sig"})
# (version, public_id, time, cloud cover) -> SVG bytes: a player asks for the same frames
# again and again.
_RENDERED_CACHE = 2048


def forecast_cloud_cover(request: web.Request, lat: float, lon: float, unix_s: int) -> float | None:
    """The forecast area's cloud cover (0..1) when it is loaded and has one for that time."""
    data = request.app[STORE].area("forecast").data
    lookup = getattr(data, "cloud_cover", None) if data is not None else None
    if lookup is None:
        return None
    try:
        value = lookup(lat, lon, unix_s)
    except Exception:  # noqa: BLE001 (another area's failure must not break images)
        return None
    return None if value is None else max(0.0, min(1.0, float(value)))


@lru_cache(maxsize=_RENDERED_CACHE)
def _render(
    version: str,
    public_id: str,
    name: str,
    lat: float,
    lon: float,
    timezone: str,
    unix_s: int,
    cloud: float,
) -> bytes:
    return sky.render(public_id, name, lat, lon, timezone, unix_s, cloud)


def _not_found() -> ApiError:
    return ApiError(404, "no such image")


def parse_name(name: str) -> tuple[int, str]:
    """(capture time, extension) from `2026-01-31T12:00:00Z.svg`, else 404."""
    match = IMAGE_NAME.fullmatch(name)
    if not match:
        raise _not_found()
    try:
        stamp = dt.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise _not_found() from None
    return int(stamp.replace(tzinfo=dt.timezone.utc).timestamp()), match.group(2)


@endpoint(area=NAME, auth="none", limited=False, also=("forecast",))  # cloud cover
async def image(request: web.Request) -> web.StreamResponse:
    """GET /cdn/webcams/{public_id}/{image}: one snapshot image."""
    # A malformed id is the caller's mistake (400), not a bad signature.
    public_id = queries.public_id(request.match_info["public_id"])
    query = request.query
    params.once(query, SIGNATURE_PARAMETERS)
    try:
        request.app[SIGNER].verify_image(
            public_id, query.get("expires", ""), query.get("kid", ""), query.get("sig", "")
        )
    except TokenError as exc:
        raise ApiError(403, str(exc)) from None
    state = request.app[STORE].require(NAME)
    data: WebcamsData = state.data
    unix_s, ext = parse_name(request.match_info["image"])
    row = data.catalog.row_of.get(public_id)
    index = None if row is None else data.snapshots.find(row, unix_s)
    if index is None:
        raise _not_found()
    found = data.snapshots.image(index)
    if found.kind == "key" or found.ext.lower() != ext:
        raise _not_found()
    headers = {
        "Cache-Control": f"public, max-age={_lifetime(request)}",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    }
    if found.kind == "file":
        headers["Cache-Control"] += ", immutable"
        return web.FileResponse(
            data.root / found.ref, headers={**headers, "Content-Type": found.media_type}
        )
    lat, lon = float(data.catalog.lat[row]), float(data.catalog.lon[row])
    cloud = forecast_cloud_cover(request, lat, lon, unix_s)
    if cloud is None:
        cloud = sky.fallback_cloud_cover(zlib.crc32(public_id.encode()), unix_s)
    # Rendering takes well under a millisecond: no executor round trip.
    body = _render(
        state.version,
        public_id,
        data.catalog.name(row),
        lat,
        lon,
        data.catalog.timezones[row],
        unix_s,
        round(cloud, 2),
    )
    return web.Response(body=body, content_type=found.media_type, headers=headers)


def _lifetime(request: web.Request) -> int:
    """Seconds until the link expires (verified above), at most a year."""
    left = int(request.query["expires"]) - request.app[SIGNER].now()
    return max(0, min(MAX_IMMUTABLE_S, left))


def routes() -> list[web.RouteDef]:
    """The image host's route."""
    return [web.get("/cdn/webcams/{public_id}/{image}", image)]
