"""Offline default webcam catalog, generated near real gazetteer places.

About 20,600 webcams (times `scale`), dense in the Alps and in cities, sparse elsewhere: each
is drawn from the gazetteer with a weight growing with the place's population, boosted in
mountain resort regions, set a few kilometres off the place (within its timezone, so on its
side of a border), named after it and linked to it.
Views are long-tailed (log-normal), higher for cities and much higher for mountain resorts.
About 4% are inactive. Every active webcam has a snapshot every 10 minutes for the
30 days before the build (its own second within the 10 minutes), a few with an outage of some
hours: about 85 million snapshots. Their images are rendered on demand by the server's image
host, so no image files exist. Everything but the time anchor comes from a fixed seed.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from tzfpy import get_tz

from contract import HOUR_S
from contract import Webcams as W
from pipeline.webcams.sources.normalised import (
    ACTIVE,
    INACTIVE,
    SOURCE_SCHEMA,
    SnapshotSeries,
    WebcamCatalog,
)

SEED = 20_240_605
DEFAULT_WEBCAMS = 20_600
INTERVAL_S = 600
DAYS = 30
PER_WEBCAM = DAYS * 86_400 // INTERVAL_S  # 4,320 snapshots
INACTIVE_SHARE = 0.04
OUTAGE_SHARE = 0.03
KM_PER_DEGREE = 111.195
BLOCK_ROWS = 512
REDRAWS = 8  # offsets tried for a camera outside its place's timezone, then the place
# (south, west, north, east, weight factor): the Alps (three boxes that leave out the Po plain,
# Munich and Vienna), then other mountain resort areas.
RESORTS = (
    (44.0, 5.6, 46.5, 7.3, 14.0),  # Western Alps
    (45.8, 7.3, 47.6, 12.5, 14.0),  # Central Alps
    (46.3, 12.5, 47.8, 16.0, 14.0),  # Eastern Alps
    (42.3, -1.9, 43.3, 3.3, 3.0),  # Pyrenees
    (49.0, 19.4, 49.5, 20.6, 3.0),  # Tatra
    (58.5, 4.8, 63.0, 9.0, 2.5),  # Norwegian fjords
    (36.8, -108.5, 41.0, -104.5, 3.0),  # Colorado Rockies
    (49.0, -123.5, 51.5, -115.0, 2.5),  # British Columbia and Alberta Rockies
    (35.3, 136.8, 37.2, 138.9, 2.5),  # Japanese Alps
    (-45.5, 167.5, -43.0, 171.0, 3.0),  # Southern Alps (New Zealand)
)
CITY_VIEWS = (
    "City Centre",
    "Old Town",
    "Main Square",
    "Skyline",
    "Harbour",
    "Riverside",
    "Cathedral Square",
    "Train Station",
    "Market Square",
    "Bridge",
    "Park",
    "Promenade",
    "Beach",
    "University",
    "Stadium",
    "Tower",
)
TOWN_VIEWS = (
    "Village Centre",
    "Panorama",
    "Church",
    "Lake View",
    "Main Street",
    "Town Hall",
    "Valley View",
    "Harbour",
    "Beach",
    "Hillside",
)
MOUNTAIN_VIEWS = (
    "Ski Area",
    "Summit",
    "Valley",
    "Mountain Pass",
    "Glacier View",
    "Cable Car",
    "Lake View",
    "Panorama",
    "Ski Slope",
    "Mountain Hut",
    "Pass Road",
    "Chairlift",
)
AIRPORT_VIEWS = ("Airport Apron", "Runway", "Airport Tower")
VIEWS_BOOST = {MOUNTAIN_VIEWS: 6.0, CITY_VIEWS: 1.5, AIRPORT_VIEWS: 0.5}


def generate(places: pl.DataFrame, now_s: int, scale: float = 1.0) -> WebcamCatalog:
    """A catalog of about DEFAULT_WEBCAMS * scale webcams near `places` (id, name, lat, lon,
    country_code, population, feature_code), snapshots up to `now_s`."""
    rng = np.random.default_rng(SEED)
    n = max(20, round(DEFAULT_WEBCAMS * scale))
    places = places.filter(pl.col("country_code").is_in(sorted(W.COUNTRIES))).sort("id")
    seeds = rng.choice(places.height, size=n, p=_weights(places))
    chosen = places[seeds]
    lat, lon = _scatter(rng, chosen)
    kinds = _kinds(chosen)
    names = _names(
        chosen["name"].to_list(),
        [
            kinds[i][j]
            for i, j in enumerate(rng.integers(0, 1 << 30, n) % np.array([len(k) for k in kinds]))
        ],
    )
    views = _views(rng, chosen, kinds)
    webcams = pl.DataFrame(
        {
            "public_id": _public_ids(rng, n),
            "name": names,
            "latitude": lat,
            "longitude": lon,
            "country_code": chosen["country_code"],
            "views": views,
            # Named after its seed place, so linked to it (not to whatever place is nearest).
            "location_public_id": chosen["id"],
            "timezone": pl.Series([None] * n, dtype=pl.String),
            "status": np.where(rng.random(n) < INACTIVE_SHARE, INACTIVE, ACTIVE),
        }
    ).cast(SOURCE_SCHEMA)
    schedule = pl.DataFrame(
        {
            "public_id": webcams["public_id"],
            "phase": rng.integers(0, INTERVAL_S, n),
            "outage_start": np.where(
                rng.random(n) < OUTAGE_SHARE, rng.integers(0, DAYS * 86_400, n), -1
            ),
            "outage_s": rng.integers(2, 37, n) * HOUR_S,
        }
    )

    def snapshots(served: pl.Series) -> SnapshotSeries:
        order = pl.DataFrame({"public_id": served})
        return _series(
            order.join(schedule, on="public_id", how="left", maintain_order="left"), now_s
        )

    return WebcamCatalog(
        webcams=webcams,
        snapshots=snapshots,
        inputs=[],
        kind="generated",
        notes=(
            "generated offline default: webcams placed near real gazetteer places, views "
            "long-tailed, a snapshot every 10 minutes for 30 days; images rendered on demand "
            "by the server's image host"
        ),
        details={
            "seed": SEED,
            "scale": scale,
            "snapshots_until": now_s,
            "interval_s": INTERVAL_S,
            "days": DAYS,
        },
    )


def _weights(places: pl.DataFrame) -> np.ndarray:
    """Draw weights: population, resort regions, airports less often."""
    pop = places["population"].fill_null(0).to_numpy().astype(np.float64)
    weight = (pop + 300.0) ** 0.62
    lat, lon = places["lat"].to_numpy(), places["lon"].to_numpy()
    for south, west, north, east, factor in RESORTS:
        inside = (lat >= south) & (lat <= north) & (lon >= west) & (lon <= east)
        weight[inside] *= factor
    weight[(places["feature_code"] == "AIRP").to_numpy()] *= 0.5
    return weight / weight.sum()


def _views(
    rng: np.random.Generator, chosen: pl.DataFrame, kinds: list[tuple[str, ...]]
) -> np.ndarray:
    """Long-tailed views (log-normal), more for big cities and far more for mountain resort
    cameras (what people check before they go: snow on the pass), fewer for airports."""
    pop = chosen["population"].fill_null(0).to_numpy().astype(np.float64)
    boost = np.array([VIEWS_BOOST.get(kind, 1.0) for kind in kinds])
    lognormal = rng.lognormal(6.5, 1.7, chosen.height)
    return np.floor(lognormal * (1 + np.log1p(pop / 50_000)) * boost).astype(np.int64)


def _scatter(rng: np.random.Generator, chosen: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Positions a few kilometres off each place (further for large cities), in the place's
    timezone: a camera named after a border town (Sankt Margrethen, Chiasso, Basel) stands on
    its side of the border, so its country (the place's) is where it stands."""
    n = chosen.height
    pop = chosen["population"].fill_null(0).to_numpy().astype(np.float64)
    radius_km = 0.6 + 2.5 * (pop / 100_000) ** 0.35
    lat0, lon0 = chosen["lat"].to_numpy(), chosen["lon"].to_numpy()
    lat, lon = _off(lat0, lon0, radius_km * np.sqrt(rng.random(n)), rng.random(n) * 2 * math.pi)
    # Redrawn from a generator of their own, so every other draw (names, views, ids) stays.
    again = np.random.default_rng(SEED + 1)
    home = _zones(lat0, lon0)
    wrong = np.flatnonzero(_zones(lat, lon) != home)
    for _ in range(REDRAWS):
        if not len(wrong):
            break
        lat[wrong], lon[wrong] = _off(
            lat0[wrong],
            lon0[wrong],
            radius_km[wrong] * np.sqrt(again.random(len(wrong))),
            again.random(len(wrong)) * 2 * math.pi,
        )
        wrong = wrong[_zones(lat[wrong], lon[wrong]) != home[wrong]]
    lat[wrong], lon[wrong] = lat0[wrong], lon0[wrong]  # at the place itself
    return np.round(lat, 6), np.round(lon, 6)


