"""OpenAPI paths and schemas of webcams and the built-in image host (docs/api/webcams.md)."""

from __future__ import annotations

from server.openapi.parts import (
    COUNTRY,
    COUNTRY_CODE,
    KEY,
    LAT,
    LOCATION_ID,
    LON,
    NUMBER,
    envelope,
    headers,
    limit,
    nullable,
    obj,
    operation,
    param,
    problem,
    ref,
    responses,
    success,
    unavailable,
)

PUBLIC_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
LINKS = (
    "Links are signed and expire: image links and the player link are valid at least 3600 "
    "seconds (until the end of the current five-minute period plus 3600 s), so answers "
    "are identical, and cacheable, within a period; `Cache-Control` max-age never "
    "reaches past the period's end and the `ETag` changes with it."
)
_IMAGE = (
    "Signed, expiring URL on {cdn_url} (by default this server's built-in image host, "
    "`/cdn/webcams/…`; see that operation)."
)
_WEBCAM = {
    "public_id": {
        "type": "string",
        "pattern": PUBLIC_ID_PATTERN,
        "description": "Unique webcam identifier.",
        "examples": ["1146091676"],
    },
    "name": {"type": "string"},
    "latitude": {**LAT, "description": "Degrees, 5 decimals."},
    "longitude": {**LON, "description": "Degrees, 5 decimals."},
    "location_public_id": nullable(
        "string",
        "Public id of the place the catalog names, else "
        "of the nearest populated gazetteer place within "
        "50 km (not districts, not airports), as in "
        "/geocoding/lookup?id=; null when none is that "
        "close (at sea, in a wilderness).",
    ),
    "location_name": nullable(
        "string", "Name of that location (null when the gazetteer does not know the id)."
    ),
    "country_code": COUNTRY_CODE,
    "views": {"type": "integer", "minimum": 0, "description": "Total view count."},
    "image": obj(
        {
            "current": nullable(
                "string",
                "Image of the newest snapshot (null when the webcam has none). " + _IMAGE,
                format="uri",
            )
        }
    ),
}
_WEBCAM_DETAIL = {
    **_WEBCAM,
    "last_updated": nullable(
        "string",
        "Time of the newest snapshot, ISO 8601 UTC with Z (null when none).",
        format="date-time",
    ),
    "player": obj(
        {
            "embed": {
                "type": "string",
                "format": "uri",
                "description": "Signed URL "
                "on {embed_base_url} (by default this server) of the "
                "embeddable HTML player, for an iframe; carries a "
                "webcam-specific embed token.",
            },
            "expires_in": {
                "type": "integer",
                "const": 3600,
                "description": "Seconds the embed token stays valid (at least).",
            },
        }
    ),
}
EXAMPLE = {
    "public_id": "1146091676",
    "name": "Daegu – Tower",
    "latitude": 35.91421,
    "longitude": 128.53819,
    "location_public_id": "1835329",
    "location_name": "Daegu",
    "country_code": "KR",
    "views": 1063859,
    "image": {
        "current": "https://api.example.org/cdn/webcams/1146091676/"
        "2026-11-23T05:40:43Z.svg?expires=1795416900&kid=k1&sig=NaVy"
    },
}

PUBLIC_ID = param(
    "public_id",
    "path",
    "Webcam public id. A malformed id is 400, an unknown one 404.",
    {"type": "string", "pattern": PUBLIC_ID_PATTERN},
)
RANGE = param(
    "range",
    "query",
    "`24h`: every snapshot captured in the last 24 hours (from now "
    "minus 24 h to now, both included); `30d`: for each of the last 30 local "
    "calendar days of the webcam's timezone, the snapshot closest to 12:00 local time "
    "(ties: the earlier one); days without snapshots are skipped. The 30 days end "
    "today once today's pick is final (a snapshot captured at or after local noon "
    "exists), else yesterday. "
    "Snapshots are ordered oldest first.",
    {"type": "string", "enum": ["24h", "30d"], "default": "24h"},
)
BBOX_TEXT = (
    "Bounding box `min_lat,min_lng,max_lat,max_lng` in decimal degrees, edges "
    "included; min_lat must not exceed max_lat (400 otherwise); min_lng greater than "
    "max_lng means the box crosses the antimeridian."
)
BBOX = {"type": "string", "pattern": f"^{NUMBER},{NUMBER},{NUMBER},{NUMBER}$"}
WEBCAM_404 = "No served webcam has this public id (unknown, or inactive in the catalog)."
WEBCAM_400 = "Malformed public_id, or an unknown range."


