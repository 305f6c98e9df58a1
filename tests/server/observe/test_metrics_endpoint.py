"""/metrics on real servers: off by default, on the API's listener or one of its own, summed
over --workers 2, and the areas' versions, data ages and staleness."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support import forecast_inputs as fi
from tests.support.procs import ROOT, Server, get, run_pipeline


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one scrape."""
    reply = get(url)
    assert reply.status == 200, reply.body[:300]
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.body.decode())
        for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def scrape_until(url: str, done, timeout: float = 15.0) -> dict:
    """Scrape until done(samples) holds: each worker adds its counts to the shared files once a
    second, so another worker's requests show within that."""
    deadline = time.monotonic() + timeout
    while not done(samples := scrape(url)):
        assert time.monotonic() < deadline, "the scrapes never showed the counts"
        time.sleep(0.1)
    return samples


def metrics_url(srv: Server) -> str:
    """The metrics URL the server announced on its first line."""
    return re.search(r"metrics on (http://\S+)", srv.banner).group(1)


@pytest.fixture(scope="module")
def two_workers(default_build, keys_file, module_tmp):
    """Two workers with /metrics on the API's listener and access lines (which name the pid)."""
    tmp = module_tmp("metrics-tmp")
    with Server(
        default_build,
        keys_file[0],
        "--workers",
        "2",
        WEATHERAPI_METRICS="on",
        WEATHERAPI_ACCESS_LOG="1",
        TMPDIR=str(tmp),
    ) as srv:
        srv.wait_ready()
        srv.tmp = tmp
        yield srv


def test_off_by_default(server):
    assert get(server.url + "/metrics").status == 404
    assert "metrics" not in server.banner


def test_a_scrape_of_any_worker_sums_both(two_workers, keys_file):
    url = two_workers.url
    before = scrape(url + "/metrics")

    def count(samples: dict) -> float:
        return (
            value(samples, "http_requests_total", route="/health", method="GET", status="200")
            or 0.0
        )

    for _ in range(40):  # a connection each: the kernel spreads them
        assert get(url + "/health").status == 200
    pids = {line.split()[2] for line in two_workers.log_lines(" GET /health 200 ")}
    assert len(pids) == 2, "both workers answered"
    scrape_until(url + "/metrics", lambda s: count(s) - count(before) == 40)
    for _ in range(6):  # whichever worker answers the scrape sees all 40
        samples = scrape(url + "/metrics")
        assert count(samples) - count(before) == 40
    health = {"route": "/health", "method": "GET", "status": "200"}
    assert value(samples, "http_request_duration_seconds_count", **health) == count(samples)
    assert value(samples, "http_request_duration_seconds_bucket", le="+Inf", **health) == count(
        samples
    )
    assert 0 < value(samples, "http_request_duration_seconds_sum", **health) < count(samples)
    assert value(before, "weatherapi_workers") == 2


def test_requests_are_labelled_by_route_template_never_the_path(two_workers, keys_file):
    url, key = two_workers.url, keys_file[1]
    assert get(f"{url}/forecast/47.1,8.2", {"X-API-Key": key}).status == 200
    assert get(f"{url}/forecast/47.1,8.2").status == 403
    assert get(f"{url}/no/such/path/{key}").status == 404
    route = "/forecast/{coordinates}"
    samples = scrape_until(
        url + "/metrics",
        lambda s: all(
            value(s, "http_requests_total", route=r, method="GET", status=c)
            for r, c in ((route, "200"), (route, "403"), ("unmatched", "404"))
        ),
    )
    text = get(url + "/metrics").body.decode()
    assert value(samples, "http_requests_total", route=route, method="GET", status="200") >= 1
    assert (
        value(
            samples, "http_request_duration_seconds_count", route=route, method="GET", status="200"
        )
        >= 1
    )
    assert (
        value(
            samples,
            "http_request_duration_seconds_bucket",
            route=route,
            method="GET",
            status="200",
            le="+Inf",
        )
        >= 1
    )
    assert value(samples, "http_requests_total", route="unmatched", method="GET", status="404") >= 1
    assert value(samples, "weatherapi_refusals_total", status="403", reason="forbidden") >= 1
    assert "47.1" not in text and key not in text and "/no/such" not in text


