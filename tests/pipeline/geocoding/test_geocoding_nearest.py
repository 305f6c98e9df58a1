"""The nearest-place quadtree: written by the pipeline, searched by the server, exact."""

from __future__ import annotations

import numpy as np
import pytest

from contract import Geocoding as G
from pipeline.common.sphere import unit_vectors
from pipeline.geocoding import nearest as geocoding_nearest
from server.geocoding.index import haversine_km
from server.geocoding.nearest import NearestIndex


def _places(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scattered places, a dense city (deep splits), duplicates, poles and the antimeridian."""
    lat = [
        rng.uniform(-80, 80, 3000),
        47.37 + rng.normal(0, 0.02, 800),
        np.array([90.0, -90.0, 89.99, -89.5, 0.0, 0.0, 10.0, 10.0, 10.0]),
    ]
    lon = [
        rng.uniform(-180, 180, 3000),
        8.54 + rng.normal(0, 0.03, 800),
        np.array([0.0, 0.0, 179.99, -179.99, 180.0, -179.999, 5.0, 5.0, 5.0]),
    ]
    return np.concatenate(lat), np.concatenate(lon)


@pytest.fixture(scope="module")
def index(module_tmp):
    rng = np.random.default_rng(11)
    lat, lon = _places(rng)
    xyz = unit_vectors(lat, lon)
    rank = rng.permutation(len(lat)).astype(np.int32)
    root = module_tmp("nearest")
    geocoding_nearest.write(root, xyz, rank)
    return NearestIndex(root, xyz), lat, lon, rank, root


def _brute(lat, lon, plats, plons, rank):
    distance = haversine_km(lat, lon, plats, plons)
    best = distance.min()
    tied = np.flatnonzero(distance <= best + 1e-9)
    return int(tied[np.argmin(rank[tied])]), float(best)


def _queries(rng, lat, lon):
    near = rng.integers(0, len(lat), 400)
    boundary = np.arange(-2.0, 2.0, 1 / 64)  # cell edges of every level around 47°N 8°E
    return [
        *zip(rng.uniform(-90, 90, 600), rng.uniform(-180, 180, 600)),
        *zip(
            np.clip(lat[near] + rng.normal(0, 0.01, 400), -90, 90),
            ((lon[near] + rng.normal(0, 0.01, 400) + 180) % 360) - 180,
        ),
        *((47.0 + d, 8.5) for d in boundary),
        *((47.37, 8.0 + d) for d in boundary),
        (90.0, 0.0),
        (-90.0, 123.0),
        (90.0, 180.0),
        (-90.0, -180.0),
        (0.0, 180.0),
        (0.0, -180.0),
        (10.0, 5.0),
        (45.0, 7.0),
        (89.999, -179.999),
    ]


def test_nearest_matches_brute_force_everywhere(index):
    nearest, lat, lon, rank, _ = index
    for qlat, qlon in _queries(np.random.default_rng(5), lat, lon):
        row, km = nearest.nearest(float(qlat), float(qlon))
        expected_row, expected_km = _brute(qlat, qlon, lat, lon, rank)
        assert km == pytest.approx(expected_km, abs=1e-6), (qlat, qlon)
        assert (
            row == expected_row
            or abs(haversine_km(qlat, qlon, lat[[row]], lon[[row]])[0] - expected_km) < 1e-9
        ), (qlat, qlon)


def test_equally_near_places_go_by_rank(index):
    nearest, lat, lon, rank, _ = index
    triple = np.flatnonzero((lat == 10.0) & (lon == 5.0))
    row, km = nearest.nearest(10.0, 5.0)
    assert km == 0.0 and row == triple[np.argmin(rank[triple])]


def test_leaves_are_small_and_the_build_is_deterministic(index, tmp_path):
    nearest, lat, lon, rank, root = index
    leaves = nearest.b >= 0
    # At most LEAF_MAX locations a leaf: places closer than a cell (duplicates) count once.
    location = geocoding_nearest._shared_locations(unit_vectors(lat, lon))
    rows = np.load(root / G.NEAREST_ROWS)
    for a, b in zip(nearest.a[leaves], nearest.b[leaves]):
        if b - a > geocoding_nearest.LEAF_MAX:
            shared = location[rows[a:b]]
            assert (shared < 0).sum() + len(
                np.unique(shared[shared >= 0])
            ) <= geocoding_nearest.LEAF_MAX
    assert (~leaves).sum() > 100  # the dense city forced splits
    geocoding_nearest.write(tmp_path, unit_vectors(lat, lon), rank)
    for name in geocoding_nearest.FILES:
        assert (tmp_path / name).read_bytes() == (root / name).read_bytes(), name
    assert G.NEAREST_ROWS in geocoding_nearest.FILES


@pytest.mark.parametrize("spacing_deg", [0.0, 1e-5, 5e-4])
def test_many_places_close_together_stay_small_and_exact(tmp_path, spacing_deg):
    # GeoNames has duplicates, and places metres apart: too close for any cell to tell them
    # apart from afar, 42 of them made the tree split every cell around them to the last
    # level (24 GB at one point or a metre apart; 50 m apart, the last level can).
    rng = np.random.default_rng(3)
    lat = np.concatenate([np.full(42, 10.0), rng.uniform(-60, 60, 300)])
    lon = np.concatenate([10.0 + spacing_deg * np.arange(42), rng.uniform(-170, 170, 300)])
    xyz = unit_vectors(lat, lon)
    rank = rng.permutation(len(lat)).astype(np.int32)
    geocoding_nearest.write(tmp_path, xyz, rank)
    assert np.load(tmp_path / G.NEAREST_ROWS).size < 2_000_000
    nearest = NearestIndex(tmp_path, xyz)
    for qlat, qlon in [
        (10.0, 10.0),
        (10.3, 9.8),
        (5.0, 12.0),
        (10.0, 10.0 + 20.5 * spacing_deg),
        (10.0001, 10.0 + 41 * spacing_deg),
        (*rng.uniform(-60, 60, 2),),
    ]:
        row, km = nearest.nearest(float(qlat), float(qlon))
        expected_row, expected_km = _brute(qlat, qlon, lat, lon, rank)
        assert (row, km) == (expected_row, pytest.approx(expected_km, abs=1e-6))


def test_a_tree_over_some_places_names_rows_of_all(tmp_path):
    # The forecast's elevation: the nearest of the places that have one.
    rng = np.random.default_rng(8)
    lat, lon = _places(rng)
    xyz = unit_vectors(lat, lon)
    rank = rng.permutation(len(lat)).astype(np.int32)
    subset = np.flatnonzero(rng.random(len(lat)) < 0.1)
    geocoding_nearest.write(tmp_path, xyz, rank, subset, geocoding_nearest.ELEVATED_FILES)
    nearest = NearestIndex(tmp_path, xyz, tuple(geocoding_nearest.ELEVATED_FILES))
    for qlat, qlon in _queries(np.random.default_rng(6), lat, lon)[::3]:
        row, km = nearest.nearest(float(qlat), float(qlon))
        expected, expected_km = _brute(qlat, qlon, lat[subset], lon[subset], rank[subset])
        assert km == pytest.approx(expected_km, abs=1e-6), (qlat, qlon)
        assert (
            row == subset[expected]
            or abs(haversine_km(qlat, qlon, lat[[row]], lon[[row]])[0] - expected_km) < 1e-9
        )


def test_a_tree_over_no_places_finds_none(tmp_path):
    xyz = unit_vectors(np.array([10.0, 20.0]), np.array([5.0, 6.0]))
    geocoding_nearest.write(
        tmp_path, xyz, np.arange(2), np.zeros(0, dtype=np.int64), geocoding_nearest.ELEVATED_FILES
    )
    nearest = NearestIndex(tmp_path, xyz, tuple(geocoding_nearest.ELEVATED_FILES))
    assert nearest.nearest(10.0, 5.0) == (-1, float("inf"))
    assert nearest.nearest(-90.0, 180.0) == (-1, float("inf"))


def test_a_tree_within_a_distance_stays_small_around_a_far_cluster(tmp_path):
    # 40 places close together, far from the others, are the only ones with an elevation:
    # without the distance, every cell of the globe split until it could tell them apart
    # (hundreds of millions of candidates); beyond the distance no cell lists any.
    rng = np.random.default_rng(9)
    lat = np.concatenate([rng.uniform(-80, 80, 2000), 30.0 + rng.normal(0, 0.05, 40)])
    lon = np.concatenate([rng.uniform(-180, 180, 2000), 60.0 + rng.normal(0, 0.05, 40)])
    xyz = unit_vectors(lat, lon)
    rank = rng.permutation(len(lat)).astype(np.int32)
    subset = np.arange(2000, 2040)
    geocoding_nearest.write(
        tmp_path, xyz, rank, subset, geocoding_nearest.ELEVATED_FILES, within_km=5.0
    )
    assert np.load(tmp_path / G.NEAREST_ELEVATED_ROWS).size < 2_000_000
    nearest = NearestIndex(tmp_path, xyz, tuple(geocoding_nearest.ELEVATED_FILES))
    queries = [
        *zip(30.0 + rng.normal(0, 0.08, 300), 60.0 + rng.normal(0, 0.08, 300)),
        *zip(rng.uniform(-80, 80, 200), rng.uniform(-180, 180, 200)),
    ]
    within = 0
    for qlat, qlon in queries:
        row, km = nearest.nearest(float(qlat), float(qlon))
        expected, expected_km = _brute(qlat, qlon, lat[subset], lon[subset], rank[subset])
        if expected_km <= 5.0:
            assert km == pytest.approx(expected_km, abs=1e-6), (qlat, qlon)
            within += 1
        else:
            assert km > 5.0, (qlat, qlon)
    assert within > 100