def paths() -> dict:
    """The paths of docs/api/webcams.md, the image host's included."""
    down = unavailable("Webcam")
    return {
        "/webcams": {"get": _listing(down)},
        "/webcams/token": {
            "post": operation(
                "createWebcamToken",
                "webcams",
                "Create a clusters token",
                "A signed token for GET /webcams/clusters (purpose `clusters`, subject an opaque id "
                "of the key, keyed with the server's signing secret), valid 3600 seconds, so that a "
                "key stays out of client code: the server "
                "obtains a token with its key and hands it to the client, and requests a new one "
                "when expires_in nears its end. No request body. Not meant for browsers (no "
                "CORS). Calls made with a token are rate limited by the key's own limit, in a budget "
                "that all the key's tokens share and that is apart from the key's own calls.",
                [],
                responses(
                    success("A new token.", "Token", cached=False),
                    {403: "", 503: down},
                    cached=False,
                ),
                KEY,
                cached=False,
            ),
            "get": _token_get(),
        },
        "/webcams/clusters": {"get": _clusters(down)},
        "/webcams/embed/{public_id}": {"get": _embed(down)},
        "/webcams/{public_id}/snapshots": {
            "get": operation(
                "listWebcamSnapshots",
                "webcams",
                "Webcam snapshot history",
                "Snapshots of one webcam, oldest first, each with a signed image link. " + LINKS,
                [PUBLIC_ID, RANGE],
                responses(
                    success("The snapshots.", "SnapshotList"),
                    {400: WEBCAM_400, 403: "", 404: WEBCAM_404, 503: down},
                ),
                KEY,
            )
        },
        "/webcams/{public_id}": {
            "get": operation(
                "getWebcam",
                "webcams",
                "Webcam detail",
                "The webcam with last_updated and player. player.embed is a signed URL for an "
                "iframe; its embed token stays valid at least player.expires_in (3600) seconds. "
                + LINKS,
                [PUBLIC_ID],
                responses(
                    success("The webcam.", "WebcamDetail"),
                    {400: "Malformed public_id.", 403: "", 404: WEBCAM_404, 503: down},
                ),
                KEY,
            )
        },
        "/cdn/webcams/{public_id}/{image}": {"get": _image(down)},
    }


def _token_get() -> dict:
    op = operation(
        "getWebcamTokenNotAllowed",
        "webcams",
        "Not allowed: tokens are made by POST",
        "Always 405 with `Allow: OPTIONS,POST`, before any key check and whether or not webcam data "
        "is loaded: this path is not a webcam's public_id. Not rate limited.",
        [],
        {"405": problem(405, "Use POST to create a token.", limited=False)},
        [],
        cached=False,
    )
    op["responses"]["405"]["headers"] = headers("Allow")
    op["x-rate-limited"] = False
    return op


