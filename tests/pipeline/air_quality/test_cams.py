"""CAMS readers on files written here with xarray (not by our writer): axes, lead times, run
dates, missing values, levels, units, zipped deliveries and every way a file can be wrong."""

from __future__ import annotations

import resource
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import contract
from pipeline.air_quality.sources import cams, cams_europe, cams_global
from pipeline.common.io import InputError
from tests.support import cams as known

REPO = Path(__file__).resolve().parents[3]

RUN = 1_795_392_000  # 2026-11-23 00 UTC
DAY = "20261123"
EU_LAT = np.array([31.5, 30.5])  # descending, as CAMS stores it
EU_LON = np.array([359.5, 0.5, 1.5])  # 0-360 across Greenwich
POLLUTANTS = ("pm2p5_conc", "pm10_conc", "o3_conc", "no2_conc", "so2_conc", "co_conc")


def europe(
    path: Path,
    day: str = DAY,
    hours=(0, 1, 2),
    values=None,
    attrs=None,
    time_attrs=None,
    names=POLLUTANTS,
    levels=(0.0,),
) -> Path:
    """A CAMS Europe file: (time, level, latitude, longitude), hours from the run date."""
    shape = (len(hours), len(levels), len(EU_LAT), len(EU_LON))
    if values is None:  # value = 100 x level index + 10 x row (file order) + column
        values = (
            np.arange(len(levels))[None, :, None, None] * 100.0
            + np.arange(len(EU_LAT))[None, None, :, None] * 10.0
            + np.arange(len(EU_LON))[None, None, None, :]
            + np.zeros(shape)
        )
    ds = xr.Dataset(
        {
            n: (
                ("time", "level", "latitude", "longitude"),
                np.asarray(values, np.float32),
                {"units": "µg/m3"},
            )
            for n in names
        },
        coords={
            "time": (
                "time",
                np.asarray(hours, np.float32),
                time_attrs
                if time_attrs is not None
                else {"units": "hours", "long_name": f"FORECAST time from {day}"},
            ),
            "level": ("level", np.asarray(levels, np.float32), {"units": "m"}),
            "latitude": ("latitude", EU_LAT.astype(np.float32)),
            "longitude": ("longitude", EU_LON.astype(np.float32)),
        },
        attrs=attrs if attrs is not None else {"FORECAST": f"Europe, {day}+[0H_96H]"},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path, format="NETCDF3_64BIT")
    return path


def scan_europe(folder: Path, tmp_path: Path, decode_timedelta=None):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return cams_europe.scan(folder, scratch, decode_timedelta)


@pytest.mark.parametrize("decode_timedelta", [None, True, False])
def test_europe_axes_times_and_values_are_normalised(tmp_path, decode_timedelta):
    values = np.arange(3 * 6, dtype=np.float32).reshape(3, 1, 2, 3) + 1
    values[1, 0, 0, 2] = -999.0  # missing
    values[2, 0, 1, 0] = -0.25  # tiny negative model value
    europe(tmp_path / "in" / "a.nc", values=values)
    [run] = scan_europe(tmp_path / "in", tmp_path, decode_timedelta)
    assert run.reference_time == RUN and run.fields["pm25_ugm3"].lead_hours.tolist() == [0, 1, 2]
    np.testing.assert_allclose(run.axes.lat, [30.5, 31.5])
    np.testing.assert_allclose(run.axes.lon, [-0.5, 0.5, 1.5])
    field = cams.read_field(run, "pm25_ugm3", decode_timedelta)
    # output row 0 is the file's last (southern) row; column 0 is the file's 359.5
    np.testing.assert_array_equal(field[0], values[0, 0, ::-1])
    assert np.isnan(field[1, 1, 2]) and field[2, 0, 0] == 0.0
    assert set(run.fields) == set(cams_europe.POLLUTANTS.values())


def test_europe_surface_level_is_chosen(tmp_path):
    europe(tmp_path / "in" / "a.nc", levels=(50.0, 0.0))
    [run] = scan_europe(tmp_path / "in", tmp_path)
    field = cams.read_field(run, "o3_ugm3")
    assert field.min() >= 100  # the second level (index 1) holds 0 m


