"""The air-quality area of the default build (generated CAMS-format runs): the manifest, the
artifact as a user opens it, and indices at a point that agree with the concentrations."""

from __future__ import annotations

import time

import numpy as np
import pytest

import contract
from contract import AirQuality as AQ
from pipeline.air_quality import aqi
from pipeline.common.regrid import Bilinear
from server.artifacts.grid import PointGrid
from tests.support.procs import get


@pytest.fixture(scope="module")
def artifact(default_build):
    version = contract.current_version_dir(default_build)
    entry = contract.read_manifest(version)["areas"][AQ.AREA]
    grids = {
        name: np.load(version / spec["file"], mmap_mode="r")
        for name, spec in entry["grids"].items()
    }
    return version, entry, grids


def fetch(server, coordinates: str) -> dict:
    reply = get(f"{server.url}/air-quality/{coordinates}", {"X-API-Key": server.key})
    assert reply.status == 200, reply.body[:300]
    return reply.json()


def test_manifest_says_generated_and_names_runs_inputs_and_licence(artifact):
    version, entry, _ = artifact
    assert entry["version"].startswith("air_quality-")
    assert entry["source"]["kind"] == "generated" and entry["source"]["generated"] is True
    assert "no CAMS data" in entry["source"]["licence"]
    domains = entry["source"]["domains"]
    assert set(domains) == {AQ.EUROPE, AQ.GLOBAL}
    for domain in domains.values():
        assert domain["kind"] == "generated" and len(domain["runs"]) == 2
        assert domain["analyses"] == [] and domain["us_aqi_from"] == domain["hours"][0]
    assert {i["domain"] for i in entry["inputs"]} == {AQ.EUROPE, AQ.GLOBAL}
    assert all(len(i["sha256"]) == 64 for i in entry["inputs"])
    assert sorted(entry["files"]) == sorted(AQ.GRID_FILES.values())
    assert all((version / f).is_file() for f in entry["files"])
    assert not any(p.name.startswith(".air_quality") for p in version.iterdir())
    europe, world = entry["grids"][AQ.EUROPE], entry["grids"][AQ.GLOBAL]
    assert europe["variables"] == list(AQ.EUROPE_VARIABLES) and not europe["wraps"]
    assert world["variables"] == list(AQ.GLOBAL_VARIABLES) and world["wraps"]
    # the reduced grids keep the real domain's edges
    assert europe["lat0"] - europe["dlat"] / 2 == 30.0
    assert europe["lon0"] - europe["dlon"] / 2 == -25.0
    assert entry[AQ.AQI_TABLES] == aqi.manifest_tables()
    assert "europe_box" not in entry  # the domain is contract.AirQuality.EUROPE_BOX


def test_stored_values_are_plausible(artifact):
    _, entry, grids = artifact
    for name, values in grids.items():
        variables = entry["grids"][name]["variables"]
        for k, variable in enumerate(variables):
            column = values[..., k]
            if variable.endswith("_pollen_grains_m3") and np.isnan(column).all():
                continue  # out of season: unknown, served as null
            assert np.nanmin(column) >= 0, variable
            assert np.isfinite(column).mean() > 0.99, variable


def test_european_dust_is_the_global_dust_regridded(artifact):
    """Each European cell holds the global grid's dust AOD bilinear at its centre, hour by
    hour where the global grid serves the hour (NaN elsewhere)."""
    _, entry, grids = artifact
    europe, world = entry["grids"][AQ.EUROPE], entry["grids"][AQ.GLOBAL]
    lat = europe["lat0"] + europe["dlat"] * np.arange(europe["nlat"])
    lon = europe["lon0"] + europe["dlon"] * np.arange(europe["nlon"])
    interpolate = Bilinear(world, lat, lon)
    dust = grids[AQ.GLOBAL][
        interpolate.first_row : interpolate.stop_row, :, :, world["variables"].index(AQ.DUST_AOD)
    ]
    expected = interpolate(np.moveaxis(dust, 2, 0))  # (global hours, lat, lon)
    stored = np.moveaxis(grids[AQ.EUROPE][..., europe["variables"].index(AQ.DUST_AOD)], 2, 0)
    shift = (europe["time0"] - world["time0"]) // 3600
    for k in range(europe["ntime"]):
        if 0 <= k + shift < world["ntime"]:
            np.testing.assert_array_equal(stored[k], expected[k + shift])
        else:
            assert np.isnan(stored[k]).all()


def test_grids_store_concentrations_and_no_index(artifact):
    """Decision (docs/data/air-quality.md#aqi-at-the-point): the indices are evaluated at the point
    from the interpolated concentrations, so no per-cell AQI is stored."""
    _, entry, grids = artifact
    for name, spec in entry["grids"].items():
        assert not {"us_aqi", "european_aqi"} & set(spec["variables"]), name
        assert grids[name].shape[-1] == len(spec["variables"])


def test_index_at_a_cell_centre_is_the_index_of_the_cell(server, artifact):
    _, entry, grids = artifact
    spec = entry["grids"][AQ.EUROPE]
    i, j = 35, 65  # a cell of central Europe
    lat, lon = spec["lat0"] + i * spec["dlat"], spec["lon0"] + j * spec["dlon"]
    body = fetch(server, f"{lat},{lon}")
    first = (body["current"]["time"] - spec["time0"]) // 3600
    stored = grids[AQ.EUROPE][i, j, first : first + len(body["hourly"]["data"])]
    columns = {v: stored[:, k] for k, v in enumerate(spec["variables"])}
    us, eu = aqi.us_aqi(columns), aqi.european_aqi(columns)
    for k, record in enumerate(body["hourly"]["data"]):
        assert record["usAqi"] == us[k] and record["europeanAqi"] == eu[k]
        assert record["pm25"] == round(float(columns["pm25_ugm3"][k]), 1)


@pytest.mark.parametrize(
    "coordinates", ["47.3769,8.5417", "41.123,12.987", "28.61,77.21", "-33.9,151.2", "40.71,-74.01"]
)
def test_index_between_cells_is_the_index_of_the_interpolated_concentrations(
    server, artifact, coordinates
):
    version, entry, _ = artifact
    lat, lon = map(float, coordinates.split(","))
    inside = 30 <= lat <= 72 and -25 <= lon <= 45
    spec = entry["grids"][AQ.EUROPE if inside else AQ.GLOBAL]
    body = fetch(server, coordinates)
    grid = PointGrid(version, spec)
    first = (body["current"]["time"] - spec["time0"]) // 3600
    values = grid.series(lat, lon, first)
    columns = {v: values[:, k] for k, v in enumerate(spec["variables"])}
    us, eu = aqi.us_aqi(columns), aqi.european_aqi(columns)
    assert [r["usAqi"] for r in body["hourly"]["data"]] == us.astype(int).tolist()
    assert [r["europeanAqi"] for r in body["hourly"]["data"]] == eu.astype(int).tolist()
    assert ("dustAod" in body["current"]) is inside
    assert ("pollenBirch" in body["current"]) is inside


def test_current_is_this_hour_and_hourly_runs_to_the_end(server, artifact):
    _, entry, _ = artifact
    before = int(time.time() // 3600 * 3600)
    body = fetch(server, "52.52,13.40")
    assert body["current"]["time"] in (before, before + 3600)
    spec = entry["grids"][AQ.EUROPE]
    end = spec["time0"] + (spec["ntime"] - 1) * 3600
    assert body["hourly"]["data"][-1]["time"] == end
    assert body["timezone"] == "Europe/Berlin"
