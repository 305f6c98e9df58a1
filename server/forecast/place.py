"""What the forecast needs to know about a coordinate: its timezone, country and elevation.

- Timezone: tzfpy (timezone-boundary-builder polygons, territorial waters included).
- Country (for units=auto): the country of that timezone in tzdata's zone.tab (each zone
  belongs to one country, and zone boundaries follow national borders); offshore zones
  (Etc/GMT+N) have none, so then the nearest gazetteer place within COUNTRY_KM decides when
  the geocoding area is loaded, else there is no country (si units).
- Elevation: that of the nearest gazetteer place that has one, if it lies within ELEVATION_KM
  (real GeoNames dumps have an elevation, or the SRTM one, for nearly every place; the
  packaged default only for airports), from the pipeline's quadtree of those places; None
  when the geocoding area is absent or no such place is near.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tzfpy import get_tz

from contract import Geocoding as G
from server.artifacts.grid import point_lon

ELEVATION_KM = G.NEAREST_ELEVATED_KM
COUNTRY_KM = 100.0


@dataclass(frozen=True)
class Place:
    """A coordinate's timezone, country and (gazetteer) elevation."""

    timezone: str
    zone: ZoneInfo
    country: str | None
    elevation_m: float | None


@lru_cache(maxsize=1)
def zone_countries() -> dict[str, str]:
    """IANA zone -> ISO country code, from tzdata's zone.tab (offline, in the tzdata package)."""
    text = files("tzdata").joinpath("zoneinfo", "zone.tab").read_text(encoding="utf-8")
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            fields = line.split("\t")
            if len(fields) >= 3:
                out[fields[2]] = fields[0]
    return out


@lru_cache(maxsize=2048)
def zone(name: str) -> ZoneInfo:
    """A ZoneInfo by name (UTC when unknown)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def timezone_of(lat: float, lon: float) -> str:
    """The IANA timezone at a coordinate (UTC when none is found); a pole's is that of
    POLE_LON, whatever the longitude asked."""
    return get_tz(point_lon(lat, lon), lat) or "UTC"


def locate(lat: float, lon: float, gazetteer, with_country: bool = True) -> Place:
    """Timezone, country and elevation of a coordinate; `gazetteer` is the loaded geocoding
    index (GeocodingIndex) or None. with_country=False (the answer's units are not "auto")
    leaves the country None and spares an offshore point its search for the nearest place."""
    tz = timezone_of(lat, lon)
    country = zone_countries().get(tz) if with_country else None
    elevation = None
    if gazetteer is not None:
        if country is None and with_country:  # offshore: the nearest place's, if it is near
            row, distance = gazetteer.nearest(lat, lon, 1)[0]
            if distance <= COUNTRY_KM:
                country = gazetteer.cc[row].as_py()
        row, distance = gazetteer.nearest_with_elevation(lat, lon)
        if distance <= ELEVATION_KM:
            elevation = float(gazetteer.elevation[row].as_py())
    return Place(timezone=tz, zone=zone(tz), country=country, elevation_m=elevation)