@pytest.mark.parametrize(
    "attrs, time_attrs, kind",
    [
        ({"FORECAST": f"Europe, {DAY}+[0H_96H]"}, {"units": "hours"}, "forecast"),
        ({}, {"units": "hours", "long_name": f"FORECAST time from {DAY}"}, "forecast"),
        (
            {"ANALYSIS": f"Europe, {DAY}"},
            {"units": "hours", "long_name": f"ANALYSIS time from {DAY}"},
            "analysis",
        ),
        ({}, {"units": "hours", "long_name": f"Analysis time from {DAY}"}, "analysis"),
    ],
)
def test_run_date_and_kind_from_the_attribute_or_the_time_long_name(
    tmp_path, attrs, time_attrs, kind
):
    path = europe(tmp_path / "a.nc", attrs=attrs, time_attrs=time_attrs)
    with cams.open_dataset(path) as ds:
        assert cams_europe.run_date(ds, path) == RUN
        assert cams_europe.run_kind(ds, path) == kind


def test_analysis_and_forecast_of_one_date_are_runs_of_their_own_kinds(tmp_path):
    """The analysis takes precedence for its hours; the forecast is the newest forecast."""
    europe(tmp_path / "in" / "forecast.nc")
    europe(
        tmp_path / "in" / "analysis.nc",
        hours=range(24),
        attrs={"ANALYSIS": f"Europe, {DAY}+[0H_23H]"},
        time_attrs={"units": "hours", "long_name": f"ANALYSIS time from {DAY}"},
    )
    europe(
        tmp_path / "in" / "old-analysis.nc",
        day="20261122",
        hours=range(24),
        attrs={"ANALYSIS": "Europe, 20261122+[0H_23H]"},
        time_attrs={"units": "hours"},
    )
    runs = scan_europe(tmp_path / "in", tmp_path)
    assert [(r.kind, r.reference_time) for r in runs] == [
        ("analysis", RUN),
        ("analysis", RUN - 86400),
        ("forecast", RUN),
    ]
    assert runs[0].fields["pm25_ugm3"].path.name == "analysis.nc"
    assert cams.newest_forecast(runs, tmp_path).fields["pm25_ugm3"].path.name == "forecast.nc"


@pytest.mark.parametrize(
    "files, problem",
    [
        (
            [
                (
                    "a.nc",
                    {"ANALYSIS": f"Europe, {DAY}"},
                    {"units": "hours", "long_name": f"FORECAST time from {DAY}"},
                )
            ],
            "says both FORECAST and ANALYSIS",
        ),
        (
            [("a.nc", {"FORECAST": f"Europe, {DAY}", "ANALYSIS": f"Europe, {DAY}"}, None)],
            "says both FORECAST and ANALYSIS",
        ),
        ([("a.nc", {"ANALYSIS": f"Europe, {DAY}"}, None)], "only ANALYSIS files"),
    ],
)
def test_forecast_and_analysis_confusions_are_refused(tmp_path, files, problem):
    for name, attrs, time_attrs in files:
        europe(tmp_path / "in" / name, attrs=attrs, time_attrs=time_attrs or {"units": "hours"})
    with pytest.raises(InputError, match=problem):
        scan_europe(tmp_path / "in", tmp_path)


@pytest.mark.parametrize(
    "attrs, time_attrs, problem",
    [
        ({}, {"units": "hours"}, "no run date"),
        (
            {"FORECAST": "Europe, 20261122+[0H_96H]"},
            {"units": "hours", "long_name": f"FORECAST time from {DAY}"},
            "different dates",
        ),
    ],
)
def test_run_date_missing_or_contradictory(tmp_path, attrs, time_attrs, problem):
    path = europe(tmp_path / "in" / "a.nc", attrs=attrs, time_attrs=time_attrs)
    with pytest.raises(InputError, match=problem) as caught:
        scan_europe(tmp_path / "in", tmp_path)
    assert caught.value.path == str(path)


def test_runs_are_newest_first_and_variables_may_come_in_separate_files(tmp_path):
    europe(tmp_path / "in" / "old.nc", day="20261122")
    europe(tmp_path / "in" / "new-pm.nc", names=POLLUTANTS[:3])
    europe(tmp_path / "in" / "new-gas.nc", names=POLLUTANTS[3:] + ("bpg_conc",))
    runs = scan_europe(tmp_path / "in", tmp_path)
    assert [r.reference_time for r in runs] == [RUN, RUN - 86400]
    assert set(runs[0].fields) == set(cams_europe.POLLUTANTS.values()) | {"birch_pollen_grains_m3"}
    assert runs[0].fields["pm25_ugm3"].path.name == "new-pm.nc"


