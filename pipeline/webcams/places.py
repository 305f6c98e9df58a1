"""Link webcams to gazetteer places: nearest place id and name, timezone from the coordinate."""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import zoneinfo
from pathlib import Path

import numpy as np
import polars as pl
from scipy.spatial import cKDTree
from tzfpy import get_tz

from contract import EARTH_RADIUS_KM
from contract import Geocoding as G
from pipeline.common.sphere import unit_vectors

log = logging.getLogger("pipeline.webcams")
# Nearest-place links reach this far (great-circle km); a populated place of the gazetteer
# (GeoNames cities500: 500 inhabitants or more) lies closer than that to almost any inhabited
# spot, mountain huts and passes included.
LINK_MAX_KM = 50.0
NOT_PLACES = ("PPLX", "PPLH", "PPLQ", "PPLW", "PPLCH")
PLACE_COLUMNS = (
    "id",
    "name",
    "lat",
    "lon",
    "country_code",
    "population",
    "feature_code",
    "timezone",
)


def gazetteer(version: Path) -> tuple[pl.DataFrame, str, str]:
    """Places to link to: the geocoding area of the version being built (built or carried over
    earlier in the same run), else the packaged gazetteer the geocoding default starts from.
    Returns (places, which, identity): the identity changes whenever the places may, so it
    belongs in the data version (linked names and ids come from it)."""
    path = version / G.LOCATIONS
    if path.is_file():
        places = pl.read_parquet(path, columns=list(PLACE_COLUMNS))
        return places, "geocoding", "geocoding " + file_sha256(path)
    from pipeline.geocoding.sources import packaged

    log.warning("no geocoding area in this build: linking webcams to the packaged gazetteer")
    places = pl.from_arrow(packaged.read().conformed().places)
    identity = "packaged " + ", ".join(
        f"{p} {importlib.metadata.version(p)}" for p in packaged.PACKAGES
    )
    return places.select(PLACE_COLUMNS), "packaged", identity


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in blocks (deterministic builds: same places, same bytes)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def linker_versions() -> str:
    """Versions of the libraries that decide linked timezones (part of the data version)."""
    return f"tzfpy {importlib.metadata.version('tzfpy')}"


def linkable(places: pl.DataFrame) -> pl.DataFrame:
    """Places a webcam may be linked to by distance: populated places, not sections of one
    (districts, PPLX), historical, abandoned or destroyed ones, nor airports or other features."""
    code = pl.col("feature_code")
    return places.filter(code.str.starts_with("PPL") & ~code.is_in(NOT_PLACES))


def nearest_places(places: pl.DataFrame, lat: np.ndarray, lon: np.ndarray) -> pl.Series:
    """Id of the nearest linkable place within LINK_MAX_KM of each point (null beyond: a camera
    at sea or in a wilderness is not "at" a town hundreds of kilometres away)."""
    eligible = linkable(places)
    if not eligible.height:
        return pl.Series([None] * len(lat), dtype=pl.String)
    chord, nearest = cKDTree(
        unit_vectors(eligible["lat"].to_numpy(), eligible["lon"].to_numpy())
    ).query(unit_vectors(lat, lon), k=1)
    km = 2.0 * np.arcsin(np.minimum(np.asarray(chord) / 2.0, 1.0)) * EARTH_RADIUS_KM
    ids = eligible["id"].gather(nearest)
    return pl.select(pl.when(pl.Series(km <= LINK_MAX_KM)).then(ids)).to_series()


def link(webcams: pl.DataFrame, places: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Fill location_public_id (nearest linkable place within LINK_MAX_KM) and timezone (from
    the coordinate) where missing; add location_name from the place. Returns the frame and
    coverage figures."""
    lat, lon = webcams["latitude"].to_numpy(), webcams["longitude"].to_numpy()
    given = webcams["location_public_id"].is_not_null()
    nearest_id = nearest_places(places, lat, lon)
    webcams = webcams.with_columns(
        location_public_id=pl.when(given).then(pl.col("location_public_id")).otherwise(nearest_id)
    )
    names = places.select(location_public_id="id", location_name="name")
    webcams = webcams.join(names, on="location_public_id", how="left", maintain_order="left")
    missing_tz = np.flatnonzero(webcams["timezone"].is_null().to_numpy())
    zones = zoneinfo.available_timezones()
    filled = [_zone(lon[i], lat[i], zones) for i in missing_tz]
    if len(missing_tz):
        webcams = webcams.with_columns(
            webcams["timezone"].clone().scatter(missing_tz, pl.Series(filled, dtype=pl.String))
        )
    coverage = {
        "location_public_id_given": round(float(given.mean() or 0.0), 4),
        "location_link_max_km": LINK_MAX_KM,
        "location_public_id": round(
            float(webcams["location_public_id"].is_not_null().mean() or 0.0), 4
        ),
        "location_name": round(float(webcams["location_name"].is_not_null().mean() or 0.0), 4),
        "timezone_given": round(1 - len(missing_tz) / max(1, webcams.height), 4),
    }
    return webcams, coverage


def _zone(lon: float, lat: float, zones: set[str]) -> str:
    """The IANA timezone at a coordinate (an Etc/GMT zone at sea); UTC if unknown here."""
    zone = get_tz(float(lon), float(lat))
    return zone if zone in zones else "UTC"
