"""End to end: a GFS-like and an ECMWF-like GRIB2 run built by `python -m pipeline build`,
served by `python -m server`; at a grid node and a whole model hour the answer equals the
GRIB2 message's value there, decoded independently here, in the units the API states."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from tests.support import forecast_inputs as fi
from tests.support import grib
from tests.support.procs import Server, get, run_pipeline

pytestmark = grib.NEEDS_REAL_GFS

NODE = (40.0, -30.0)  # a 2.5° grid node in the Atlantic: no gazetteer place near


def varying(run_s: int, model: str) -> dict:
    """Fields that differ at every node and hour (in each model's message units)."""

    def hours(v):
        return (v - run_s) / 3600.0

    cloud_scale = 100.0 if model == "gfs" else 1.0  # GFS %, ECMWF 0-1
    values = {
        "2t": lambda v, la, lo: 288.15 + 0.1 * la + 0.05 * lo + 0.5 * hours(v),
        "2d": lambda v, la, lo: 281.15 + 0.05 * la + 0.25 * hours(v),
        "10u": lambda v, la, lo: 2.0 + 0.01 * lo + 0 * la,
        "10v": lambda v, la, lo: -1.0 + 0.02 * la + 0.1 * hours(v) + 0 * lo,
        "tcc": lambda v, la, lo: (
            cloud_scale * ((0.3 + 0.02 * hours(v) + 0.002 * np.abs(la)) % 1.0 + 0 * lo)
        ),
    }
    pressure = lambda v, la, lo: 100000.0 + 20.0 * la + 10.0 * hours(v) + 0 * lo  # noqa: E731
    values["prmsl" if model == "gfs" else "msl"] = pressure
    return values


@pytest.fixture(scope="module", params=["gfs", "ecmwf"])
def served(request, module_tmp, keys_file):
    model = request.param
    root = module_tmp(f"served-{model}")
    run = fi.last_run()
    if model == "gfs":
        folder = grib.gfs_run(root / "d", run, range(31), values=varying(run, model))
        name = lambda step: grib.gfs_name(run, step, grib.REAL_GRID)  # noqa: E731
    else:
        folder = grib.ecmwf_run(root / "d", run, range(0, 31, 3), values=varying(run, model))
        name = lambda step: grib.ecmwf_name(run, step)  # noqa: E731
    run_pipeline(
        "build", "--datasets", str(root / "d"), "--out", str(root / "out"), "--only", "forecast"
    )
    with Server(root / "out", keys_file[0]) as server:
        server.wait_ready()
        server.key, server.run, server.model = keys_file[1], run, model
        server.file = lambda step: folder / name(step)
        yield server


def test_the_served_forecast_at_a_node_and_model_hour_is_the_message_s_value(served):
    reply = get(f"{served.url}/forecast/{NODE[0]},{NODE[1]}?units=si", {"X-API-Key": served.key})
    assert reply.status == 200, reply.body[:500]
    body = reply.json()
    assert body["flags"]["sources"][0]["name"] == {"gfs": "gfs", "ecmwf": "ecmwf-ifs"}[served.model]
    every = 1 if served.model == "gfs" else 3
    entries = [
        e
        for e in body["hourly"]["data"]
        if (e["time"] - served.run) % (every * 3600) == 0 and e["time"] - served.run <= 30 * 3600
    ]
    assert len(entries) >= 2 and time.time() - served.run < 7 * 3600
    index = grib.REAL_GRID.index(*NODE)
    pressure = "prmsl" if served.model == "gfs" else "msl"
    cloud_scale = 100.0 if served.model == "gfs" else 1.0
    for entry in entries[:3]:
        path = served.file((entry["time"] - served.run) // 3600)
        # the instantaneous messages (GFS files also hold TCDC averaged over the bucket)
        value = {
            m["shortName"]: float(m["values"][index])
            for m in grib.messages(path)
            if m["stepType"] == "instant"
        }
        assert entry["temperature"] == pytest.approx(value["2t"] - 273.15, abs=0.006)
        assert entry["dewPoint"] == pytest.approx(value["2d"] - 273.15, abs=0.006)
        assert entry["pressure"] == pytest.approx(value[pressure] / 100, abs=0.051)
        assert entry["windSpeed"] == pytest.approx(
            math.hypot(value["10u"], value["10v"]), abs=0.006
        )
        assert entry["cloudCover"] == pytest.approx(value["tcc"] / cloud_scale, abs=0.006)
    # the values change from hour to hour: no hour was read for another
    temperatures = [e["temperature"] for e in entries[:3]]
    assert len(set(temperatures)) == len(temperatures)
    assert np.all(np.diff(temperatures) > 0)