@pytest.mark.parametrize(
    "break_it, problem",
    [
        (lambda d: europe(d / "a.nc", names=POLLUTANTS[1:]), "no run provides pm25_ugm3"),
        (lambda d: (d / "a.nc").write_bytes(b"CDF\x02 truncated"), "not a readable NetCDF"),
        (lambda d: europe(d / "a.nc", names=("something_else",)), "none of the CAMS Europe"),
        (lambda d: europe(d / "a.nc", hours=(0, 0.5, 1)), "whole hours"),
        (lambda d: europe(d / "a.nc", levels=(50.0,)), "no level 0"),
        (
            lambda d: (europe(d / "a.nc"), europe(d / "b.nc", hours=(0, 1))),
            "pm2p5_conc of the forecast of 2026-11-23T00:00:00Z is also in a.nc",
        ),
    ],
)
def test_bad_europe_inputs_raise_input_errors(tmp_path, break_it, problem):
    folder = tmp_path / "in"
    folder.mkdir()
    break_it(folder)
    with pytest.raises(InputError, match=problem):
        scan_europe(folder, tmp_path)


def test_runs_may_differ_in_length(tmp_path):
    europe(tmp_path / "in" / "a.nc")
    europe(tmp_path / "in" / "b.nc", day="20261122", hours=(0, 1))
    runs = scan_europe(tmp_path / "in", tmp_path)
    assert [r.fields["o3_ugm3"].lead_hours.tolist() for r in runs] == [[0, 1, 2], [0, 1]]
    assert [r.span_s() for r in runs] == [(RUN, RUN + 7200), (RUN - 86400, RUN - 82800)]


def test_runs_on_different_grids_are_refused(tmp_path):
    europe(tmp_path / "in" / "a.nc")
    ds = xr.open_dataset(europe(tmp_path / "other.nc", day="20261122"))
    ds = ds.assign_coords(latitude=ds.latitude + 1)
    ds.to_netcdf(tmp_path / "in" / "b.nc", format="NETCDF3_64BIT")
    with pytest.raises(InputError, match="grid differs from the newest forecast's"):
        scan_europe(tmp_path / "in", tmp_path)


def test_pollutant_units_in_kilograms_are_refused(tmp_path):
    path = europe(tmp_path / "x.nc")
    ds = xr.load_dataset(path)
    ds["o3_conc"].attrs["units"] = "kg m**-3"
    (tmp_path / "in").mkdir()
    ds.to_netcdf(tmp_path / "in" / "a.nc", format="NETCDF3_64BIT")
    with pytest.raises(InputError, match="o3_conc has units 'kg m\\*\\*-3'"):
        scan_europe(tmp_path / "in", tmp_path)


def test_zipped_files_are_read(tmp_path):
    inner = europe(tmp_path / "a.nc")
    (tmp_path / "in").mkdir()
    with zipfile.ZipFile(tmp_path / "in" / "delivery.zip", "w") as archive:
        archive.write(inner, "../../escape/a.nc")  # member paths are never used as paths
    [run] = scan_europe(tmp_path / "in", tmp_path)
    assert run.reference_time == RUN
    assert not (tmp_path / "escape").exists()
    (tmp_path / "in" / "broken.zip").write_bytes(b"PK\x03\x04 nothing")
    with pytest.raises(InputError, match="unreadable zip"):
        scan_europe(tmp_path / "in", tmp_path)


def test_a_zip_member_that_cannot_be_extracted_names_the_copy(tmp_path):
    # A full disk (here a file size limit, in a process of its own) while extracting is no
    # fault of the archive's.
    (tmp_path / "in").mkdir()
    with zipfile.ZipFile(tmp_path / "in" / "delivery.zip", "w") as archive:
        archive.write(europe(tmp_path / "a.nc"), "a.nc")
    script = (
        "import sys; from pathlib import Path; from pipeline.air_quality.sources import cams\n"
        "try:\n    cams.netcdf_files(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "except OSError as exc:\n    print(exc.filename); print(exc.strerror)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "in"), str(tmp_path / "scratch")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256)),
    )
    assert done.stdout.splitlines() == [
        str(tmp_path / "scratch" / "unzipped" / "delivery" / "000-a.nc"),
        "File too large",
    ], done.stderr[-2000:]


