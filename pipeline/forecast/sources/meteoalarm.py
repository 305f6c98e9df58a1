"""MeteoAlarm (EUMETNET): the warnings of the European national weather services, per country.

    GET {base}/feeds/meteoalarm-legacy-atom-{country}     Atom; one entry per warning and area
    GET <the entry's link of type application/cap+xml>    the warning as CAP 1.2 XML

Each feed is asked for conditionally (304: the country is unchanged). Entries name their CAP
document by a link (several entries, one per area, may name one document); every document is
fetched once into datasets/alerts-cache/meteoalarm/cap/ (a CAP message never changes: an
update is a new message), and a country's current warnings are written together as one XML
document of CAP alerts, datasets/alerts/meteoalarm/{country}.xml, in one rename: a build sees
a country's previous warnings or its new ones, never half.

Most members give areas as geocodes only (EMMA_ID, NUTS3, ...), no polygon. Their outlines
are not published in a form this source could fetch from MeteoAlarm itself: with
WEATHERAPI_METEOALARM_GEOCODES_URL set (or a file placed at
datasets/alerts-cache/meteoalarm/geocodes.json), a GeoJSON FeatureCollection whose features
carry `properties.code` (as the geocodes file MeteoAlarm gives its members), an area without a
polygon gets its geocodes' outlines as CAP polygons; else such warnings are counted as skipped
by the build (the manifest's `skipped_without_polygon`), as before.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from pipeline.common.simplify import simplify_ring
from pipeline.fetch import verify
from pipeline.fetch.files import remove_stale, replace_if_changed
from pipeline.fetch.http import Downloader

log = logging.getLogger("pipeline.fetch")
FEEDS = "https://feeds.meteoalarm.org"
ATOM = "{http://www.w3.org/2005/Atom}"
CAP_NAMESPACES = ("urn:oasis:names:tc:emergency:cap:1.2", "urn:oasis:names:tc:emergency:cap:1.1")
CAP_ROOTS = tuple(f"{{{ns}}}alert" for ns in CAP_NAMESPACES)
CAP_TYPE = "application/cap+xml"
OUTPUT = Path("alerts") / "meteoalarm"
CACHE = Path("alerts-cache") / "meteoalarm"
GEOCODES_ENV = "WEATHERAPI_METEOALARM_GEOCODES_URL"
GEOCODES_MAX_AGE_S = 7 * 86400
TOLERANCE_DEG = 0.005
# The members' feeds (ISO 3166-1 code: the feed's name).
COUNTRIES = {
    "AT": "austria",
    "BA": "bosnia-herzegovina",
    "BE": "belgium",
    "BG": "bulgaria",
    "CH": "switzerland",
    "CY": "cyprus",
    "CZ": "czechia",
    "DE": "germany",
    "DK": "denmark",
    "EE": "estonia",
    "ES": "spain",
    "FI": "finland",
    "FR": "france",
    "GB": "united-kingdom",
    "GR": "greece",
    "HR": "croatia",
    "HU": "hungary",
    "IE": "ireland",
    "IL": "israel",
    "IS": "iceland",
    "IT": "italy",
    "LT": "lithuania",
    "LU": "luxembourg",
    "LV": "latvia",
    "MD": "moldova",
    "ME": "montenegro",
    "MK": "north-macedonia",
    "MT": "malta",
    "NL": "netherlands",
    "NO": "norway",
    "PL": "poland",
    "PT": "portugal",
    "RO": "romania",
    "RS": "serbia",
    "SE": "sweden",
    "SI": "slovenia",
    "SK": "slovakia",
}

for _prefix, _ns in (("cap", CAP_NAMESPACES[0]), ("cap11", CAP_NAMESPACES[1])):
    ET.register_namespace(_prefix, _ns)


def feed_url(base: str, country: str) -> str:
    return f"{base}/feeds/meteoalarm-legacy-atom-{country}"


def cap_links(feed: Path) -> list[str]:
    """The CAP documents the feed's entries link to, each once, in feed order (the query
    string, which only picks an info, area or geocode of the document, left off)."""
    links = []
    for entry in ET.parse(feed).getroot().iter(f"{ATOM}entry"):
        for link in entry.iter(f"{ATOM}link"):
            if link.get("type") == CAP_TYPE and link.get("href"):
                parts = urlsplit(link.get("href"))
                links.append(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))
    return list(dict.fromkeys(links))


def cache_name(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:32] + ".xml"


async def fetch_country(
    http: Downloader, base: str, country: str, datasets: Path, outlines: dict[str, list]
) -> tuple[bool, set[str]]:
    """One country's warnings into datasets/alerts/meteoalarm/{country}.xml: (changed, the
    cached CAP documents it uses)."""
    cache = datasets / CACHE
    feed = cache / "feeds" / f"{country}.atom"
    output = datasets / OUTPUT / f"{country}.xml"
    transfer = await http.download(
        feed_url(base, country), feed, conditional=True, verify=verify.xml_document(f"{ATOM}feed")
    )
    links = cap_links(feed)
    names = [cache_name(url) for url in links]
    if not transfer.changed and output.exists():
        return False, set(names)
    folder = cache / "cap"
    missing = [(url, name) for url, name in zip(links, names) if not (folder / name).exists()]
    results = await asyncio.gather(
        *(
            http.download(url, folder / name, verify=verify.xml_document(*CAP_ROOTS))
            for url, name in missing
        ),
        return_exceptions=True,
    )
    for result in results:
        if isinstance(result, BaseException):  # the country keeps its previous warnings
            raise result
    root = ET.Element("alerts")
    for name in names:
        alert = ET.parse(folder / name).getroot()
        add_outlines(alert, outlines)
        root.append(alert)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return replace_if_changed(output, data), set(names)


def add_outlines(alert: ET.Element, outlines: dict[str, list]) -> None:
    """Give each area without a polygon or circle its geocodes' outlines as CAP polygons."""
    ns = alert.tag[1:].split("}")[0]
    q = f"{{{ns}}}"
    for area in alert.iter(f"{q}area"):
        if area.find(f"{q}polygon") is not None or area.find(f"{q}circle") is not None:
            continue
        codes = [(g.findtext(f"{q}value") or "").strip() for g in area.findall(f"{q}geocode")]
        rings = [ring for code in codes for ring in outlines.get(code, [])]
        at = next((i for i, child in enumerate(area) if child.tag == f"{q}geocode"), len(area))
        for ring in reversed(rings):  # CAP: polygons come before geocodes
            polygon = ET.Element(f"{q}polygon")
            polygon.text = " ".join(f"{lat:.5f},{lon:.5f}" for lon, lat in ring)
            area.insert(at, polygon)