def _off(
    lat0: np.ndarray, lon0: np.ndarray, distance_km: np.ndarray, bearing: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The points `distance_km` from (lat0, lon0) towards `bearing` (radians from north), on a
    local flat approximation (a few kilometres)."""
    lat = np.clip(lat0 + distance_km / KM_PER_DEGREE * np.cos(bearing), -89.9, 89.9)
    dlon = (
        distance_km / (KM_PER_DEGREE * np.maximum(np.cos(np.radians(lat0)), 0.05)) * np.sin(bearing)
    )
    return lat, (lon0 + dlon + 180.0) % 360.0 - 180.0


def _zones(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """The timezone polygon (tzfpy, as the build links timezones) each point lies in."""
    return np.array([get_tz(x, y) for x, y in zip(lon.tolist(), lat.tolist())], dtype=object)


def _kinds(chosen: pl.DataFrame) -> list[tuple[str, ...]]:
    """The list of view names that fits each place."""
    pop = chosen["population"].fill_null(0).to_list()
    lat, lon = chosen["lat"].to_list(), chosen["lon"].to_list()
    features = chosen["feature_code"].to_list()
    kinds = []
    for p, y, x, feature in zip(pop, lat, lon, features):
        if feature == "AIRP":
            kinds.append(AIRPORT_VIEWS)
        elif any(s <= y <= n and w <= x <= e for s, w, n, e, _ in RESORTS) and p < 50_000:
            kinds.append(MOUNTAIN_VIEWS)
        else:
            kinds.append(CITY_VIEWS if p >= 50_000 else TOWN_VIEWS)
    return kinds


def _names(places: list[str], views: list[str]) -> list[str]:
    """ "Place – View", numbered when the same name comes up again."""
    seen: dict[str, int] = {}
    names = []
    for place, view in zip(places, views):
        name = f"{place} – {view}"
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name} {seen[name]}")
    return names


def _public_ids(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct ten-digit ids (the shape of Windy's), in random order."""
    raw = rng.integers(1_000_000_000, 2_000_000_000, size=n + n // 10 + 16)
    _, first = np.unique(raw, return_index=True)
    return [str(v) for v in raw[np.sort(first)][:n]]


def _series(schedule: pl.DataFrame, now_s: int) -> SnapshotSeries:
    """Snapshot times of the served webcams, computed block by block."""
    phase = schedule["phase"].to_numpy()
    outage_start = schedule["outage_start"].to_numpy()
    outage_s = schedule["outage_s"].to_numpy()
    # The newest capture at or before now; the series starts 30 days earlier.
    last = (now_s - phase) // INTERVAL_S * INTERVAL_S + phase
    first = last - (PER_WEBCAM - 1) * INTERVAL_S
    steps = np.arange(PER_WEBCAM, dtype=np.int64) * INTERVAL_S

    def grid(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        times = first[a:b, None] + steps[None, :]
        gap0 = (first[a:b] + outage_start[a:b])[:, None]
        up = (outage_start[a:b, None] < 0) | (times < gap0) | (times >= gap0 + outage_s[a:b, None])
        return times, up

    counts = np.zeros(len(phase), dtype=np.int64)
    for a in range(0, len(phase), BLOCK_ROWS):
        counts[a : a + BLOCK_ROWS] = grid(a, min(a + BLOCK_ROWS, len(phase)))[1].sum(axis=1)

    def block(a: int, b: int) -> tuple[np.ndarray, None]:
        times, up = grid(a, b)
        return times[up].astype(np.uint32), None

    span = (int(first.min()), int(last.max())) if len(phase) else (0, 0)
    return SnapshotSeries(counts, block, span)
