"""The point-major grid: written by pipeline/common/grid.py, read by server/artifacts/grid.py (bilinear, NaN-aware)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.common import grid as writer
from pipeline.common.io import InputError
from server.artifacts.grid import PointGrid


def _build(tmp_path, lat, lon, fields: dict[str, np.ndarray], time0=1_700_000_000, dt_s=3600):
    """Write fields of shape (ntime, nlat, nlon) on ascending axes; return the reader."""
    names = list(fields)
    ntime = next(iter(fields.values())).shape[0]
    spec = writer.spec("area/grid.npy", lat, lon, time0, dt_s, ntime, names)
    stacked = np.stack([fields[n] for n in names])  # (nvar, ntime, nlat, nlon)
    writer.write(tmp_path, spec, lambda a, b: stacked[:, :, a:b, :])
    return PointGrid(tmp_path, spec), spec


def test_linear_field_is_reproduced_exactly_between_cells(tmp_path):
    lat = np.arange(40.0, 50.01, 0.5)
    lon = np.arange(0.0, 10.01, 0.5)
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    plane = np.stack([2 * la + 3 * lo + t for t in range(3)])
    g, spec = _build(tmp_path, lat, lon, {"plane": plane, "const": np.full_like(plane, 7.0)})
    assert spec["wraps"] is False and spec["ntime"] == 3
    values = g.series(47.3769, 8.5417)
    assert values.shape == (3, 2)
    np.testing.assert_allclose(values[:, 0], 2 * 47.3769 + 3 * 8.5417 + np.arange(3), rtol=1e-6)
    np.testing.assert_allclose(values[:, 1], 7.0)
    np.testing.assert_allclose(
        g.series(47.3769, 8.5417, 1, 2)[0, 0], 2 * 47.3769 + 3 * 8.5417 + 1, rtol=1e-6
    )


def test_edges_clamp_and_outside_is_reported(tmp_path):
    lat, lon = np.arange(30.05, 31.0, 0.1), np.arange(-24.95, -24.0, 0.1)
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    g, _ = _build(tmp_path, lat, lon, {"lat": la[None]})
    assert g.contains(30.01, -24.99) and g.contains(30.9, -24.1)
    assert not g.contains(29.9, -24.5) and not g.contains(30.5, -25.1) and not g.contains(30.5, 170)
    assert g.series(30.01, -24.99)[0, 0] == pytest.approx(30.05, abs=1e-5)  # clamped to the edge


def test_global_grid_wraps_across_the_antimeridian(tmp_path):
    lat = np.arange(-90.0, 90.01, 1.0)
    lon_0_360 = np.arange(0.0, 360.0, 1.0)
    lon, order = writer.lon_order(lon_0_360)
    assert lon[0] == -180.0 and lon[-1] == 179.0
    # a field equal to the source column index, reordered as a reader of 0-360 input must
    field = np.broadcast_to(np.arange(360.0)[order], (1, lat.size, 360)).copy()
    g, spec = _build(tmp_path, lat, lon, {"col": field})
    assert spec["wraps"] is True and g.contains(0.0, 179.9) and g.contains(90, -180)
    # between 179° (column 179) and -180° (column 180): halfway is 179.5
    assert g.series(10.0, 179.5)[0, 0] == pytest.approx(179.5)
    assert g.series(10.0, -180.0)[0, 0] == pytest.approx(180.0)
    assert g.series(90.0, 12.25)[0, 0] == pytest.approx(
        12.25
    )  # the pole row is read, not extrapolated


def test_unknown_corners_drop_out_and_all_unknown_is_nan(tmp_path):
    lat, lon = np.array([0.0, 1.0]), np.array([0.0, 1.0])
    field = np.array([[[1.0, np.nan], [3.0, np.nan]]])
    g, _ = _build(tmp_path, lat, lon, {"v": field, "gone": np.full((1, 2, 2), np.nan)})
    value, gone = g.series(0.5, 0.5)[0]
    assert value == pytest.approx(2.0) and np.isnan(gone)


def test_times_and_bad_axes(tmp_path):
    g, _ = _build(
        tmp_path,
        np.array([0.0, 1.0]),
        np.array([0.0, 1.0]),
        {"v": np.zeros((4, 2, 2))},
        time0=1000,
        dt_s=3600,
    )
    assert g.times().tolist() == [1000, 4600, 8200, 11800] and g.time_end == 11800
    assert g.time_index(4600 + 1800) == pytest.approx(1.5)
    with pytest.raises(InputError, match="latitude is not a regular"):
        writer.spec("x.npy", np.array([0.0, 1.0, 3.0]), np.array([0.0, 1.0]), 0, 3600, 1, ["v"])
    with pytest.raises(InputError, match="longitude is not a regular"):
        writer.spec("x.npy", np.array([0.0, 1.0]), np.array([1.0, 0.0]), 0, 3600, 1, ["v"])


def test_band_size_does_not_change_the_bytes(tmp_path):
    lat, lon = np.arange(10.0), np.arange(12.0)
    field = np.random.default_rng(1).normal(size=(2, 3, 10, 12))
    spec = writer.spec("g.npy", lat, lon, 0, 3600, 3, ["a", "b"])
    writer.write(tmp_path / "one", spec, lambda a, b: field[:, :, a:b])
    writer.write(
        tmp_path / "banded", spec, lambda a, b: field[:, :, a:b], band_bytes=12 * 3 * 2 * 4 * 3
    )  # three rows a band
    assert (tmp_path / "one/g.npy").read_bytes() == (tmp_path / "banded/g.npy").read_bytes()
    np.testing.assert_allclose(
        PointGrid(tmp_path / "banded", spec).block(4, 4, 5, 5)[0, 0],
        field[:, :, 4, 5].T.astype(np.float32),
    )


def test_one_column_and_mixed_unknown_corners_over_time(tmp_path):
    lat, lon = np.array([0.0, 1.0]), np.array([0.0, 1.0])
    a = np.array(
        [[[1.0, 2.0], [3.0, 4.0]], [[1.0, np.nan], [3.0, np.nan]], [[np.nan] * 2] * 2]
    )  # (time 3, lat 2, lon 2)
    g, _ = _build(tmp_path, lat, lon, {"a": a, "b": a * 10})
    both = g.series(0.25, 0.5)
    np.testing.assert_allclose(both[0], [2.0, 20.0])  # all four known
    # the east corners unknown: the west ones (0.375 x 1, 0.125 x 3) share the whole weight
    np.testing.assert_allclose(both[1], [1.5, 15.0])
    assert np.isnan(both[2]).all()
    np.testing.assert_allclose(g.series(0.25, 0.5, 1, 3, column=1), [15.0, np.nan])
    assert g.series(0.25, 0.5, column=0).shape == (3,)


def test_float32_axes_give_exact_steps_and_edges(tmp_path):
    """CAMS stores 0.1° coordinates as float32 (30.049999..., 71.94999...): the spec snaps them,
    so the domain's edges (72°N, 45°E, -25°E) are inside the grid."""
    lat = np.arange(420, dtype=np.float64)[::-1] * 0.1 + 30.05
    lon = np.arange(700) * 0.1 - 24.95
    lat32, lon32 = np.sort(lat.astype(np.float32)), lon.astype(np.float32)
    spec = writer.spec("eu.npy", lat32, lon32, 0, 3600, 1, ["v"])
    assert (spec["lat0"], spec["dlat"], spec["lon0"], spec["dlon"]) == (30.05, 0.1, -24.95, 0.1)
    field = np.broadcast_to(np.arange(420.0)[:, None], (1, 1, 420, 700))
    writer.write(tmp_path, spec, lambda a, b: field[:, :, a:b])
    g = PointGrid(tmp_path, spec)
    for lat_, lon_ in ((72.0, 10.0), (47.0, 45.0), (72.0, -25.0), (30.0, -25.0)):
        assert g.contains(lat_, lon_), (lat_, lon_)
    assert not g.contains(72.001, 10.0) and not g.contains(47.0, 45.001)
    assert g.series(72.0, 10.0)[0, 0] == pytest.approx(419.0)
    assert g.series(71.9, 10.0)[0, 0] == pytest.approx(418.5)