def _listing(down: str) -> dict:
    return operation(
        "listWebcams",
        "webcams",
        "List webcams",
        "Webcams matching every given filter (filters combine with AND), one page at a time. "
        "`total` counts every match; an offset beyond it gives an empty page with the right "
        "total. Ties in `sort` are broken by public_id (ascending in both orders), so pages "
        "never overlap or skip. Inactive webcams are never listed. " + LINKS,
        [
            param("bbox", "query", BBOX_TEXT, BBOX, example="45.8,5.9,47.8,10.5"),
            param(
                "nearby",
                "query",
                "Proximity `lat,lng,radius_km`: webcams within the radius "
                "(great-circle distance, haversine, Earth radius 6371.0088 km, edge included); "
                "radius in (0, 1000] km.",
                {"type": "string", "pattern": f"^{NUMBER},{NUMBER},{NUMBER}$"},
                example="47.37,8.54,25",
            ),
            param(
                "country",
                "query",
                "ISO 3166-1 alpha-2 code, case-insensitive. A code that "
                "is not an ISO 3166-1 country is 400; a country without webcams gives an empty "
                "page.",
                {"type": "string", "pattern": COUNTRY},
                example="CH",
            ),
            param(
                "location",
                "query",
                "Location public id (as in /geocoding/lookup?id=): webcams linked to that place.",
                {"type": "string", "pattern": LOCATION_ID},
                example="2657896",
            ),
            limit(50, 200, "Results per page"),
            param(
                "offset",
                "query",
                "Results to skip: a non-negative integer of up to 18 "
                "digits; beyond `total` the page is empty.",
                {"type": "integer", "minimum": 0, "maximum": 10**18 - 1, "default": 0},
            ),
            param(
                "sort",
                "query",
                "`views`: most viewed first; `views_asc`: least viewed first.",
                {"type": "string", "enum": ["views", "views_asc"], "default": "views"},
            ),
        ],
        responses(
            success("One page of webcams.", "WebcamList"),
            {
                400: "Invalid parameters, e.g. a malformed bounding box, a radius outside (0, "
                "1000] or a limit above 200.",
                403: "",
                503: down,
            },
        ),
        KEY,
    )


def _clusters(down: str) -> dict:
    return operation(
        "getWebcamClusters",
        "webcams",
        "Webcam map clusters",
        "Webcams in the bbox grouped into the cells of a Web Mercator grid whose level is "
        "zoom + 2 (cells of 64 pixels on a 256-pixel tile map), so that fewer, larger cells "
        "appear at low zoom. Cells nest across zooms, so a lower zoom never yields more "
        "clusters for the same bbox. Only webcams inside the bbox are counted: the counts of "
        "all clusters sum to the number of webcams in the bbox. A cluster's position is the "
        "centroid (mean latitude and longitude) of its webcams; a cluster of one carries the "
        "full webcam object. Clusters come in no particular order. The answer is not capped: "
        "a bbox far larger than the map a zoom is meant for (the whole world at zoom 18) "
        "returns nearly every webcam as a cluster of one (megabytes); ask with the viewport "
        "actually shown. Calls with a token have a rate-limit budget of their API key's size, "
        "shared by all its tokens and apart from the key's own calls (visitors cannot use up "
        "the key's budget); a token whose key was removed, a valid token beside an invalid "
        "API key, or an invalid token beside a valid key (every credential sent must be valid) "
        "is 403. Needs an API key or "
        "a token from POST /webcams/token in `token` (either is enough). " + LINKS,
        [
            param("bbox", "query", BBOX_TEXT, BBOX, True, example="45.8,5.9,47.8,10.5"),
            param(
                "zoom",
                "query",
                "Map zoom level, 1 to 18; outside is 400.",
                {"type": "integer", "minimum": 1, "maximum": 18},
                True,
                example=8,
            ),
        ],
        responses(
            success("The clusters.", "ClusterList"),
            {
                400: "bbox or zoom missing or invalid.",
                403: "Neither a valid API key nor a valid token, or a credential sent is not "
                "valid: the key is invalid, or the token is expired, tampered, malformed, "
                "issued for another purpose or for a key since removed (refused beside a "
                "valid key too). Refusals count against a budget per client address (the "
                "default limit); past it they are 429.",
                503: down,
            },
        ),
        KEY + [{"ClustersToken": []}],
    )


def _embed(down: str) -> dict:
    op = operation(
        "getWebcamEmbed",
        "webcams",
        "Embeddable snapshot player",
        "A self-contained HTML page (no external script, style or font; a Content-Security-"
        "Policy allows only its own inline style and script and images from {cdn_url}) for "
        "an iframe: a timeline slider over the snapshots, play/pause for automatic playback "
        'with the next frames preloaded, relative time labels ("3 h ago") with the local '
        "time, a dark theme, a layout from 320 px wide, keyboard control (Space or K play and "
        "pause, arrow keys step, Home and End jump; the slider and button are focusable). "
        "Clients do not build this URL: it comes from player.embed of the detail response and "
        "carries a webcam-specific `token`; the page's image links expire with it, and the "
        "page then says that the link has expired. Errors are problem+json, or a small HTML "
        "page with the same status when the client prefers text/html (as a browser loading "
        "an iframe does). Not cached (`no-store`) and without an ETag: the page holds the time "
        "it was made. A malformed public_id is 400 before the token is checked.",
        [PUBLIC_ID, RANGE],
        responses(
            success("The player page.", {"type": "string"}, media="text/html", cached=False),
            {
                400: WEBCAM_400,
                403: "Token missing, expired, tampered, malformed, or issued for another webcam or "
                "purpose.",
                404: WEBCAM_404,
                503: down,
            },
            cached=False,
        ),
        [{"EmbedToken": []}],
        cached=False,
    )
    for status in ("403", "404"):
        op["responses"][status]["content"]["text/html"] = {"schema": {"type": "string"}}
    return op


