"""End to end: both CAMS sources fetched from the ADS stand-in with the real cdsapi client,
`python -m pipeline build --only air_quality`, a real server; what it serves at a grid cell is
the value in the delivered NetCDF there, decoded here with netCDF4 alone."""

from __future__ import annotations

import time

import netCDF4
import numpy as np
import pytest

from pipeline.air_quality.sources.cams_fetch import stamp
from tests.support.procs import Server, get
from tests.support.upstreams.ads import AdsStandIn, Running

TOKEN = "end-to-end-token"
AIR_DENSITY_KG_M3 = 1.223803  # the science note's kg/kg -> kg/m³, written out here


@pytest.fixture(scope="module")
def served(module_tmp, pipeline_cli, keys_file):
    """Fetch both sources, build the area, serve it; (server, datasets, today 00 UTC)."""
    root = module_tmp("cams-served")
    (root / "ads").mkdir()
    with Running(AdsStandIn(root / "ads", tokens={TOKEN})) as ads:
        env = {
            "WEATHERAPI_CAMS_BASE_URL": ads.url,
            "CDSAPI_KEY": TOKEN,
            "CDSAPI_RC": str(root / "none"),
            "WEATHERAPI_CAMS_POLL_S": "0.02",
        }
        for source in ("cams-europe", "cams-global"):
            result = pipeline_cli("fetch", source, "--datasets", root / "datasets", **env)
            assert result.returncode == 0, result.stderr
    result = pipeline_cli(
        "build", "--datasets", root / "datasets", "--out", root / "build", "--only", "air_quality"
    )
    assert result.returncode == 0, result.stderr
    assert "reading CAMS files from" in result.stderr
    with Server(root / "build", keys_file[0]) as srv:
        srv.wait_ready()
        yield srv, keys_file[1], root / "datasets", int(time.time() // 86400 * 86400)


def cell(path, variable: str, lat: float, lon: float, level: dict | None = None):
    """(lead hours, values) of a variable at the cell whose centre is (lat, lon)."""
    with netCDF4.Dataset(path) as ds:
        i = int(np.flatnonzero(np.isclose(ds["latitude"][:], lat))[0])
        j = int(np.flatnonzero(np.isclose(ds["longitude"][:], lon % 360))[0])
        time_name = "time" if "time" in ds.variables else "forecast_period"
        var = ds[variable]
        index = tuple(
            i
            if d == "latitude"
            else j
            if d == "longitude"
            else slice(None)
            if d == time_name
            else 0
            for d in var.dimensions
        )
        return np.asarray(ds[time_name][:], dtype=float), np.asarray(var[index], dtype=float)


def current(srv, key, coordinates: str) -> dict:
    reply = get(f"{srv.url}/air-quality/{coordinates}", {"X-API-Key": key})
    assert reply.status == 200, reply.body[:300]
    return reply.json()["current"]


def test_europe_served_at_a_cell_is_the_delivered_forecast_there(served):
    srv, key, datasets, today = served
    path = datasets / "cams" / "europe" / f"cams-europe-forecast-{stamp(today)}.nc"
    record = current(srv, key, "47.5,0.5")  # a cell centre of the 1° grid
    lead = (record["time"] - today) // 3600
    for name, api in (
        ("pm2p5_conc", "pm25"),
        ("o3_conc", "ozone"),
        ("no2_conc", "nitrogenDioxide"),
    ):
        hours, values = cell(path, name, 47.5, 0.5)
        assert hours[lead] == lead
        assert record[api] == pytest.approx(values[lead], abs=0.051), name


def test_global_served_at_a_cell_is_the_delivered_forecast_there(served):
    srv, key, datasets, today = served
    folder = datasets / "cams" / "global"
    record = current(srv, key, "10,100")  # outside Europe, a 5° cell centre
    lead = (record["time"] - today) // 3600
    hours, pm25 = cell(folder / f"cams-global-{stamp(today)}-sfc.nc", "pm2p5", 10, 100)
    assert record["pm25"] == pytest.approx(pm25[lead] * 1e9, abs=0.051)
    # Model level 137, every 3 hours: the API's hour lies on the straight line between steps.
    steps, no2 = cell(folder / f"cams-global-{stamp(today)}-ml.nc", "no2", 10, 100)
    expected = np.interp(lead, steps, no2) * AIR_DENSITY_KG_M3 * 1e9
    assert record["nitrogenDioxide"] == pytest.approx(expected, abs=0.051)
