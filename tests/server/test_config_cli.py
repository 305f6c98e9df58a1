"""`python -m server` with settings it cannot run with: one line, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.procs import ROOT, Server, get


def serve(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run `python -m server` over an empty build directory (it never gets to serve here)."""
    full_env = {**_clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "config"), **env}
    return subprocess.run(
        [sys.executable, "-m", "server", "--build", str(tmp_path / "build"), *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("WEATHERAPI_")}


@pytest.mark.parametrize(
    "args, env, named",
    [
        (("--port", "70000"), {}, "PORT"),
        (("--port", "-5"), {}, "PORT"),
        ((), {"WEATHERAPI_PORT": "-1"}, "PORT"),
        ((), {"WEATHERAPI_PORT": "abc"}, "PORT"),
        (("--port", "0", "--workers", "0"), {}, "WORKERS"),
        (("--port", "0"), {"WEATHERAPI_RATE_LIMIT_PER_MINUTE": "0"}, "RATE_LIMIT_PER_MINUTE"),
        (("--port", "0"), {"WEATHERAPI_RATE_LIMIT_PER_MINUTE": "-5"}, "RATE_LIMIT_PER_MINUTE"),
        (("--port", "0"), {"WEATHERAPI_RATE_LIMIT_BURST": "-1"}, "RATE_LIMIT_BURST"),
        (("--port", "0"), {"WEATHERAPI_RELOAD_INTERVAL_S": "-1"}, "RELOAD_INTERVAL_S"),
        (("--port", "0"), {"WEATHERAPI_RELOAD_INTERVAL_S": "nan"}, "RELOAD_INTERVAL_S"),
        (("--port", "0"), {"WEATHERAPI_RELOAD_INTERVAL_S": "0"}, "RELOAD_INTERVAL_S"),
        (("--port", "0"), {"WEATHERAPI_LOAD_RETRY_S": "inf"}, "LOAD_RETRY_S"),
        (("--port", "0"), {"WEATHERAPI_TRUST_FORWARDED_FOR": "ture"}, "TRUST_FORWARDED_FOR"),
        (("--port", "0"), {"WEATHERAPI_BASE_URL": "api.example.com"}, "BASE_URL"),
        (("--port", "0"), {"WEATHERAPI_CDN_URL": "ftp://cdn.example.com"}, "CDN_URL"),
        (("--port", "0"), {"WEATHERAPI_LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        (("--port", "0"), {"WEATHERAPI_LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        (("--port", "0"), {"WEATHERAPI_EVENT_LOOP": "trio"}, "EVENT_LOOP"),
        (("--port", "0"), {"WEATHERAPI_METRICS": "yes please"}, "METRICS"),
        (("--port", "0"), {"WEATHERAPI_TRUST_REQUEST_ID": "sure"}, "TRUST_REQUEST_ID"),
        (("--port", "0"), {"WEATHERAPI_METRICS_LISTEN": "9464"}, "METRICS_LISTEN"),
        (("--port", "0"), {"WEATHERAPI_METRICS_LISTEN": "::1:9464"}, "METRICS_LISTEN"),
        (("--port", "0"), {"WEATHERAPI_METRICS_LISTEN": "127.0.0.1:99999"}, "METRICS_LISTEN"),
        (("--port", "8123"), {"WEATHERAPI_METRICS_LISTEN": "127.0.0.1:8123"}, "METRICS_LISTEN"),
        (("--port", "0", "--build-from", "/srv/builds"), {}, "BUILD_FROM"),
        (("--port", "0"), {"WEATHERAPI_BUILD_FROM": "s3://"}, "BUILD_FROM"),
        (("--port", "0"), {"WEATHERAPI_POLL_INTERVAL_S": "0"}, "POLL_INTERVAL_S"),
    ],
)
def test_a_setting_the_server_cannot_run_with_is_one_line_and_exit_2(tmp_path, args, env, named):
    result = serve(tmp_path, *args, **env)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""  # never announced as serving
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f"WEATHERAPI_{named}" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_build_directory_that_does_not_exist_is_named_at_start(tmp_path):
    # It may be made later by the pipeline, so the server starts, but says where it looks.
    with Server(tmp_path / "missing") as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        assert get(srv.url + "/geocoding/countries").status == 503
        assert srv.wait_log(f"build directory {tmp_path / 'missing'} does not exist")


@pytest.mark.slow
@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_the_event_loop_setting_picks_the_loop_the_server_runs_on(tmp_path, loop):
    # uvloop is a compiled module: mapped into the serving process only when it runs the loop.
    with Server(tmp_path / "empty", WEATHERAPI_EVENT_LOOP=loop) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        assert f"with 1 worker(s) on {loop}" in srv.banner
        assert get(srv.url + "/health").status == 200
        maps = Path(f"/proc/{srv.proc.pid}/maps").read_text()
        assert ("/uvloop/" in maps) == (loop == "uvloop")
