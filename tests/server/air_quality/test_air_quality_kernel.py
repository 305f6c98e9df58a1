"""The compiled point read (server.air_quality.kernels.bilinear) interpolates as PointGrid.series does,
and a whole answer's records equal the series evaluated and written the slow way."""

from __future__ import annotations

import numpy as np
import pytest

from contract import AirQuality as AQ
from pipeline.common import grid as writer
from pipeline.air_quality import aqi
from server.air_quality import handlers
from server.air_quality import kernels
from server.artifacts.grid import PointGrid
from tests.server.air_quality.test_air_quality_records import reference


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


def _geometry(grid: PointGrid) -> np.ndarray:
    return np.array([getattr(grid, name) for name in kernels.GEOMETRY], dtype=np.float64)


def _cell(grid: PointGrid, lat: float, lon: float) -> tuple[np.ndarray, tuple[float, ...]]:
    """The point's four cells and weights, as air_quality.Domain.cell gives them."""
    i0, i1, j0, j1, *weights = kernels.corners(_geometry(grid), lat, lon)
    return grid.block(i0, i1, j0, j1), tuple(weights)


def _points(seed: int) -> list[tuple[float, float]]:
    """Random points, edges, poles, both sides of the antimeridian and of lon0."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-90, 90), rng.uniform(-180, 180)) for _ in range(300)] + [
        (30.0, -11.0), (50.0, 21.0), (41.0, 4.0), (90.0, 179.9), (-90.0, -180.0),
        (45.0, -10.5), (45.0, -11.5), (45.0, 20.5), (0.0, 170.0), (0.0, -170.0)]


@pytest.mark.parametrize("wraps", [True, False])
def test_corners_are_the_grid_corners(tmp_path, wraps):
    grid = _grid(tmp_path, wraps)
    for lat, lon in _points(2):
        rows, cols, weights = grid.corners(lat, lon)
        i0, i1, j0, j1, *w = kernels.corners(_geometry(grid), lat, lon)
        assert ([i0, i0, i1, i1], [j0, j1, j0, j1]) == (rows, cols), (lat, lon)
        assert w == weights.tolist(), (lat, lon)


@pytest.mark.parametrize("wraps", [True, False])
def test_bilinear_is_the_grid_series(tmp_path, wraps):
    grid = _grid(tmp_path, wraps)
    columns = np.array([0, 2, 1], dtype=np.int64)
    for lat, lon in _points(1):
        for first, stop in ((0, 30), (17, 30), (29, 30)):
            out = np.full((stop - first, 3), -1.0)
            kernels.bilinear(*_cell(grid, lat, lon), first, stop, columns, out)
            np.testing.assert_allclose(out, grid.series(lat, lon, first, stop), rtol=1e-12,
                                       atol=0, equal_nan=True)
    out = np.full((30, 3), -1.0)
    kernels.bilinear(*_cell(grid, 41.0, 4.0), 0, 30, np.array([2]), out)
    assert (out[:, :2] == -1.0).all()                     # columns not asked for: untouched


def test_answer_kernel_equals_series_indices_and_records(tmp_path):
    """kernel.answer at a point = PointGrid.series, the pipeline's AQI science, and the
    reference writer (dicts through orjson)."""
    variables = AQ.EUROPE_VARIABLES
    grid = _grid(tmp_path, False, variables)
    domain = handlers.Domain(tmp_path, grid.spec, aqi.manifest_tables())
    for lat, lon in ((41.3, 4.7), (30.0, -10.0), (36.9, 12.1)):
        first = 3
        current, hourly = domain.records_at(lat, lon, first, True, 1_700_010_800)
        series = grid.series(lat, lon, first)
        columns = {name: series[:, k] for k, name in enumerate(variables)}
        indices = {"european_aqi": aqi.european_aqi(columns), "us_aqi": aqi.us_aqi(columns)}
        values = np.column_stack([series, *indices.values()])
        names = list(variables) + list(indices)
        fields = handlers.EUROPE_FIELDS
        expected = reference(handlers.EUROPE_KEYS, range(1_700_010_800, 1_700_010_800 + 3600 * 27,
                                                   3600), values, [d for _, _, d in fields],
                             [names.index(v) for _, v, _ in fields])
        assert (bytes(current), bytes(hourly)) == expected
