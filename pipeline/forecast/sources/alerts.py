"""Weather alerts: NWS-style GeoJSON collections and CAP 1.2 or 1.1 XML files, normalised.

Each alert keeps its polygons (lists of rings of (lat, lon) vertices); an alert without a
polygon (NWS alerts that name forecast zones only) cannot be placed and is counted as skipped.
Only actual alerts are kept (status Actual; cancellations dropped).
"""

from __future__ import annotations

import json
import logging
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path

import numpy as np

from contract import EARTH_RADIUS_KM
from contract import Forecast as F
from pipeline.common.io import InputError

log = logging.getLogger("pipeline.forecast")
# CAP 1.1 differs from 1.2 in nothing read here (info, area, polygon, circle) but its
# namespace, and real feeds still publish it.
CAP_NAMESPACES = ("urn:oasis:names:tc:emergency:cap:1.2", "urn:oasis:names:tc:emergency:cap:1.1")
CIRCLE_VERTICES = 36
# GeoJSON geometries without an area: an alert having only these cannot be placed.
AREALESS = ("Point", "MultiPoint", "LineString", "MultiLineString")


@dataclass
class Alert:
    """One alert, normalised; polygons[p] is a list of rings, each an (n, 2) lat/lon array."""

    id: str
    title: str
    description: str
    severity: str
    onset: int
    expires: int | None
    regions: list[str]
    uri: str | None
    source: str
    polygons: list[list[np.ndarray]] = field(default_factory=list)


@dataclass
class Alerts:
    """Everything read from the alert files."""

    alerts: list[Alert]
    files: list[Path]
    skipped: int  # alerts without an area that can be placed


def read(folder: Path) -> Alerts:
    """Read every *.json/*.geojson and *.xml/*.cap file under the folder."""
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix.lower() in (".json", ".geojson", ".xml", ".cap")
    )
    alerts, skipped = [], 0
    for path in files:
        found, dropped = (
            _read_geojson(path) if path.suffix.lower() in (".json", ".geojson") else _read_cap(path)
        )
        alerts.extend(found)
        skipped += dropped
    unique = {}
    for alert in sorted(alerts, key=lambda a: (a.onset, a.id)):
        unique.setdefault(alert.id, alert)  # the same alert in two files counts once
    log.info(
        "alerts: %d placed, %d without a polygon (none, or a point or line) skipped",
        len(unique),
        skipped,
    )
    return Alerts(alerts=list(unique.values()), files=files, skipped=skipped)


def _text(raw) -> str | None:
    """A property as text (feeds put numbers where strings belong), None when absent."""
    return None if raw is None or raw == "" else str(raw)


def _severity(raw: str | None) -> str:
    value = str(raw or "Unknown").strip().title()
    return value if value in F.SEVERITIES else "Unknown"


def _time(raw: str | None, path: Path, what: str) -> int | None:
    if not raw:
        return None
    if not isinstance(raw, str):
        raise InputError(path, f"{what} {raw!r} is not an ISO 8601 time string")
    try:
        parsed = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(path, f"{what} {raw!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise InputError(path, f"{what} {raw!r} has no UTC offset")
    return int(parsed.timestamp())


# ---- NWS GeoJSON ------------------------------------------------------------------------


def _read_geojson(path: Path) -> tuple[list[Alert], int]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"not valid JSON: {exc}") from None
    features = doc.get("features") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and doc.get("type") == "Feature":
        features = [doc]
    if not isinstance(features, list):
        raise InputError(path, "not a GeoJSON FeatureCollection of alerts")
    alerts, skipped = [], 0
    for feature in features:
        if not isinstance(feature, dict) or not isinstance(feature.get("properties") or {}, dict):
            raise InputError(path, "a feature is not a GeoJSON Feature object with properties")
        props = feature.get("properties") or {}
        if props.get("status", "Actual") != "Actual" or props.get("messageType") == "Cancel":
            continue
        polygons = _geojson_polygons(feature.get("geometry"), path)
        if not polygons:
            skipped += 1
            continue
        onset = (
            _time(props.get("onset"), path, "onset")
            or _time(props.get("effective"), path, "effective")
            or _time(props.get("sent"), path, "sent")
        )
        if onset is None:
            raise InputError(path, f"alert {props.get('id')!r} has no onset, effective or sent")
        description = _text(props.get("description")) or ""
        if props.get("instruction"):
            description = f"{description}\n\n{props['instruction']}".strip()
        alerts.append(
            Alert(
                id=str(props.get("id") or feature.get("id") or f"{path.name}#{len(alerts)}"),
                title=str(props.get("event") or props.get("headline") or "Weather alert"),
                description=description,
                severity=_severity(props.get("severity")),
                onset=onset,
                expires=(
                    _time(props.get("ends"), path, "ends")
                    or _time(props.get("expires"), path, "expires")
                ),
                regions=[
                    r.strip() for r in str(props.get("areaDesc") or "").split(";") if r.strip()
                ],
                uri=_text(props.get("@id") or props.get("web"))
                or (feature.get("id") if str(feature.get("id", "")).startswith("http") else None),
                source=path.name,
                polygons=polygons,
            )
        )
    return alerts, skipped


