"""End to end: a running server, then an alerts-only refresh (`refresh --only forecast
--sources alerts` against an NWS stand-in): the new alert is in the forecast's `alerts` as soon
as the server has loaded the new version, and the grids it reads are the very files of the
version before (same inodes: not rebuilt)."""

from __future__ import annotations

import time

import contract
from contract import Forecast as F
from tests.support import forecast_inputs as fi
from tests.support.procs import Server, get, run_pipeline
from tests.support.upstreams.alerts import NwsLayout, nws_feature
from tests.support.upstreams.base import StandIn

POINT = (39.5, -101.5)
ZONE = [[-102.0, 39.0], [-101.0, 39.0], [-101.0, 40.0], [-102.0, 40.0], [-102.0, 39.0]]


def forecast_alerts(server: Server) -> tuple[list[str], str]:
    reply = get(
        f"{server.url}/forecast/{POINT[0]},{POINT[1]}?exclude=minutely,hourly",
        {"X-API-Key": server.key},
    )
    assert reply.status == 200, reply.body[:500]
    return [a["title"] for a in reply.json().get("alerts", [])], reply.headers["X-Data-Version"]


def test_a_new_alert_is_served_without_rebuilding_the_grids(tmp_path, keys_file):
    datasets, out = tmp_path / "d", tmp_path / "out"
    fi.write_gfs_run(datasets / "forecast", fi.last_run(), 30, fi.KNOWN)
    with StandIn() as upstream:
        nws = NwsLayout(upstream)
        nws.set_alerts([])
        env = {
            "WEATHERAPI_OPERATOR_CONTACT": "ops@example.org",
            "WEATHERAPI_ALERT_UPSTREAMS": "nws",
            "WEATHERAPI_NWS_BASE_URL": upstream.url,
        }
        refresh = (
            "refresh",
            "--datasets",
            str(datasets),
            "--out",
            str(out),
            "--only",
            "forecast",
            "--sources",
            "alerts",
        )
        run_pipeline(*refresh, env=env)
        before = contract.current_version_dir(out)
        with Server(out, keys_file[0]) as server:
            server.key = keys_file[1]
            server.wait_ready()
            titles, version = forecast_alerts(server)
            assert titles == []
            now = time.time()
            nws.set_alerts(
                [nws_feature("w-1", "Flood Watch", now - 60, now + 7200, zones=["KSZ001"])]
            )
            nws.add_zone("forecast/KSZ001", ZONE)
            started = time.monotonic()
            result = run_pipeline(*refresh, env=env)
            assert "forecast: alerts rebuilt" in result.stderr, result.stderr[-2000:]
            while (found := forecast_alerts(server))[1] == version:
                assert time.monotonic() - started < 60, "the new version was not served"
                time.sleep(0.1)
            elapsed = time.monotonic() - started
    assert found[0] == ["Flood Watch"]
    after = contract.current_version_dir(out)
    assert after != before
    for grid in (F.HOURLY, F.STATIC):
        assert (after / grid).stat().st_ino == (before / grid).stat().st_ino
    print(f"alerts-only refresh to the new alert served: {elapsed:.1f} s")
