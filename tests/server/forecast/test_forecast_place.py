"""A forecast point's elevation and country from the gazetteer of the default build."""

from __future__ import annotations

import dataclasses

import numpy as np

import contract
from contract import Geocoding as G
from server.forecast.place import COUNTRY_KM, ELEVATION_KM, locate
from server.geocoding.index import GeocodingIndex, haversine_km


def test_the_elevation_is_that_of_the_nearest_place_that_has_one(default_build):
    # In the default build only airports have one: near a city the nearest place usually
    # has none, and a place farther off (not among the next few, in a big city) decides.
    index = GeocodingIndex(contract.current_version_dir(default_build))
    lat, lon = np.asarray(index.lat), np.asarray(index.lon)
    heights = np.array([np.nan if e is None else e for e in index.elevation.to_pylist()])
    known = ~np.isnan(heights)
    rng = np.random.default_rng(4)
    near = rng.choice(np.flatnonzero(known), 150)
    everywhere = rng.integers(0, index.size, 150)
    points = [
        (
            float(np.clip(lat[r] + rng.normal(0, 0.03), -90, 90)),
            float((lon[r] + rng.normal(0, 0.03) + 180) % 360 - 180),
        )
        for r in np.concatenate([near, everywhere])
    ]
    found = 0
    for plat, plon in points:
        distance = haversine_km(plat, plon, lat[known], lon[known])
        best = int(np.argmin(distance))
        got = locate(plat, plon, index).elevation_m
        if distance[best] > ELEVATION_KM:
            assert got is None, (plat, plon)
        else:  # equally near places may differ in height: any of them is right
            tied = np.flatnonzero(distance <= distance[best] + 1e-9)
            assert got in set(heights[known][tied].tolist()), (plat, plon, got)
            found += 1
    assert found > 100


def test_at_sea_the_country_is_that_of_a_place_within_reach(default_build):
    index = GeocodingIndex(contract.current_version_dir(default_build))
    # Points in nautical zones (Etc/GMT+N, no country): 61 km off Spain, 71 km off Spain
    # past Gibraltar, 62 km off Kauai; 103 km off Cape Verde, 1,728 km off Chile.
    for point, country in [
        ((43.0, -10.0), "ES"),
        ((36.0, -6.8), "ES"),
        ((21.5, -159.0), "US"),
        ((16.0, -25.5), None),
        ((-40.0, -120.0), None),
    ]:
        place = locate(*point, index)
        assert place.timezone.startswith("Etc/"), point
        assert (place.country, place.elevation_m) == (country, None), point
    assert index.nearest(16.0, -25.5, 1)[0][1] > COUNTRY_KM


def test_the_place_with_an_elevation_may_lie_behind_many_without(default_build):
    # South-west of Paris, Toussus-le-Noble's airfield (164 m) is 4 km off, with more than
    # eight towns nearer (a look at the 8 nearest places found none with an elevation).
    index = GeocodingIndex(contract.current_version_dir(default_build))
    point = (48.7114, 2.0830)
    row, km = index.nearest_with_elevation(*point)
    assert km <= ELEVATION_KM
    nearer = index.nearest(*point, 12)
    assert sum(distance < km for _, distance in nearer) > 8
    assert locate(*point, index).elevation_m == 164.0


def test_an_older_build_without_the_tree_looks_among_the_nearest_places(default_build, tmp_path):
    # A geocoding area built before the tree (revision 8) still loads and gives elevations.
    version = contract.current_version_dir(default_build)
    elevated = {G.NEAREST_ELEVATED_A, G.NEAREST_ELEVATED_B, G.NEAREST_ELEVATED_ROWS}
    for path in (version / "geocoding").rglob("*"):
        name = str(path.relative_to(version))
        if path.is_file() and name not in elevated:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).symlink_to(path)
    older, index = GeocodingIndex(tmp_path), GeocodingIndex(version)
    assert older.nearest_elevated is None and index.nearest_elevated is not None
    for point in [(47.46, 8.55), (51.47, -0.45), (40.64, -73.78), (-40.0, -120.0)]:
        assert locate(*point, older) == locate(*point, index), point
    assert locate(47.46, 8.55, older).elevation_m == 432.0


def test_without_the_country_the_rest_is_the_same(default_build):
    # units other than auto do not need the country: locate(with_country=False) skips it.
    index = GeocodingIndex(contract.current_version_dir(default_build))
    for point in [(43.0, -10.0), (21.5, -159.0), (47.46, 8.55), (-33.9, 18.4), (0.0, -150.0)]:
        whole, without = locate(*point, index), locate(*point, index, with_country=False)
        assert without.country is None, point
        assert without == dataclasses.replace(whole, country=None), point
    assert locate(43.0, -10.0, index).country == "ES"