def test_a_zip_member_whose_data_is_corrupt_blames_the_archive(tmp_path):
    (tmp_path / "in").mkdir()
    archive_path = tmp_path / "in" / "delivery.zip"
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(europe(tmp_path / "a.nc"), "a.nc")
    data = bytearray(archive_path.read_bytes())
    data[60:90] = b"\xff" * 30  # inside the member's deflate stream
    archive_path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="unreadable zip archive"):
        scan_europe(tmp_path / "in", tmp_path)


GL_LAT = np.array([90.0, 0.0, -90.0])
GL_LON = np.array([0.0, 90.0, 180.0, 270.0])


def world(
    path: Path,
    names: dict[str, str],
    levels=None,
    periods=(0, 3, 6),
    references=(RUN,),
    valid_shift_s: int = 0,
) -> Path:
    """A CAMS global file as the ADS converts it (forecast_period, forecast_reference_time,
    [model_level,] latitude, longitude) with a valid_time coordinate."""
    dims = (
        ("forecast_period", "forecast_reference_time")
        + (("model_level",) if levels else ())
        + ("latitude", "longitude")
    )
    shape = (len(periods), len(references)) + ((len(levels),) if levels else ()) + (3, 4)
    values = np.zeros(shape, np.float32)
    if levels:  # level k holds k + 1 (scaled to the variable's unit below)
        values += np.arange(1, len(levels) + 1, dtype=np.float32)[None, None, :, None, None]
    else:
        values += 1.0
    refs = np.array(references, dtype="datetime64[s]").astype("datetime64[ns]")
    valid = (
        refs[:, None]
        + np.array(periods, dtype="timedelta64[h]")[None, :]
        + np.timedelta64(valid_shift_s, "s")
    )
    coords = {
        "forecast_period": ("forecast_period", np.array(periods), {"units": "hours"}),
        "forecast_reference_time": ("forecast_reference_time", refs),
        "valid_time": (("forecast_reference_time", "forecast_period"), valid),
        "latitude": ("latitude", GL_LAT),
        "longitude": ("longitude", GL_LON),
    }
    if levels:
        coords["model_level"] = ("model_level", np.array(levels))
    ds = xr.Dataset(
        {
            n: (dims, values * np.float32(scale_of(n)), {"units": units})
            for n, units in names.items()
        },
        coords=coords,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path, format="NETCDF4")
    return path


def scale_of(name: str) -> float:
    """File units per area unit (the inverse of the reader's factor)."""
    return 1.0 / cams_global.VARIABLES[name][1]


SURFACE = {"pm2p5": "kg m**-3", "pm10": "kg m**-3", "duaod550": "~"}
MODEL = {"go3": "kg kg**-1", "no2": "kg kg**-1", "so2": "kg kg**-1", "co": "kg kg**-1"}


def scan_world(folder: Path, tmp_path: Path):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return cams_global.scan(folder, scratch)


def test_global_units_levels_and_runs(tmp_path):
    world(tmp_path / "in" / "sfc.nc", SURFACE, references=(RUN - 43200, RUN))
    world(tmp_path / "in" / "ml.nc", MODEL, levels=(136, 137), references=(RUN - 43200, RUN))
    runs = scan_world(tmp_path / "in", tmp_path)
    assert [r.reference_time for r in runs] == [RUN, RUN - 43200]
    run = runs[0]
    assert run.fields["co_ugm3"].lead_hours.tolist() == [0, 3, 6]
    assert run.axes.lon.tolist() == [-180, -90, 0, 90]
    np.testing.assert_allclose(cams.read_field(run, "pm25_ugm3"), 1.0, rtol=1e-6)
    np.testing.assert_allclose(cams.read_field(run, "dust_aod"), 1.0)
    np.testing.assert_allclose(cams.read_field(run, "o3_ugm3"), 2.0, rtol=1e-6)  # level 137
    # the factors of docs/data/air-quality.md#units-conversion: kg/m³ x 1e9; kg/kg x 1.223803 x 1e9
    assert cams_global.VARIABLES["pm10"][1] == 1e9
    assert cams_global.VARIABLES["co"][1] == pytest.approx(1.223803e9)