def _geojson_polygons(geometry: dict | None, path: Path) -> list[list[np.ndarray]]:
    """The polygons of a geometry; points and lines have no area and give none (the alert
    is then skipped and counted, like one without a geometry)."""
    if not geometry:
        return []
    if not isinstance(geometry, dict):
        raise InputError(path, f"alert geometry {str(geometry)[:60]!r} is not a GeoJSON object")
    kind, coords = geometry.get("type"), geometry.get("coordinates")
    if kind in AREALESS:
        return []
    if kind == "GeometryCollection" and isinstance(geometry.get("geometries", []), list):
        return [p for g in geometry.get("geometries", []) for p in _geojson_polygons(g, path)]
    if kind == "Polygon" and isinstance(coords, list):
        return [rings for rings in [_rings(coords, path)] if rings]
    if kind == "MultiPolygon" and isinstance(coords, list):
        return [rings for rings in (_rings(polygon, path) for polygon in coords) if rings]
    raise InputError(
        path,
        f"alert geometry {str(kind)[:40]!r} with coordinates "
        f"{str(coords)[:60]!r} is not a GeoJSON geometry",
    )


def _rings(rings: list, path: Path) -> list[np.ndarray]:
    if not isinstance(rings, list):
        raise InputError(path, f"polygon {str(rings)[:60]!r} is not a list of rings")
    out = []
    for ring in rings:
        try:
            array = np.asarray(ring, dtype=np.float64)
        except (TypeError, ValueError):
            array = np.zeros((0, 0))
        if array.ndim != 2 or array.shape[0] < 3 or array.shape[1] < 2:
            raise InputError(
                path, f"polygon ring {str(ring)[:60]!r} is not three or more [lon, lat] positions"
            )
        out.append(_closed(array[:, [1, 0]], path))  # GeoJSON is lon, lat
    return out


def _closed(ring: np.ndarray, path: Path) -> np.ndarray:
    """A ring of (lat, lon) vertices, checked, continuous across the antimeridian and closed."""
    if not np.isfinite(ring).all() or (np.abs(ring[:, 0]) > 90).any():
        raise InputError(
            path,
            f"polygon ring {ring[:3].tolist()!r}... has a position that is "
            "not a finite latitude within ±90 and longitude",
        )
    # A ring crossing the antimeridian jumps by ~360° between neighbours (179 -> -179):
    # unwrapped it runs on past ±180 (179 -> 181), as the server's polygon test expects;
    # taken as written it would cover the other half of the globe.
    ring = np.column_stack([ring[:, 0], np.unwrap(ring[:, 1], period=360.0)])
    return ring if np.array_equal(ring[0], ring[-1]) else np.vstack([ring, ring[:1]])


# ---- CAP 1.2 and 1.1 XML -------------------------------------------------------------


def _read_cap(path: Path) -> tuple[list[Alert], int]:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise InputError(path, f"not well-formed XML: {exc}") from None
    alerts, skipped = [], 0
    for element, namespace in _cap_alerts(root, path):
        ns = {"cap": namespace}
        text = partial(_cap_text, ns)
        if text(element, "status") != "Actual" or text(element, "msgType") == "Cancel":
            continue
        alert = _cap_alert(element, ns, text, path, f"{path.name}#{len(alerts)}")
        if alert is None:
            skipped += 1
        else:
            alerts.append(alert)
    return alerts, skipped


def _cap_text(ns: dict, element: ET.Element, name: str) -> str:
    """The text of `element`'s child `name` in namespace ns["cap"], "" when absent."""
    return (element.findtext(f"cap:{name}", default="", namespaces=ns) or "").strip()


def _cap_alerts(root: ET.Element, path: Path) -> list[tuple[ET.Element, str]]:
    """The CAP alerts of a file with the namespace of each: the root element, or the alerts
    in it (a feed). An alert of another CAP version is refused: read with these names it
    would have no status and be dropped without a word."""
    namespace, _, local = (
        root.tag[1:].partition("}") if root.tag.startswith("{") else ("", "", root.tag)
    )
    if local == "alert":
        if namespace not in CAP_NAMESPACES:
            raise InputError(
                path,
                f"an alert in namespace {namespace!r}, not CAP 1.2 or 1.1 "
                f"({' or '.join(CAP_NAMESPACES)})",
            )
        return [(root, namespace)]
    found = [(element, ns) for ns in CAP_NAMESPACES for element in root.iter(f"{{{ns}}}alert")]
    if not found:
        log.warning(
            "alerts: %s has no CAP 1.2 or 1.1 alert (its root element is %s); "
            "nothing is read from it",
            path,
            root.tag,
        )
    return found


