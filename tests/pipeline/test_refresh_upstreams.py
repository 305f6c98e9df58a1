"""`python -m pipeline refresh` against the NOAA and Atmosphere Data Store stand-ins: what is
new is fetched, built and published; a second refresh moves almost nothing and publishes
nothing; a failing upstream is a retry-later while the other sources go on and its area keeps
the data it had."""

from __future__ import annotations

import datetime as dt

import pytest

import contract
from pipeline.forecast.sources.gfs import recent_cycles
from tests.support import grib
from tests.support.upstreams.ads import AdsStandIn, Running
from tests.support.upstreams.base import StandIn, Status
from tests.support.upstreams.noaa import NoaaLayout, file_path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not grib.REAL_GFS.is_file(), reason="real GFS sample absent"),
]
TOKEN = "refresh-token"
HOURS = list(range(13))


@pytest.fixture
def upstreams(tmp_path):
    """A NOAA bucket holding the current cycle (13 hours) and an ADS; the environment."""
    cycle = recent_cycles(dt.datetime.now(dt.timezone.utc), 1)[0]
    (tmp_path / "ads").mkdir()
    with StandIn() as server, Running(AdsStandIn(tmp_path / "ads", tokens={TOKEN})) as ads:
        noaa = NoaaLayout(server)
        noaa.add_run(cycle, HOURS)
        env = {
            "WEATHERAPI_GFS_BASE_URL": noaa.url,
            "WEATHERAPI_GFS_FALLBACK_URL": "",
            "WEATHERAPI_GFS_HORIZON_H": "12",
            "WEATHERAPI_GFS_HISTORY_CYCLES": "0",
            "WEATHERAPI_OPERATOR_CONTACT": "ops@example.org",
            "WEATHERAPI_CAMS_BASE_URL": ads.url,
            "CDSAPI_KEY": TOKEN,
            "CDSAPI_RC": str(tmp_path / "none"),
            "WEATHERAPI_CAMS_POLL_S": "0.02",
            # The sources these stand-ins reproduce (alerts, GeoNames and webcams, on by
            # default too, have tests of their own).
            "WEATHERAPI_REFRESH_SOURCES": "gfs,cams-europe,cams-global",
        }
        yield noaa, cycle, env


def refresh(pipeline_cli, root, env, *args):
    return pipeline_cli(
        "refresh",
        "--datasets",
        root / "datasets",
        "--out",
        root / "build",
        "--only",
        "forecast",
        "air_quality",
        *args,
        timeout=900,
        **env,
    )


def manifest(root) -> dict:
    return contract.read_manifest(contract.current_version_dir(root / "build"))


def test_new_data_is_published_once_and_a_failing_upstream_keeps_its_data(
    tmp_path, pipeline_cli, upstreams
):
    noaa, cycle, env = upstreams
    first = refresh(pipeline_cli, tmp_path, env)
    assert first.returncode == 0, first.stderr[-3000:]
    published = manifest(tmp_path)
    forecast, air = published["areas"]["forecast"], published["areas"]["air_quality"]
    assert forecast["source"]["kind"] == "real" and forecast["source"]["model"] == "gfs"
    assert forecast["run_times"] == [f"{cycle:%Y-%m-%dT%H}:00:00Z"]
    assert air["source"]["kind"] == "real"
    versions = sorted((tmp_path / "build" / contract.VERSIONS).iterdir())

    # Nothing new: a few inventory probes move, nothing is built or published.
    noaa.server.clear_hits()
    again = refresh(pipeline_cli, tmp_path, env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "nothing new: no version published" in again.stderr
    assert sorted((tmp_path / "build" / contract.VERSIONS).iterdir()) == versions
    assert all(h.method == "HEAD" for h in noaa.server.hits())

    # NOAA answers 503 to everything: GFS is a retry-later (exit 75), the forecast keeps the
    # run it had, and CAMS is still fetched (nothing new there either).
    last = max(HOURS)
    noaa.server.fault(file_path(cycle, last) + ".idx", Status(503, retry_after="1"), always=True)
    failing = refresh(pipeline_cli, tmp_path, env, "--sources", "gfs", "cams-europe")
    assert failing.returncode == 75, failing.stderr[-3000:]
    assert "gfs: try again later" in failing.stderr
    assert "cams-europe: nothing new" in failing.stderr
    assert manifest(tmp_path)["areas"]["forecast"] == forecast
