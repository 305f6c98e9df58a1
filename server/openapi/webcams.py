"""OpenAPI paths and schemas of webcams (interface.md 4.8 to 4.13)."""

from __future__ import annotations

from server.openapi.parts import (
    COUNTRY, COUNTRY_CODE, KEY, LAT, LOCATION_ID, LON, NUMBER, PENDING, envelope, limit,
    nullable, obj, operation, param, ref, responses, success, unavailable,)

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


def paths() -> dict:
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



SCHEMAS = {
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
}