def test_a_rate_limited_key_counts_as_a_refusal(two_workers, keys_file):
    # The tiny key's own limit is 3 a minute, each worker counting on its own: 8 calls
    # exceed it in at least one of them.
    tiny = keys_file[2]
    statuses = [
        get(f"{two_workers.url}/geocoding/countries/CH", {"X-API-Key": tiny}).status
        for _ in range(8)
    ]
    assert 429 in statuses
    samples = scrape(two_workers.url + "/metrics")
    assert value(
        samples, "weatherapi_refusals_total", status="429", reason="key_limit"
    ) == statuses.count(429)


def test_areas_versions_and_ages(two_workers):
    ready = get(two_workers.url + "/ready").json()
    samples = scrape(two_workers.url + "/metrics")
    for area, state in ready["areas"].items():
        assert value(samples, "weatherapi_area_info", area=area, version=state["version"]) == 1
        assert value(samples, "weatherapi_area_state", area=area, state="loaded") == 1
        assert value(samples, "weatherapi_area_stale", area=area) == 0
    # The generated default's newest runs are today's (00 UTC), its snapshots minutes old.
    for area in ("forecast", "air_quality"):
        age = value(samples, "weatherapi_area_data_age_seconds", area=area)
        assert 0 <= age <= 86400 + 3600
    assert 0 <= value(samples, "weatherapi_area_data_age_seconds", area="webcams") <= 7200
    assert value(samples, "weatherapi_area_data_age_seconds", area="geocoding") is None
    [build] = [k for k in samples if k[0] == "weatherapi_build_info"]
    assert dict(build[1])["version"] == get(two_workers.url + "/health").headers["X-API-Version"]


def test_the_private_directory_is_made_per_start_and_removed(default_build, tmp_path):
    with Server(
        default_build, None, "--workers", "2", WEATHERAPI_METRICS="on", TMPDIR=str(tmp_path)
    ) as srv:
        srv.wait_ready()
        [made] = list(tmp_path.glob("weatherapi-metrics-*"))
        assert made.stat().st_mode & 0o777 == 0o700
        assert len(list(made.glob("*.db"))) >= 2  # each worker's files
    assert list(tmp_path.glob("weatherapi-metrics-*")) == []


def test_a_listener_of_its_own(default_build):
    with Server(default_build, None, WEATHERAPI_METRICS_LISTEN="127.0.0.1:0") as srv:
        srv.wait_ready()
        assert get(srv.url + "/metrics").status == 404  # not on the API's listener
        own = metrics_url(srv)
        assert own != srv.url + "/metrics"
        assert get(srv.url + "/health").status == 200
        samples = scrape(own)
        assert (
            value(samples, "http_requests_total", route="/health", method="GET", status="200") == 1
        )
        assert get(own.removesuffix("/metrics") + "/health").status == 404  # nothing else


def test_stale_data_is_reported(tmp_path):
    # A forecast whose last hour is 30 days ago: its answers are 503s, /ready says stale.
    old = fi.last_run(time.time() - 30 * 86400)
    lat, lon = fi.global_axes(30.0)
    fi.write_step_file(
        tmp_path / "d" / "forecast" / "old.nc",
        old,
        range(0, 25),
        lat,
        lon,
        {n: fi.KNOWN[n] for n in ("t2m", "d2m", "u10", "v10", "prmsl", "tcc", "prate")},
    )
    run_pipeline(
        "build",
        "--datasets",
        str(tmp_path / "d"),
        "--out",
        str(tmp_path / "b"),
        "--only",
        "forecast",
    )
    with Server(tmp_path / "b", None, WEATHERAPI_METRICS="1") as srv:
        assert srv.wait_ready()["areas"]["forecast"]["state"] == "stale"
        samples = scrape(srv.url + "/metrics")
    assert value(samples, "weatherapi_area_stale", area="forecast") == 1
    assert value(samples, "weatherapi_area_state", area="forecast", state="stale") == 1
    age = value(samples, "weatherapi_area_data_age_seconds", area="forecast")
    assert age == pytest.approx(time.time() - old, abs=600)
    assert value(samples, "weatherapi_area_state", area="geocoding", state="absent") == 1
    assert value(samples, "weatherapi_area_stale", area="geocoding") is None


def test_a_busy_metrics_port_stops_the_start(tmp_path):
    # With SO_REUSEPORT the workers would join another program's listener there.
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "server", "--build", str(tmp_path), "--port", "0"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={
                **os.environ,
                "XDG_CONFIG_HOME": str(tmp_path / "config"),
                "WEATHERAPI_METRICS_LISTEN": f"127.0.0.1:{port}",
            },
        )
    assert result.returncode == 2 and result.stdout == ""
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in result.stderr
