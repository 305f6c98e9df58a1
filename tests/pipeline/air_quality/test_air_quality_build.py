"""The air-quality build on small real-format CAMS inputs (through the CLI): forecasts and
analyses stitched by precedence, a history too short for the 24-hour windows; grids that must
cover their domains, in the pipeline and in the server's loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import contract
from contract import AirQuality as AQ
from pipeline.air_quality import build as air_quality
from pipeline.air_quality.sources import cams
from pipeline.air_quality.sources import generated as gen
from pipeline.common import grid as writer
from pipeline.common.io import InputError
from server.air_quality import handlers as aq_server
from server.artifacts.grid import PointGrid
from tests.support import cams as known

pytestmark = pytest.mark.slow  # they build with the pipeline

RUN = 1_795_392_000  # 2026-11-23 00 UTC
DAY_S = 86400


def built(out):
    """(version directory, air-quality manifest entry) of the published build."""
    version = contract.current_version_dir(out)
    return version, contract.read_manifest(version)["areas"][AQ.AREA]


def series_at(version, spec: dict, lat: float, lon: float, variable: str) -> np.ndarray:
    """The stored hourly series of one variable at the cell centre nearest to a point."""
    values = np.load(version / spec["file"], mmap_mode="r")
    i = round((lat - spec["lat0"]) / spec["dlat"])
    j = round((lon - spec["lon0"]) / spec["dlon"])
    return np.asarray(values[i, j, :, spec["variables"].index(variable)])


def test_an_analysis_takes_precedence_over_the_forecast_for_its_hours(tmp_path, pipeline_cli):
    datasets = known.write_known(tmp_path / "datasets", RUN)
    known.write_europe_analysis(datasets, RUN, RUN, west_pm25=33.0)
    known.write_europe_analysis(datasets, RUN - DAY_S, RUN, west_pm25=41.0)
    result = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "out", "--only", "air_quality"
    )
    assert result.returncode == 0, result.stderr
    assert "US AQI is unknown" not in result.stderr
    version, entry = built(tmp_path / "out")
    domain = entry["source"]["domains"][AQ.EUROPE]
    assert domain["us_aqi_from"] == cams.iso(RUN)  # a day of history: complete
    assert domain["runs"] == [cams.iso(RUN), cams.iso(RUN - DAY_S)]
    assert domain["analyses"] == [cams.iso(RUN), cams.iso(RUN - DAY_S)]
    spec = entry["grids"][AQ.EUROPE]
    assert spec["time0"] == RUN  # the newest forecast's time
    pm25 = series_at(version, spec, 45.5, 0.5, "pm25_ugm3")
    assert pm25[:24].tolist() == [33.0] * 24  # today's analysis
    assert pm25[24:].tolist() == [known.WEST["pm25_ugm3"]] * (len(pm25) - 24)
    # yesterday's analysis (41) replaced yesterday's forecast (50) in the 24-hour history
    mean = series_at(version, spec, 45.5, 0.5, "pm25_24h_ugm3")
    assert mean[0] == np.float32((23 * 41.0 + 33.0) / 24)


def test_a_single_run_warns_and_the_manifest_names_the_first_hour_with_a_us_aqi(
    tmp_path, pipeline_cli
):
    """One run gives no history: the 24-hour means need 18 of their hours, so the US AQI is
    known from the run's hour 17 (hours 0-17 are 18 hours)."""
    datasets = known.write_known(tmp_path / "datasets", RUN, days=(0,))
    result = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "out", "--only", "air_quality"
    )
    assert result.returncode == 0, result.stderr
    _, entry = built(tmp_path / "out")
    for name in (AQ.EUROPE, AQ.GLOBAL):
        assert entry["source"]["domains"][name]["us_aqi_from"] == cams.iso(RUN + 17 * 3600)
        assert (
            f"{name}: the US AQI is unknown before {cams.iso(RUN + 17 * 3600)}: the runs "
            "give 0 hour(s) of history"
        ) in result.stderr


# --- coverage: no answer may clamp to a grid's edge ----------------------------------------------


def cams_axes(lat_desc: np.ndarray, lon_0360: np.ndarray) -> cams.Axes:
    """Axes read from float32 coordinates, as CAMS stores them."""
    ds = xr.Dataset(
        coords={"latitude": lat_desc.astype(np.float32), "longitude": lon_0360.astype(np.float32)}
    )
    return cams.axes(ds, Path("x.nc"))


def real_axes() -> dict[str, cams.Axes]:
    """The real CAMS grids: Europe 0.1° (71.95 ... 30.05, 335.05 ... 44.95), global 0.4°."""
    return {
        AQ.EUROPE: cams_axes(71.95 - 0.1 * np.arange(420), (335.05 + 0.1 * np.arange(700)) % 360),
        AQ.GLOBAL: cams_axes(90 - 0.4 * np.arange(451), 0.4 * np.arange(900)),
    }


