"""US National Weather Service active alerts, with the geometry of the zones they name.

    GET {base}/alerts/active              Accept: application/geo+json
    GET {base}/zones/{type}/{zone id}     (forecast, county, fire, ... zones)

The API refuses requests without a User-Agent (403) and asks for one that names the
application and a contact; the downloader's names both, the contact being
WEATHERAPI_OPERATOR_CONTACT, which this source therefore requires. /alerts/active is one
GeoJSON FeatureCollection (asked for conditionally: 304 when nothing changed). An alert with
no geometry names the zones it covers (`affectedZones` URLs, else `geocode.UGC` codes: a "Z"
code is a forecast zone, a "C" one a county): their outlines are fetched once into
datasets/alerts-cache/nws/zones/, simplified to ZONE_TOLERANCE_DEG, re-asked for after
ZONE_MAX_AGE_S, and written into the alert as a MultiPolygon (`geometrySource`:
`affectedZones`). The collection goes to datasets/alerts/nws/active.geojson in one rename.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from pipeline.common.simplify import simplify_ring
from pipeline.fetch import verify
from pipeline.fetch.files import replace_if_changed
from pipeline.fetch.http import Downloader, DownloadError, public_url
from pipeline.fetch.source import FetchError
from pipeline.fetch.useragent import CONTACT_ENV

log = logging.getLogger("pipeline.fetch")
API = "https://api.weather.gov"
GEOJSON = {"Accept": "application/geo+json"}
OUTPUT = Path("alerts") / "nws" / "active.geojson"
CACHE = Path("alerts-cache") / "nws"
ZONE_MAX_AGE_S = 7 * 86400  # zone outlines change a few times a year
ZONE_TOLERANCE_DEG = 0.005  # about 500 m: plenty to place a point in an alert
MAX_ZONES_PER_RUN = 1000  # the rest next run (those alerts are skipped meanwhile)
UGC_KINDS = {"Z": "forecast", "C": "county"}


def require_contact() -> None:
    """The NWS asks every client to name a contact in its User-Agent."""
    if not os.environ.get(CONTACT_ENV, "").strip():
        raise FetchError(
            f"api.weather.gov requires a User-Agent naming a contact: set "
            f"{CONTACT_ENV} (an email address or URL)"
        )


def zone_refs(feature: dict) -> list[str]:
    """The zones an alert names, as "type/ID" ("forecast/KSZ001")."""
    props = feature.get("properties") or {}
    refs = []
    for url in props.get("affectedZones") or []:
        path = urlsplit(str(url)).path
        if "/zones/" in path:
            refs.append(path.split("/zones/", 1)[1].strip("/"))
    if not refs:
        for code in (props.get("geocode") or {}).get("UGC") or []:
            kind = UGC_KINDS.get(str(code)[2:3])
            if kind:
                refs.append(f"{kind}/{code}")
    return [r for r in dict.fromkeys(refs) if _safe(r)]


def _safe(ref: str) -> bool:
    """A zone reference usable as a cache path: type/ID of letters and digits."""
    parts = ref.split("/")
    return len(parts) == 2 and all(p.isalnum() for p in parts)


async def fetch(http: Downloader, base: str, datasets: Path, notes: list[str]) -> bool:
    """Bring the active alerts into datasets/alerts/nws/; True when the file changed."""
    require_contact()
    cache = datasets / CACHE
    raw = cache / "active.json"
    output = datasets / OUTPUT
    transfer = await http.download(
        f"{base}/alerts/active",
        raw,
        conditional=True,
        headers=GEOJSON,
        verify=verify.json_document(),
    )
    if not transfer.changed and output.exists():
        return False
    collection = json.loads(raw.read_bytes())
    features = [f for f in collection.get("features") or [] if isinstance(f, dict)]
    wanted = sorted({ref for f in features if not f.get("geometry") for ref in zone_refs(f)})
    outlines = await zone_outlines(http, base, cache / "zones", wanted, notes)
    placed = 0
    for feature in features:
        if feature.get("geometry"):
            continue
        polygons = [p for ref in zone_refs(feature) for p in outlines.get(ref, [])]
        if polygons:
            feature["geometry"] = {"type": "MultiPolygon", "coordinates": polygons}
            feature.setdefault("properties", {})["geometrySource"] = "affectedZones"
            placed += 1
    notes.append(f"nws: {len(features)} alerts, {placed} placed by the outlines of their zones")
    data = json.dumps(
        {"type": "FeatureCollection", "updated": collection.get("updated"), "features": features},
        separators=(",", ":"),
    ).encode()
    return replace_if_changed(output, data)


async def zone_outlines(
    http: Downloader, base: str, folder: Path, refs: list[str], notes: list[str]
) -> dict[str, list]:
    """Each zone's polygons ([[ring of [lon, lat]], ...], simplified) from the cache, fetching
    those missing or older than ZONE_MAX_AGE_S (MAX_ZONES_PER_RUN at most)."""
    stale = [r for r in refs if _age_s(folder / f"{r}.json") > ZONE_MAX_AGE_S]
    if len(stale) > MAX_ZONES_PER_RUN:
        notes.append(f"nws: {len(stale) - MAX_ZONES_PER_RUN} zone outlines left for the next run")
        stale = stale[:MAX_ZONES_PER_RUN]
    results = await asyncio.gather(
        *(_fetch_zone(http, base, folder, r) for r in stale), return_exceptions=True
    )
    failed = [r for r, result in zip(stale, results) if isinstance(result, BaseException)]
    if failed:
        notes.append(
            f"nws: {len(failed)} zone outlines could not be fetched (e.g. "
            f"{failed[0]}: {results[stale.index(failed[0])]}); cached ones are used"
        )
    return {ref: rings for ref in refs if (rings := _outline(folder, ref)) is not None}


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


async def _fetch_zone(http: Downloader, base: str, folder: Path, ref: str) -> None:
    """One zone's GeoJSON Feature into the cache (its age restarts when it is unchanged)."""
    dest = folder / f"{ref}.json"
    try:
        transfer = await http.download(
            f"{base}/zones/{ref}",
            dest,
            conditional=True,
            headers=GEOJSON,
            verify=verify.json_document(),
        )
    except DownloadError as exc:
        if exc.status in (404, 410):
            raise FetchError(f"{public_url(base)}/zones/{ref}: no such zone") from None
        raise
    if not transfer.changed:
        os.utime(dest)


def _outline(folder: Path, ref: str) -> list | None:
    """The cached zone's polygons, simplified (memoised beside it while it is unchanged)."""
    raw, simple = folder / f"{ref}.json", folder / f"{ref}.rings.json"
    try:
        raw_mtime = raw.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    try:
        if simple.stat().st_mtime_ns >= raw_mtime:
            return json.loads(simple.read_bytes())
    except (FileNotFoundError, ValueError):
        pass
    geometry = (json.loads(raw.read_bytes()) or {}).get("geometry") or {}
    kind, coords = geometry.get("type"), geometry.get("coordinates") or []
    polygons = [coords] if kind == "Polygon" else coords if kind == "MultiPolygon" else []
    rings = [
        [
            simplify_ring(np.asarray(ring, dtype=float), ZONE_TOLERANCE_DEG).round(5).tolist()
            for ring in polygon
            if len(ring) >= 4
        ]
        for polygon in polygons
    ]
    rings = [polygon for polygon in rings if polygon]
    replace_if_changed(simple, json.dumps(rings).encode())
    os.utime(simple)  # newer than the raw file: memoised until that changes
    return rings
