"""Regridding in the pipeline interpolates as the server does at a point (PointGrid.series)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.common import grid as writer
from pipeline.common.regrid import Bilinear
from server.artifacts.grid import PointGrid


def _source(tmp_path, lat, lon, field):
    """A one-variable grid of field (time, lat, lon): its spec and its server-side reader."""
    spec = writer.spec("g.npy", lat, lon, 1_700_000_000, 3600, field.shape[0], ["v"])
    writer.write(tmp_path, spec, lambda a, b: field[None, :, a:b, :])
    return spec, PointGrid(tmp_path, spec)


@pytest.mark.parametrize("wraps", [True, False])
def test_cells_take_what_the_server_reads_at_their_centres(tmp_path, wraps):
    """Random values with unknown cells (and one all-unknown corner block): every target cell
    equals PointGrid.series at its centre, rows beyond the source's clamp to its edges, and
    targets across the antimeridian (global) or just west of lon0 (regional) are covered."""
    rng = np.random.default_rng(3)
    lat = np.arange(-90.0, 90.1, 4.0) if wraps else np.arange(30.0, 60.1, 2.0)
    lon = np.arange(-180.0, 180.0, 5.0) if wraps else np.arange(-20.0, 20.1, 2.0)
    field = rng.uniform(0, 2, (3, len(lat), len(lon))).astype(np.float32)
    field[rng.random(field.shape) < 0.1] = np.nan
    field[:, 10:12, 4:6] = np.nan
    spec, reader = _source(tmp_path, lat, lon, field)
    target_lat = np.arange(-89.5, 90, 1.3) if wraps else np.arange(29.0, 61.5, 0.7)
    target_lon = np.arange(170.0, 190.0, 0.9) if wraps else np.arange(-21.0, 21.0, 0.9)
    interpolate = Bilinear(spec, target_lat, target_lon)
    out = interpolate(field[:, interpolate.first_row : interpolate.stop_row])
    assert out.shape == (3, len(target_lat), len(target_lon)) and out.dtype == np.float32
    assert np.isnan(out).any() and not np.isnan(out).all()
    for r, y in enumerate(target_lat):
        for c, x in enumerate(target_lon):
            x = (x + 180.0) % 360.0 - 180.0
            np.testing.assert_allclose(out[:, r, c], reader.series(y, x)[:, 0], rtol=1e-6)


def test_a_band_of_target_rows_needs_only_the_source_rows_around_it(tmp_path):
    lat, lon = np.arange(-90.0, 90.1, 2.0), np.arange(-180.0, 180.0, 2.0)
    plane = (0.1 + 0.004 * lat[:, None] + 0.0 * lon[None, :])[None].astype(np.float32)
    spec, _ = _source(tmp_path, lat, lon, plane)
    interpolate = Bilinear(spec, np.arange(40.05, 44.0, 0.1), np.arange(-24.95, 45.0, 0.1))
    assert (interpolate.first_row, interpolate.stop_row) == (65, 68)  # 40° to 44°
    out = interpolate(plane[:, 65:68])
    np.testing.assert_allclose(
        out[0], 0.1 + 0.004 * np.arange(40.05, 44.0, 0.1)[:, None] + np.zeros((1, 700)), rtol=1e-6
    )
