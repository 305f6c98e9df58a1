"""`python -m pipeline build --only forecast` on model files the reader must read with care:
repeated or unsorted times, two names of one field, unknown steps, other unit spellings,
broken time coordinates, and the model and licence of wgrib2 files and of mixed inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contract
from contract import Forecast as F
from tests.pipeline.test_forecast_build import STEP, build, column, grid
from tests.support import forecast_inputs as fi

CALM = {n: fi.KNOWN[n] for n in ("d2m", "u10", "v10", "prmsl", "tcc", "prate")}


def hours_since(run_s: int, marked: set[int] | None = None):
    """t2m in °C = hours since the run; an hour in `marked` is 0.5 °C warmer the second time
    it is written (so the artifact shows which occurrence was read)."""
    seen: set[int] = set()

    def t2m(valid_s, la, lo):
        hour = (valid_s - run_s) // 3600
        later = hour in seen and hour in (marked or set())
        seen.add(hour)
        return np.full(la.shape, 273.15 + hour + 0.5 * later)
    return t2m


def temperature(out: Path, run_s: int) -> np.ndarray:
    """The artifact's temperature at one cell, hour by hour from the run time."""
    spec, values = grid(contract.current_version_dir(out))
    assert spec["time0"] == run_s
    return column(spec, values, F.TEMPERATURE)[:, 5, 3]


@pytest.mark.parametrize("layout", ["step", "time"])
def test_a_time_repeated_in_one_file_is_read_once_the_later_value(pipeline_cli, tmp_path,
                                                                  layout):
    # Two step ranges concatenated into one file (0-24 h and 24-48 h) repeat 24 h; read as
    # they stand, every hour after it was an hour late.
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    hours = list(range(25)) + list(range(24, 49))
    fields = {**CALM, "t2m": hours_since(run, marked={24})}
    folder = tmp_path / "d" / "forecast"
    if layout == "step":
        fi.write_step_file(folder / "concat.nc", run, hours, lat, lon, fields)
    else:
        fi.write_time_file(folder / "concat.nc", run, run + 3600 * np.array(hours), lat, lon,
                           fields)
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    expected = np.arange(49, dtype=np.float64)
    expected[24] = 24.5
    np.testing.assert_allclose(temperature(tmp_path / "out", run), expected, atol=1e-4)


def test_unsorted_steps_are_read_in_time_order(pipeline_cli, tmp_path):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    fi.write_step_file(tmp_path / "d" / "forecast" / "reversed.nc", run, fi.gfs_steps(48)[::-1],
                       lat, lon, {**CALM, "t2m": hours_since(run)})
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    np.testing.assert_allclose(temperature(tmp_path / "out", run), np.arange(49), atol=1e-4)
