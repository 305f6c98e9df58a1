"""`python -m pipeline build --only forecast` on model files the reader must read with care:
repeated or unsorted times, two names of one field, unknown steps, other unit spellings,
broken time coordinates, and the model and licence of wgrib2 files and of mixed inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import contract
from contract import Forecast as F
from server.forecast.data import ForecastData
from tests.pipeline.forecast.test_forecast_build import STEP, build, column, grid
from tests.support import forecast_inputs as fi

pytestmark = pytest.mark.slow  # they build with the pipeline

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
def test_a_time_repeated_in_one_file_is_read_once_the_later_value(pipeline_cli, tmp_path, layout):
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
        fi.write_time_file(
            folder / "concat.nc", run, run + 3600 * np.array(hours), lat, lon, fields
        )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    expected = np.arange(49, dtype=np.float64)
    expected[24] = 24.5
    np.testing.assert_allclose(temperature(tmp_path / "out", run), expected, atol=1e-4)


def test_unsorted_steps_are_read_in_time_order(pipeline_cli, tmp_path):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    fi.write_step_file(
        tmp_path / "d" / "forecast" / "reversed.nc",
        run,
        fi.gfs_steps(48)[::-1],
        lat,
        lon,
        {**CALM, "t2m": hours_since(run)},
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    np.testing.assert_allclose(temperature(tmp_path / "out", run), np.arange(49), atol=1e-4)


def test_prmsl_is_preferred_to_mslet(pipeline_cli, tmp_path):
    # GFS's meanSea file holds both; FIELDS lists prmsl first.
    run = fi.last_run()
    folder = fi.write_gfs_run(tmp_path / "d" / "forecast", run, 24, fi.KNOWN)
    lat, lon = fi.global_axes(STEP)
    fi.write_step_file(
        folder / "gfs.meanSea.nc",
        run,
        fi.gfs_steps(24),
        lat,
        lon,
        {"prmsl": 101325.0, "mslet": 100000.0},
        units={"mslet": "Pa"},
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    spec, values = grid(contract.current_version_dir(tmp_path / "out"))
    np.testing.assert_allclose(column(spec, values, F.PRESSURE), 1013.25, atol=1e-3)


def test_a_less_preferred_name_fills_the_hours_the_preferred_one_lacks(pipeline_cli, tmp_path):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    fields = {n: fi.KNOWN[n] for n in ("t2m", "d2m", "u10", "v10", "tcc", "prate")}
    folder = tmp_path / "d" / "forecast"
    fi.write_step_file(
        folder / "a.nc",
        run,
        fi.gfs_steps(24),
        lat,
        lon,
        {**fields, "mslet": 100000.0},
        units={"mslet": "Pa"},
    )
    fi.write_step_file(folder / "b.nc", run, list(range(13)), lat, lon, {"prmsl": 101325.0})
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    spec, values = grid(contract.current_version_dir(tmp_path / "out"))
    pressure = column(spec, values, F.PRESSURE)[:, 5, 3]
    assert len(pressure) >= 25  # not cut to the preferred name's 12 hours
    np.testing.assert_allclose(pressure[:13], 1013.25, atol=1e-3)
    np.testing.assert_allclose(pressure[13:25], 1000.0, atol=1e-3)


def test_an_hour_on_a_step_keeps_its_value_beside_an_unknown_step(pipeline_cli, tmp_path):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    six = run + 6 * 3600
    fi.write_step_file(
        tmp_path / "d" / "forecast" / "a.nc",
        run,
        fi.gfs_steps(24),
        lat,
        lon,
        {**CALM, "t2m": lambda t, la, lo: np.full(la.shape, np.nan if t == six else 293.15)},
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    values = temperature(tmp_path / "out", run)
    assert np.isnan(values[6]) and np.allclose(np.delete(values, 6), 20.0)


def test_udunits_spellings_of_units(pipeline_cli, tmp_path):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    fi.write_step_file(
        tmp_path / "d" / "forecast" / "a.nc",
        run,
        fi.gfs_steps(24),
        lat,
        lon,
        {
            "t2m": 20.0,
            "d2m": 10.0,
            "u10": 3.0,
            "v10": 4.0,
            "prmsl": 1013.25,
            "tcc": 50.0,
            "prate": 0.5,
            "gust": 28.8,
        },
        units={
            "t2m": "degree_Celsius",
            "d2m": "deg_C",
            "prmsl": "millibar",
            "prate": "mm/hr",
            "gust": "km/hr",
        },
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    spec, values = grid(contract.current_version_dir(tmp_path / "out"))
    expected = {
        F.TEMPERATURE: 20.0,
        F.DEWPOINT: 10.0,
        F.PRESSURE: 1013.25,
        F.PRECIP: 0.5,
        F.GUST: 8.0,
    }
    for name, value in expected.items():
        np.testing.assert_allclose(column(spec, values, name), value, atol=1e-4, err_msg=name)


def _rewrite(path: Path, change) -> None:
    """The file with its dataset changed by `change` (time coordinates xarray would not
    write through the helpers)."""
    with xr.open_dataset(path) as ds:
        ds = change(ds.load())
    path.unlink()
    ds.to_netcdf(path)


def _missing_time(ds: xr.Dataset) -> xr.Dataset:
    times = ds["time"].values.copy()
    times[5] = np.datetime64("NaT")
    return ds.assign_coords(time=times)


def _reference_on_another_dimension(ds: xr.Dataset) -> xr.Dataset:
    run = np.datetime64(fi.last_run(), "s").astype("datetime64[ns]")
    ds = ds.assign_coords(reftime=("ref", [run, run - np.timedelta64(6, "h")]))
    ds["reftime"].attrs["standard_name"] = "forecast_reference_time"
    return ds


@pytest.mark.parametrize(
    "change, problem",
    [
        (_missing_time, "time has 1 missing value(s) (NaT), the first at index 5"),
        (
            _reference_on_another_dimension,
            "forecast_reference_time reftime has 2 different values along ref, not along time",
        ),
    ],
)
def test_broken_time_coordinates_fail_with_the_file_and_problem(
    pipeline_cli, tmp_path, change, problem
):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    path = fi.write_time_file(
        tmp_path / "d" / "forecast" / "a.nc",
        None,
        run + 3600 * np.arange(25),
        lat,
        lon,
        {**CALM, "t2m": 293.15},
    )
    _rewrite(path, change)
    result = build(pipeline_cli, tmp_path / "d", tmp_path / "out", check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"a.nc: {problem}" in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr


def test_one_reference_time_on_another_dimension_is_the_run(pipeline_cli, tmp_path):
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    path = fi.write_time_file(
        tmp_path / "d" / "forecast" / "a.nc",
        None,
        run + 3600 * np.arange(6, 31),
        lat,
        lon,
        {**CALM, "t2m": hours_since(run)},
    )
    reference = np.datetime64(run, "s").astype("datetime64[ns]")
    _rewrite(
        path,
        lambda ds: ds.assign_coords(
            reftime=("ref", [reference], {"standard_name": "forecast_reference_time"})
        ),
    )
    build(pipeline_cli, tmp_path / "d", tmp_path / "out")
    entry = contract.read_manifest(contract.current_version_dir(tmp_path / "out"))
    assert entry["areas"]["forecast"]["run_times"] == [fi_iso(run)]


def fi_iso(unix_s: int) -> str:
    return np.datetime_as_string(np.datetime64(unix_s, "s"), unit="s") + "Z"


WGRIB2 = {
    "TMP_2maboveground": 293.15,
    "DPT_2maboveground": 283.15,
    "UGRD_10maboveground": 3.0,
    "VGRD_10maboveground": 4.0,
    "PRMSL_meansealevel": 101325.0,
    "TCDC_entireatmosphere": 50.0,
    "PRATE_surface": 0.0,
}
WGRIB2_UNITS = {
    "TMP_2maboveground": "K",
    "DPT_2maboveground": "K",
    "UGRD_10maboveground": "m/s",
    "VGRD_10maboveground": "m/s",
    "PRMSL_meansealevel": "Pa",
    "TCDC_entireatmosphere": "%",
    "PRATE_surface": "kg/m^2/s",
}


def test_wgrib2_files_are_gfs_and_a_mix_credits_each_model(pipeline_cli, tmp_path):
    # wgrib2 -netcdf writes no centre: its names are NCEP's, so GFS (public domain); an
    # ECMWF run beside it keeps its CC BY 4.0 credit, and each run is named by its model.
    run = fi.last_run()
    lat, lon = fi.global_axes(STEP)
    valid = run + 3600 * np.arange(25)
    fi.write_time_file(
        tmp_path / "w" / "forecast" / "gfs.nc", None, valid, lat, lon, WGRIB2, units=WGRIB2_UNITS
    )
    build(pipeline_cli, tmp_path / "w", tmp_path / "out-w")
    source = contract.read_manifest(contract.current_version_dir(tmp_path / "out-w"))["areas"][
        "forecast"
    ]["source"]
    assert source["model"] == "gfs" and "public domain" in source["licence"]
    assert [r["model"] for r in source["runs"]] == ["gfs"]
    mix = tmp_path / "m" / "forecast"
    fi.write_time_file(mix / "gfs.nc", None, valid, lat, lon, WGRIB2, units=WGRIB2_UNITS)
    fi.write_step_file(
        mix / "ifs.nc",
        run - 12 * 3600,
        list(range(0, 37, 3)),
        lat,
        lon,
        {
            "t2m": 293.15,
            "d2m": 283.15,
            "u10": 3.0,
            "v10": 4.0,
            "msl": 101325.0,
            "tcc": 50.0,
            "tp": 0.0,
        },
        units={"tp": "m"},
        attrs={"GRIB_centre": "ecmf"},
    )
    build(pipeline_cli, tmp_path / "m", tmp_path / "out-m")
    version = contract.current_version_dir(tmp_path / "out-m")
    entry = contract.read_manifest(version)["areas"]["forecast"]
    source = entry["source"]
    assert source["model"] == "ecmwf-ifs+gfs"
    assert "public domain" in source["licence"] and "CC BY 4.0" in source["licence"]
    assert [r["model"] for r in source["runs"]] == ["ecmwf-ifs", "gfs"]
    # flags.sources of every answer: newest run first, each by its own model
    assert ForecastData(version, entry).sources == [
        {"name": "gfs", "run_time": fi_iso(run)},
        {"name": "ecmwf-ifs", "run_time": fi_iso(run - 12 * 3600)},
    ]
