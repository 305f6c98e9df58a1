"""The server's one bilinear read (server.kernels.bilinear), which PointGrid, air quality's
answer and the forecast's blocks share, against a plain Python and numpy statement of it: the
cells and weights of a point, and NaN corners dropping out with the others renormalised."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.common import grid as writer
from server.artifacts.grid import PointGrid
from server.kernels import bilinear


def _grid(tmp_path, wraps: bool, variables=("a", "b", "c")) -> PointGrid:
    """Random values (NaN cells, one unknown block, a column unknown throughout)."""
    rng = np.random.default_rng(7)
    lat = np.arange(-90.0, 90.1, 10.0) if wraps else np.arange(30.0, 50.1, 2.0)
    lon = np.arange(-180.0, 180.0, 20.0) if wraps else np.arange(-10.0, 20.1, 2.0)
    fields = rng.uniform(0, 200, (len(variables), 30, len(lat), len(lon)))
    fields[rng.random(fields.shape) < 0.15] = np.nan
    fields[:, :, 3:5, 4:6] = np.nan
    fields[1, :, 2, :] = np.nan
    spec = writer.spec("g.npy", lat, lon, 1_700_000_000, 3600, 30, list(variables))
    writer.write(tmp_path, spec, lambda a, b: fields[:, :, a:b, :])
    return PointGrid(tmp_path, spec)


def _points(seed: int) -> list[tuple[float, float]]:
    """Random points, edges, poles, both sides of the antimeridian and of lon0."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-90, 90), rng.uniform(-180, 180)) for _ in range(300)] + [
        (30.0, -11.0),
        (50.0, 21.0),
        (41.0, 4.0),
        (90.0, 179.9),
        (-90.0, -180.0),
        (45.0, -10.5),
        (45.0, -11.5),
        (45.0, 20.5),
        (0.0, 170.0),
        (0.0, -170.0),
    ]


def _reference_corners(g: PointGrid, lat: float, lon: float) -> tuple:
    """Rows, columns and weights of the four cells around a point, in Python."""
    y = min(max((lat - g.lat0) / g.dlat, 0.0), g.nlat - 1.0)
    i0 = min(int(y), g.nlat - 2) if g.nlat > 1 else 0
    i1, fy = min(i0 + 1, g.nlat - 1), y - i0
    x = ((lon - g.lon0) % 360.0) / g.dlon
    if g.wraps:
        j0 = int(x) % g.nlon
        j1, fx = (j0 + 1) % g.nlon, x - math.floor(x)
    else:
        if x > g.nlon - 1 + (360.0 / g.dlon - g.nlon + 1) / 2:
            x -= 360.0 / g.dlon  # just west of lon0, within half a cell
        x = min(max(x, 0.0), g.nlon - 1.0)
        j0 = min(int(x), g.nlon - 2) if g.nlon > 1 else 0
        j1, fx = min(j0 + 1, g.nlon - 1), x - j0
    return i0, i1, j0, j1, (1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx


def _reference_series(g: PointGrid, lat: float, lon: float, start: int, stop: int) -> np.ndarray:
    """The point's values (steps, nvar) in numpy: the weighted sum of the four cells; where a
    corner is unknown, the known ones' over their weights (NaN when those are ~0)."""
    i0, i1, j0, j1, *weights = _reference_corners(g, lat, lon)
    flat = g.block(i0, i1, j0, j1, start, stop).reshape(4, -1).astype(np.float64)
    weights = np.array(weights)
    known = ~np.isnan(flat)
    w = weights[:, None] * known
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (np.where(known, flat, 0.0) * w).sum(axis=0) / total
    out[total <= 1e-12] = np.nan
    return out.reshape(stop - start, -1)


@pytest.mark.parametrize("wraps", [True, False])
def test_corners_are_the_reference_arithmetic(tmp_path, wraps):
    grid = _grid(tmp_path, wraps)
    for lat, lon in _points(2):
        corners = grid.corners(lat, lon)
        assert isinstance(corners, bilinear.Corners)
        assert tuple(corners) == _reference_corners(grid, lat, lon), (lat, lon)
        assert corners.weights == tuple(corners)[4:]


@pytest.mark.parametrize("wraps", [True, False])
def test_series_is_the_reference_sum(tmp_path, wraps):
    grid = _grid(tmp_path, wraps)
    for lat, lon in _points(1):
        for first, stop in ((0, 30), (17, 30), (29, 30)):
            expected = _reference_series(grid, lat, lon, first, stop)
            # equal up to the order of the four products where all are known (the reference
            # divides by their total weight, which is 1 give or take a rounding)
            np.testing.assert_allclose(
                grid.series(lat, lon, first, stop), expected, rtol=1e-12, atol=0, equal_nan=True
            )
            np.testing.assert_allclose(
                grid.series(lat, lon, first, stop, column=1),
                expected[:, 1],
                rtol=1e-12,
                atol=0,
                equal_nan=True,
            )


def test_series_writes_only_the_columns_asked_for(tmp_path):
    grid = _grid(tmp_path, False)
    corners = grid.corners(41.0, 4.0)
    cells = grid.block(corners.i0, corners.i1, corners.j0, corners.j1)
    out = np.full((30, 3), -1.0)
    bilinear.series(cells, corners.weights, 0, 30, np.array([2]), out)
    assert (out[:, :2] == -1.0).all()
    np.testing.assert_array_equal(out[:, 2], grid.series(41.0, 4.0, column=2))
    with pytest.raises(IndexError):
        grid.series(41.0, 4.0, column=3)
    np.testing.assert_array_equal(grid.series(41.0, 4.0, column=-1), out[:, 2])


def test_an_unknown_corner_drops_out_and_the_others_are_renormalised():
    nan = np.nan
    assert bilinear.mix(1.0, 2.0, 3.0, 4.0, 0.25, 0.25, 0.25, 0.25) == 2.5
    assert bilinear.mix(1.0, nan, 3.0, 5.0, 0.5, 0.3, 0.1, 0.1) == pytest.approx(
        (0.5 * 1.0 + 0.1 * 3.0 + 0.1 * 5.0) / 0.7, rel=1e-15
    )
    assert math.isnan(bilinear.mix(nan, nan, nan, nan, 0.25, 0.25, 0.25, 0.25))
    assert math.isnan(bilinear.mix(1.0, nan, nan, nan, 0.0, 0.5, 0.5, 0.0))  # no weight known