async def geocode_outlines(http: Downloader, datasets: Path, notes: list[str]) -> dict[str, list]:
    """code -> outer rings ([lon, lat] lists), from the geocodes file when there is one."""
    path = datasets / CACHE / "geocodes.json"
    url = os.environ.get(GEOCODES_ENV, "").strip()
    if url and (not path.exists() or time.time() - path.stat().st_mtime > GEOCODES_MAX_AGE_S):
        transfer = await http.download(url, path, conditional=True, verify=verify.json_document())
        if not transfer.changed:
            os.utime(path)
    if not path.exists():
        notes.append(
            f"meteoalarm: no region outlines ({GEOCODES_ENV} unset, no {path}): "
            "warnings given by geocodes only are skipped by the build"
        )
        return {}
    return await asyncio.to_thread(_read_geocodes, path)


def _read_geocodes(path: Path) -> dict[str, list]:
    outlines: dict[str, list] = {}
    for feature in json.loads(path.read_bytes()).get("features") or []:
        code = str((feature.get("properties") or {}).get("code") or "")
        geometry = feature.get("geometry") or {}
        kind, coords = geometry.get("type"), geometry.get("coordinates") or []
        polygons = [coords] if kind == "Polygon" else coords if kind == "MultiPolygon" else []
        if code:
            outlines.setdefault(code, []).extend(
                simplify_ring(np.asarray(polygon[0], dtype=float), TOLERANCE_DEG).tolist()
                for polygon in polygons
                if polygon and len(polygon[0]) >= 4
            )
    return outlines


def prune(datasets: Path, countries: list[str], used: set[str]) -> None:
    """Drop the outputs of countries no longer configured and CAP documents no feed names
    (only after every configured country's feed was read)."""
    remove_stale(datasets / OUTPUT, {f"{c}.xml" for c in countries}, ".xml")
    remove_stale(datasets / CACHE / "cap", used, ".xml")