def _cap_alert(alert: ET.Element, ns: dict, text, path: Path, fallback_id: str) -> Alert | None:
    """One actual CAP alert, in English if it has an info in English; None without an area."""
    infos = alert.findall("cap:info", ns)
    if not infos:
        raise InputError(path, f"CAP alert {text(alert, 'identifier')!r} has no info")
    info = next((i for i in infos if text(i, "language").lower().startswith("en")), infos[0])
    polygons, regions = [], []
    for area in info.findall("cap:area", ns):
        regions.append(text(area, "areaDesc"))
        polygons += [[_cap_polygon(p.text or "", path)] for p in area.findall("cap:polygon", ns)]
        polygons += [[_cap_circle(c.text or "", path)] for c in area.findall("cap:circle", ns)]
    if not polygons:
        return None
    onset = (
        _time(text(info, "onset"), path, "onset")
        or _time(text(info, "effective"), path, "effective")
        or _time(text(alert, "sent"), path, "sent")
    )
    if onset is None:
        raise InputError(path, "CAP alert without onset, effective or sent time")
    description = "\n\n".join(
        t for t in (text(info, "description"), text(info, "instruction")) if t
    )
    return Alert(
        id=text(alert, "identifier") or fallback_id,
        title=text(info, "event") or text(info, "headline") or "Weather alert",
        description=description,
        severity=_severity(text(info, "severity")),
        onset=onset,
        expires=_time(text(info, "expires"), path, "expires"),
        regions=[r for r in regions if r],
        uri=text(info, "web") or None,
        source=path.name,
        polygons=polygons,
    )


def _pairs(raw: str, path: Path) -> np.ndarray:
    try:
        points = [tuple(float(v) for v in pair.split(",")) for pair in raw.split()]
    except ValueError:
        raise InputError(path, f"CAP polygon {raw[:60]!r} is not 'lat,lon lat,lon ...'") from None
    if any(len(p) != 2 for p in points):
        raise InputError(path, f"CAP polygon {raw[:60]!r} is not 'lat,lon lat,lon ...'")
    return np.asarray(points, dtype=np.float64)


def _cap_polygon(raw: str, path: Path) -> np.ndarray:
    ring = _pairs(raw, path)
    if len(ring) < 3:
        raise InputError(path, "a CAP polygon needs at least three points")
    return _closed(ring, path)


def _cap_circle(raw: str, path: Path) -> np.ndarray:
    """A CAP circle ('lat,lon radius_km') as a polygon of CIRCLE_VERTICES points; around a
    pole it contains, the cap reaching to the pole's latitude at every longitude."""
    try:
        centre, radius = raw.split()
        lat, lon = (float(v) for v in centre.split(","))
        radius_km = float(radius)
    except ValueError:
        raise InputError(path, f"CAP circle {raw[:60]!r} is not 'lat,lon radius'") from None
    if not (abs(lat) <= 90 and math.isfinite(lon) and 0 <= radius_km < EARTH_RADIUS_KM):
        raise InputError(path, f"CAP circle {raw[:60]!r} is not a place and a radius in km")
    lon = (lon + 180.0) % 360.0 - 180.0  # the server tries a point's lon and lon ± 360
    d = radius_km / EARTH_RADIUS_KM
    if math.radians(90.0 - abs(lat)) < d:
        return _polar_cap(lat, lon, d)
    return _closed(_circle_points(lat, lon, d), path)


def _circle_points(lat: float, lon: float, d: float) -> np.ndarray:
    """CIRCLE_VERTICES (lat, lon) points at angular distance `d` from the centre, by bearing."""
    bearings = np.radians(np.linspace(0, 360, CIRCLE_VERTICES, endpoint=False))
    p1, l1 = math.radians(lat), math.radians(lon)
    p2 = np.arcsin(math.sin(p1) * math.cos(d) + math.cos(p1) * math.sin(d) * np.cos(bearings))
    l2 = l1 + np.arctan2(
        np.sin(bearings) * math.sin(d) * math.cos(p1), math.cos(d) - math.sin(p1) * np.sin(p2)
    )
    return np.column_stack([np.degrees(p2), np.degrees(l2)])


def _polar_cap(lat: float, lon: float, d: float) -> np.ndarray:
    """A circle containing a pole as a ring over one full turn of longitude, closed beyond the
    pole: its boundary winds once around the pole, so as a plain ring of its points it would
    enclose next to nothing (the points near the pole fell outside it)."""
    if abs(lat) == 90.0:  # every bearing from a pole is along a meridian: a parallel
        lons = np.linspace(-180.0, 180.0, CIRCLE_VERTICES, endpoint=False)
        points = np.column_stack(
            [np.full(CIRCLE_VERTICES, math.copysign(90.0 - math.degrees(d), lat)), lons]
        )
    else:
        points = _circle_points(lat, lon, d)
    points[:, 1] = np.unwrap(points[:, 1], period=360.0)
    points = points[np.argsort(points[:, 1], kind="stable")]  # monotonic: one turn
    points[:, 1] -= 360.0 * math.floor((points[0, 1] + 180.0) / 360.0)
    # Closed a degree past the pole: the server's test is half-open in latitude, and the pole
    # itself on the ring's edge would fall outside it.
    pole = math.copysign(91.0, lat)
    first_lat, west = points[0]
    return np.vstack(
        [points, [[first_lat, west + 360.0], [pole, west + 360.0], [pole, west], [first_lat, west]]]
    )