def point_grid(tmp_path, name: str, axes: cams.Axes) -> PointGrid:
    spec = writer.spec(f"{name}.npy", axes.lat, axes.lon, RUN, 3600, 1, ["x"])
    writer.write(tmp_path, spec, lambda a, b: np.zeros((1, 1, b - a, len(axes.lon))))
    return PointGrid(tmp_path, spec)


def run_on(axes: cams.Axes) -> cams.Run:
    run = cams.Run("test", RUN, axes)
    run.add("x", cams.Field(Path("x.nc"), "x", {}, "time", np.arange(1)))
    return run


def test_real_resolution_float32_grids_cover_their_domains_edges_included(tmp_path):
    axes = real_axes()
    for name, grid_axes in axes.items():
        air_quality.check_coverage(name, run_on(grid_axes))  # the pipeline accepts
    europe = point_grid(tmp_path, AQ.EUROPE, axes[AQ.EUROPE])
    world = point_grid(tmp_path, AQ.GLOBAL, axes[AQ.GLOBAL])
    aq_server.check_coverage(europe, world)  # the server accepts
    for lat, lon in (
        (72.0, 10.0),
        (47.0, 45.0),
        (72.0, -25.0),
        (30.0, -25.0),
        (30.0, 45.0),
        (72.0, 45.0),
    ):
        assert europe.contains(lat, lon), (lat, lon)


def test_grids_short_of_their_domain_are_refused(tmp_path):
    axes = real_axes()
    cropped = cams_axes(71.85 - 0.1 * np.arange(419), (335.05 + 0.1 * np.arange(699)) % 360)
    regional = cams_axes(90 - 0.4 * np.arange(451), 0.4 * np.arange(450))
    with pytest.raises(InputError, match="the europe grid must cover 30 to 72, -25 to 45"):
        air_quality.check_coverage(AQ.EUROPE, run_on(cropped))
    with pytest.raises(InputError, match="the global grid must cover -90 to 90"):
        air_quality.check_coverage(AQ.GLOBAL, run_on(regional))
    world = point_grid(tmp_path, AQ.GLOBAL, axes[AQ.GLOBAL])
    with pytest.raises(ValueError, match="does not reach"):
        aq_server.check_coverage(point_grid(tmp_path, AQ.EUROPE, cropped), world)
    with pytest.raises(ValueError, match="does not cover the globe"):
        aq_server.check_coverage(
            point_grid(tmp_path, AQ.EUROPE, axes[AQ.EUROPE]),
            point_grid(tmp_path, AQ.GLOBAL, regional),
        )


def test_a_cropped_european_input_fails_the_build_naming_it(tmp_path, pipeline_cli):
    datasets = known.write_known(tmp_path / "datasets", RUN, days=(0,))
    whole = gen.europe_grid(1.0)
    path = datasets / "cams" / "europe" / f"europe-{gen.stamp(RUN)}.nc"
    gen.write_europe_run(path, RUN, gen.GridDef(whole.lat[:-2], whole.lon, 1.0))
    result = pipeline_cli(
        "build", "--datasets", datasets, "--out", tmp_path / "out", "--only", "air_quality"
    )
    assert result.returncode == 1
    assert f"error: build failed: {path}: covers latitudes 32 to 72" in result.stderr


def _truncate(path: Path) -> None:
    """Cut the file in half, as an interrupted download leaves it."""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _no_pm25(path: Path) -> None:
    """Every PM2.5 value missing, as a broken download can deliver them."""
    ds = xr.load_dataset(path)
    ds["pm2p5_conc"][:] = np.nan
    ds.to_netcdf(path, format="NETCDF3_64BIT")


@pytest.mark.parametrize(
    "damage, problem",
    [
        (_truncate, "truncated: expected"),
        (_no_pm25, "pm2p5_conc of the forecast of 2026-11-23T00:00:00Z has no values"),
    ],
    ids=["truncated", "pm25-all-missing"],
)
def test_a_broken_newest_european_run_fails_the_build_naming_it(
    tmp_path, pipeline_cli, damage, problem
):
    datasets = known.write_known(tmp_path / "datasets", RUN)
    out = tmp_path / "out"
    args = ("build", "--datasets", datasets, "--out", out, "--only", "air_quality")
    assert pipeline_cli(*args).returncode == 0
    previous = contract.current_version_dir(out)
    newest = datasets / "cams" / "europe" / f"europe-{gen.stamp(RUN)}.nc"
    damage(newest)
    result = pipeline_cli(*args)
    assert result.returncode == 1
    assert f"error: build failed: {newest}: {problem}" in result.stderr
    assert f"{previous.name} is still published" in result.stderr
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == previous
