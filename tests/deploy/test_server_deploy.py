"""The server's deployment files: its systemd unit (`systemd-analyze verify`), the Dockerfile
and compose file, whose commands are the documented ones, and the alert rules, whose series are
those the server and the pipeline export."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline import metrics as pipeline_metrics
from server.artifacts.store import Store
from server.observe.metrics import Metrics

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
INSTALL = "/opt/weatherapi"
SERVE = [
    "-m",
    "server",
    "--build",
    "/var/lib/weatherapi/build",
    "--keys-file",
    "/etc/weatherapi/keys.json",
    "--workers",
    "2",
]
REFRESH = [
    "-m",
    "pipeline",
    "refresh",
    "--datasets",
    "/var/lib/weatherapi/datasets",
    "--out",
    "/var/lib/weatherapi/build",
]
HARDENING = (
    "ProtectSystem=strict",
    "ProtectHome=true",
    "PrivateTmp=true",
    "NoNewPrivileges=true",
    "CapabilityBoundingSet=",
    "SystemCallFilter=@system-service",
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
)


def unit_lines(name: str) -> list[str]:
    return (DEPLOY / "systemd" / name).read_text().splitlines()


def installed_units(tmp_path: Path) -> Path:
    """The units as installed from this checkout: its interpreter where /opt/weatherapi's is."""
    folder = tmp_path / "units"
    shutil.copytree(DEPLOY / "systemd", folder)
    for unit in folder.iterdir():
        text = unit.read_text().replace(f"{INSTALL}/.venv/bin/python", sys.executable)
        unit.write_text(text.replace(INSTALL, str(REPO)))
    return folder


def test_the_server_unit_verifies(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    units = installed_units(tmp_path)
    result = subprocess.run(
        ["systemd-analyze", "verify", *map(str, sorted(units.iterdir()))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_server_unit_runs_the_documented_command_hardened():
    lines = unit_lines("weatherapi.service")
    [start] = [line.removeprefix("ExecStart=") for line in lines if line.startswith("ExecStart=")]
    assert shlex.split(start) == [f"{INSTALL}/.venv/bin/python", *SERVE]
    for option in HARDENING:
        assert option in lines, option
    # follows published builds, keys and secrets by itself: nothing to reload
    assert not any(line.startswith("ExecReload=") for line in lines)
    assert "KillMode=mixed" in lines and "Restart=on-failure" in lines
    # /opt is read-only to it: numba's cache is where the service may write, and warm
    assert "CacheDirectory=weatherapi" in lines
    assert "Environment=NUMBA_CACHE_DIR=/var/cache/weatherapi/numba" in lines
    assert any(
        line.startswith("ExecStartPre=") and "server.kernels.warmup" in line for line in lines
    )


def test_the_refresh_writes_the_pipeline_metrics():
    lines = unit_lines("weatherapi-refresh.service")
    assert (
        "Environment=WEATHERAPI_METRICS_TEXTFILE=/var/lib/weatherapi/metrics/pipeline.prom" in lines
    )
    assert "ReadWritePaths=/var/lib/weatherapi" in lines  # the text file's directory


def test_the_server_takes_the_commands_flags():
    result = subprocess.run(
        [sys.executable, "-m", "server", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    for flag in SERVE[2::2]:
        assert flag in result.stdout


def dockerfile() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined."""
    return (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ").splitlines()


def test_the_image_is_multi_stage_non_root_and_checks_health():
    lines = dockerfile()
    assert len([line for line in lines if line.startswith("FROM ")]) >= 2
    [user] = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert user not in ("root", "0")
    [health] = [line for line in lines if line.startswith("HEALTHCHECK ")]
    assert "/health" in health and "127.0.0.1" in health
    [cmd] = [line.removeprefix("CMD ") for line in lines if line.startswith("CMD ")]
    assert yaml.safe_load(cmd) == ["python", *SERVE]
    # the warm-up runs as the user the server runs as, into the cache it will read
    warm = next(i for i, line in enumerate(lines) if "server.kernels.warmup" in line)
    assert next(i for i, line in enumerate(lines) if line.startswith("USER ")) < warm
    assert any("NUMBA_CACHE_DIR=/var/cache/weatherapi/numba" in line for line in lines[:warm])


def test_compose_runs_the_documented_commands():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert services.keys() == {"api", "refresh", "redis"}
    assert services["api"]["command"] == ["python", *SERVE]
    assert shlex.join(["python", *REFRESH]) in services["refresh"]["command"][-1]
    assert (
        services["api"]["environment"]["WEATHERAPI_RATE_LIMIT_REDIS_URL"] == "redis://redis:6379/0"
    )
    for service in ("api", "refresh"):
        assert services[service]["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in services[service]["security_opt"]
    assert services["refresh"]["read_only"] and "/tmp" in services["refresh"]["tmpfs"]
    # numba must write its cache directory even to read it: the API's file system is not
    # read-only (its cache lives in the image, the user's)
    assert not services["api"].get("read_only")


def test_the_production_guide_gives_the_same_commands():
    guide = (REPO / "docs" / "operations" / "production.md").read_text()
    assert shlex.join(["python", *SERVE]) in guide
    assert shlex.join(["python", *REFRESH]) in guide
    assert "docker compose -f deploy/compose.yaml up -d" in guide


def exported_names() -> set[str]:
    """Every series name the server's /metrics and the pipeline's text file may hold."""
    names = set()
    for family in Metrics(Store(Path("/nonexistent"), {})).registry.collect():
        names |= {
            family.name,
            f"{family.name}_total",
            f"{family.name}_bucket",
            f"{family.name}_count",
            f"{family.name}_sum",
        }
    names |= {family.name for family in pipeline_metrics._Collector({}).collect()}
    return names


def test_every_alert_uses_series_that_exist():
    rules = yaml.safe_load((DEPLOY / "prometheus" / "weatherapi-alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    names = exported_names()
    used = set()
    for alert in alerts:
        assert alert["alert"] and alert["labels"]["severity"] in ("warning", "critical")
        used |= set(re.findall(r"\b((?:weatherapi|http)_[a-z_]+)", alert["expr"]))
    assert used and used <= names, used - names
    covered = " ".join(alert["expr"] for alert in alerts)
    for needed in (
        "weatherapi_area_stale",
        'status=~"5.."',
        "weatherapi_pipeline_run_last_success_timestamp_seconds",
    ):
        assert needed in covered


def test_promtool_accepts_the_rules():
    if shutil.which("promtool") is None:
        pytest.skip(
            "promtool is not installed (apt-get install prometheus); the rules were "
            "parsed as YAML above"
        )
    result = subprocess.run(
        ["promtool", "check", "rules", str(DEPLOY / "prometheus" / "weatherapi-alerts.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
