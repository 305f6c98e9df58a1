"""The list query's compiled selection (server.webcams.selection through Catalog.select) finds what plain
numpy masks over every webcam find, on every path: a country's or location's webcams, the cells
of a bbox or circle, every webcam, and the chord shortcut beside the haversine."""

from __future__ import annotations

import random

import numpy as np
import pytest

import contract
from server.geocoding.index import haversine_km
from server.webcams import selection as webcams_select
from server.webcams.catalog import BBox, Catalog, ListQuery, Nearby


@pytest.fixture(scope="module")
def cat(default_build) -> Catalog:
    return Catalog(contract.current_version_dir(default_build))


def _expected(cat: Catalog, q: ListQuery) -> tuple[list[int], int]:
    """(page rows, total) by masks over every row in the sort order."""
    order = cat.orders[q.sort].rows
    lat, lon = cat.lat[order], cat.lon[order]
    keep = np.ones(len(order), dtype=bool)
    if q.country is not None:
        keep &= cat.row_country[order] == cat.country_index.get(q.country, -1)
    if q.location is not None:
        index = cat.location_index(q.location)
        keep &= cat.row_location[order] == (-2 if index is None else index)
    if q.bbox is not None:
        b = q.bbox
        keep &= (lat >= b.min_lat) & (lat <= b.max_lat)
        keep &= (
            ((lon >= b.min_lon) & (lon <= b.max_lon))
            if b.min_lon <= b.max_lon
            else ((lon >= b.min_lon) | (lon <= b.max_lon))
        )
    if q.nearby is not None:
        keep &= haversine_km(q.nearby.lat, q.nearby.lon, lat, lon) <= q.nearby.radius_km
    rows = order[keep]
    return rows[q.offset : q.offset + q.limit].tolist(), len(rows)


def _box(rng: random.Random, lat: float, lon: float, size: float) -> BBox:
    west = (lon - size * rng.random() + 180) % 360 - 180
    east = (west + size * 1.4 + 180) % 360 - 180  # may cross 180°
    south = max(-90.0, lat - size * rng.random())
    return BBox(south, west, min(90.0, south + size), east)


def _queries(cat: Catalog, n: int) -> list[ListQuery]:
    rng = random.Random(17)
    codes = sorted(cat.country_index)
    out = []
    for i in range(n):
        row = rng.randrange(cat.size)
        lat, lon = float(cat.lat[row]), float(cat.lon[row])
        kind = dict(
            sort=rng.choice(["views", "views_asc"]),
            limit=rng.choice([1, 50, 200]),
            offset=rng.choice([0, 0, 3, 120, 5000]),
        )
        if i % 7 in (0, 4):
            kind["bbox"] = _box(rng, lat, lon, rng.choice([0.3, 3, 15, 60, 180]))
        if i % 7 in (1, 4, 5):
            kind["nearby"] = Nearby(
                lat + rng.uniform(-1, 1),
                lon + rng.uniform(-1, 1),
                rng.choice([0.5, 10, 100, 400, 1000]),
            )
        if i % 7 in (2, 5):
            kind["country"] = (
                codes[int(cat.row_country[row])] if rng.random() < 0.9 else rng.choice(codes)
            )
        if i % 7 == 3:
            kind["location"] = (
                cat.location_ids[int(cat.row_location[row])].decode()
                if cat.row_location[row] >= 0
                else "2657896"
            )
        if i % 7 == 6:
            kind["nearby"] = Nearby(
                rng.choice([-89.9, 89.9, 0.0]),
                rng.choice([-179.9, 179.9, 0.0]),
                rng.choice([50, 1000]),
            )
        out.append(ListQuery(**kind))
    return out


def test_select_matches_masks_over_every_webcam(cat):
    for q in _queries(cat, 700):
        rows, total = cat.select(q)
        assert (rows.tolist(), total) == _expected(cat, q), q


def test_a_webcam_exactly_on_the_circle_is_within_it(cat):
    # Its distance is the radius: the chord shortcut must leave it to the haversine (<=).
    rng = random.Random(4)
    lats, lons = cat.lat.tolist(), cat.lon.tolist()
    for a in rng.sample(range(cat.size), 40):
        close = np.flatnonzero(haversine_km(lats[a], lons[a], cat.lat, cat.lon) <= 999)
        b = int(rng.choice(close.tolist()))
        radius = webcams_select._km(lats[a], lons[a], lats[b], lons[b])
        if radius == 0:
            continue
        within = sum(
            webcams_select._km(lats[a], lons[a], la, lo) <= radius for la, lo in zip(lats, lons)
        )
        assert cat.select(ListQuery(nearby=Nearby(lats[a], lons[a], radius)))[1] == within