def _image(down: str) -> dict:
    op = operation(
        "getWebcamImage",
        "webcams",
        "Snapshot image (built-in image host)",
        "The default {cdn_url}: serves the images that image links point to. Generated "
        "catalogs' images are rendered on demand as SVG (a sky for the local time and the "
        "cloud cover, the camera's name and the capture time); images of a real catalog are "
        "the files it supplied, copied into the data artifact. A malformed public_id is 400; "
        "then the link's signature is checked (403), then the snapshot is looked up (404). "
        "Cache-Control is `public` with a max-age up to the link's expiry, and `immutable` for "
        "a catalog's files (a rendered sky follows the forecast's cloud cover). Not rate "
        "limited (a player loads many frames). Catalog images that are object keys on an "
        "external CDN are linked there instead (`{cdn_url}/{key}?webcam=…&expires=…&kid=…"
        "&sig=…`).",
        [
            PUBLIC_ID,
            param(
                "image",
                "path",
                "Capture time and type: `2026-01-31T12:00:00Z.svg`.",
                {
                    "type": "string",
                    "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
                    r"[0-9]{2}Z\.[a-z]{3,4}$",
                },
            ),
            param("expires", "query", "Unix time the link expires.", {"type": "integer"}, True),
            param("kid", "query", "Id of the signing key.", {"type": "string"}, True),
            param("sig", "query", "HMAC-SHA256 signature (base64url).", {"type": "string"}, True),
        ],
        responses(
            {
                "description": "The image.",
                "headers": {"Cache-Control": ref("headers", "Cache-Control")},
                "content": {
                    media: {"schema": {"type": "string", "format": "binary"}}
                    for media in ("image/svg+xml", "image/jpeg", "image/png", "image/webp")
                },
            },
            {
                400: "Malformed public_id, or expires, kid or sig given more than once.",
                403: "Missing, malformed, expired or invalid signature.",
                404: "No such snapshot or image.",
                503: down,
            },
            limited=False,
        ),
        [],
    )
    op["x-rate-limited"] = False
    return op


SCHEMAS = {
    "Webcam": obj(dict(_WEBCAM), description="A webcam in lists and clusters.", examples=[EXAMPLE]),
    "WebcamDetail": obj(_WEBCAM_DETAIL, description="A webcam with last_updated and player."),
    "WebcamList": envelope(
        "Webcam",
        description="One page of webcams.",
        total={"type": "integer", "minimum": 0, "description": "Matches across all pages."},
    ),
    "Cluster": obj(
        {
            "latitude": {**LAT, "description": "Centroid latitude."},
            "longitude": {**LON, "description": "Centroid longitude."},
            "count": {"type": "integer", "minimum": 1},
            "webcam": ref("schemas", "Webcam"),
        },
        required=["latitude", "longitude", "count"],
        description="`webcam` is present exactly when count is 1.",
    ),
    "ClusterList": envelope(
        "Cluster", key="clusters", description="Counts sum to the number of webcams in the bbox."
    ),
    "Snapshot": obj(
        {
            "captured_at": {
                "type": "string",
                "format": "date-time",
                "description": "ISO 8601 UTC with Z.",
            },
            "image_url": {"type": "string", "format": "uri", "description": _IMAGE},
        }
    ),
    "SnapshotList": envelope("Snapshot", key="snapshots", description="Oldest first."),
    "Token": obj(
        {
            "token": {"type": "string", "description": "Opaque signed token."},
            "expires_in": {"type": "integer", "const": 3600, "description": "Seconds of validity."},
        }
    ),
}