def test_global_surface_hourly_and_model_levels_three_hourly(tmp_path):
    """As the ADS serves CAMS global: surface fields hourly, model-level fields 3-hourly."""
    world(tmp_path / "in" / "sfc.nc", SURFACE, periods=range(0, 121))
    world(tmp_path / "in" / "ml.nc", MODEL, levels=(137,), periods=range(0, 121, 3))
    [run] = scan_world(tmp_path / "in", tmp_path)
    for name, step in (("pm25_ugm3", 1), ("dust_aod", 1), ("o3_ugm3", 3), ("co_ugm3", 3)):
        assert run.fields[name].lead_hours.tolist() == list(range(0, 121, step)), name
        assert cams.read_field(run, name).shape == (121 // step + (step > 1), 3, 4)
    assert run.span_s() == (RUN, RUN + 120 * 3600)


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda d: world(d / "ml.nc", MODEL, levels=(1, 60)), "no model_level 137"),
        (lambda d: world(d / "sfc.nc", SURFACE, valid_shift_s=3600), "valid_time"),
        (lambda d: world(d / "sfc.nc", {"pm2p5": "µg m**-3"}), "expected kg"),
        (lambda d: world(d / "sfc.nc", SURFACE), "no run provides o3_ugm3"),
        (
            lambda d: (
                world(d / "a.nc", SURFACE),
                world(d / "b.nc", {"pm10": "kg m**-3"}, periods=(0, 1)),
            ),
            "pm10 of the forecast of 2026-11-23T00:00:00Z is also in a.nc",
        ),
    ],
)
def test_bad_global_inputs_raise_input_errors(tmp_path, make, problem):
    folder = tmp_path / "in"
    make(folder)
    with pytest.raises(InputError, match=problem):
        scan_world(folder, tmp_path)


def test_empty_folder_is_an_input_error(tmp_path):
    (tmp_path / "in").mkdir()
    with pytest.raises(InputError, match="no NetCDF files"):
        scan_world(tmp_path / "in", tmp_path)


# --- through the CLI ---------------------------------------------------------------------------


def grid_bytes(out: Path) -> dict[str, bytes]:
    version = contract.current_version_dir(out)
    entry = contract.read_manifest(version)["areas"]["air_quality"]
    return {f: (version / f).read_bytes() for f in entry["files"]} | {"version": entry["version"]}


@pytest.mark.slow
def test_same_inputs_give_the_same_bytes(tmp_path, pipeline_cli):
    datasets = known.write_known(tmp_path / "datasets", RUN)
    first = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "a", "--only", "air_quality"
    )
    second = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "b", "--only", "air_quality"
    )
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert grid_bytes(tmp_path / "a") == grid_bytes(tmp_path / "b")
    manifest = contract.read_manifest(contract.current_version_dir(tmp_path / "a"))
    source = manifest["areas"]["air_quality"]["source"]
    assert source["kind"] == "real" and source["generated"] is False
    assert (
        "Contains modified Copernicus Atmosphere Monitoring Service information"
        in source["licence"]
    )
    inputs = {i["path"] for i in manifest["areas"]["air_quality"]["inputs"]}
    assert "cams/europe/europe-20261123.nc" in inputs
    assert "cams/global/global-20261122-ml.nc" in inputs


@pytest.mark.slow
def test_a_broken_input_fails_the_build_and_keeps_the_published_version(tmp_path, pipeline_cli):
    datasets = known.write_known(tmp_path / "datasets", RUN)
    out = tmp_path / "out"
    assert (
        pipeline_cli(
            "build", "--datasets", datasets, "--out", out, "--only", "air_quality"
        ).returncode
        == 0
    )
    published = contract.current_version_dir(out)
    broken = datasets / "cams" / "global" / "global-20261123-sfc.nc"
    broken.write_bytes(broken.read_bytes()[:2000])
    result = pipeline_cli("build", "--datasets", datasets, "--out", out, "--only", "air_quality")
    assert result.returncode == 1
    assert f"error: build failed: {broken}: " in result.stderr
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == published
    assert sorted(p.name for p in (out / contract.VERSIONS).iterdir()) == [published.name]
