"""A whole air-quality answer's records (the compiled point read, indices and writer in one
call) equal the point's series evaluated and written the slow way. The read itself is
server.kernels.bilinear's (tests/server/kernels/test_bilinear.py)."""

from __future__ import annotations

import numpy as np

from contract import AirQuality as AQ
from pipeline.air_quality import aqi
from pipeline.common import grid as writer
from server.air_quality import handlers
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
        expected = reference(
            handlers.EUROPE_KEYS,
            range(1_700_010_800, 1_700_010_800 + 3600 * 27, 3600),
            values,
            [d for _, _, d in fields],
            [names.index(v) for _, v, _ in fields],
        )
        assert (bytes(current), bytes(hourly)) == expected
