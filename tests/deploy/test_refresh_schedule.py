"""The refresh's deployment files: systemd units that `systemd-analyze verify` accepts, and a
crontab line and a Kubernetes CronJob that run the same command."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
INSTALL = "/opt/weatherapi"
COMMAND = [
    "-m",
    "pipeline",
    "refresh",
    "--datasets",
    "/var/lib/weatherapi/datasets",
    "--out",
    "/var/lib/weatherapi/build",
]
ALERTS = ["--only", "forecast", "--sources", "alerts"]
WEBCAMS = ["--only", "webcams", "--sources", "webcams"]


def installed_copy(tmp_path: Path) -> Path:
    """The units as installed from this checkout: its interpreter where /opt/weatherapi's is."""
    folder = tmp_path / "units"
    shutil.copytree(DEPLOY / "systemd", folder)
    for unit in folder.iterdir():
        text = unit.read_text().replace(f"{INSTALL}/.venv/bin/python", sys.executable)
        unit.write_text(text.replace(INSTALL, str(REPO)))
    return folder


def verify(*units: Path) -> subprocess.CompletedProcess:
    """systemd-analyze verify, which also loads what the units name (executables, targets)."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    return subprocess.run(
        ["systemd-analyze", "verify", *map(str, units)], capture_output=True, text=True, timeout=60
    )


def exec_start(unit: Path) -> list[str]:
    """The ExecStart command of a unit, split as systemd splits it."""
    line = next(x for x in unit.read_text().splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


@pytest.mark.parametrize("name", ["weatherapi-refresh", "weatherapi-alerts", "weatherapi-webcams"])
def test_systemd_units_verify(tmp_path, name):
    units = installed_copy(tmp_path)
    result = verify(units / f"{name}.service", units / f"{name}.timer")
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_verify_catches_a_broken_unit(tmp_path):
    # the check above can fail: an unknown key is a warning, a missing program an error
    units = installed_copy(tmp_path)
    service = units / "weatherapi-refresh.service"
    service.write_text(service.read_text().replace("Type=oneshot", "Typo=oneshot"))
    assert "Unknown key" in verify(service).stderr
    service.write_text(service.read_text().replace(sys.executable, "/nonexistent/python"))
    assert verify(service).returncode != 0


def test_every_schedule_runs_the_same_command():
    # the hourly refresh, the alerts every 5 minutes (the forecast's alerts only), the webcams
    # every 4 (a provider's links expire in 10)
    schedules = [
        ("weatherapi-refresh", "15 * * * *", COMMAND),
        ("weatherapi-alerts", "*/5 * * * *", COMMAND + ALERTS),
        ("weatherapi-webcams", "*/4 * * * *", COMMAND + WEBCAMS),
    ]
    crons = [
        line
        for line in (DEPLOY / "cron" / "weatherapi-refresh").read_text().splitlines()
        if line and not line.startswith(("#", "SHELL"))
    ]
    jobs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "refresh-cronjob.yaml").read_text()))
    assert len(crons) == len(jobs) == len(schedules)
    for (unit, schedule, command), cron, job in zip(schedules, crons, jobs):
        service = exec_start(DEPLOY / "systemd" / f"{unit}.service")
        assert service == [f"{INSTALL}/.venv/bin/python", *command]
        fields = cron.split(None, 6)
        assert fields[:5] == schedule.split() and fields[5] == "weatherapi"
        assert f"cd {INSTALL} && .venv/bin/python {shlex.join(command)} >>" in fields[6]
        assert job["kind"] == "CronJob" and job["spec"]["schedule"] == schedule
        assert job["metadata"]["name"] == unit
        assert job["spec"]["concurrencyPolicy"] == "Forbid"
        container = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == ["python", *command]
        assert container["workingDir"] == INSTALL


@pytest.mark.parametrize("name,every", [("weatherapi-alerts", 5), ("weatherapi-webcams", 4)])
def test_the_frequent_timers_fire_on_their_minutes(name, every):
    timer = (DEPLOY / "systemd" / f"{name}.timer").read_text()
    assert f"OnCalendar=*:0/{every}\n" in timer and f"Unit={name}.service" in timer
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    result = subprocess.run(
        ["systemd-analyze", "calendar", "--iterations=3", f"*:0/{every}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    minutes = [
        line.split()[-2][3:5]
        for line in result.stdout.splitlines()
        if "Next elapse" in line or "Iter." in line
    ]
    assert all(int(m) % every == 0 for m in minutes) and len(minutes) == 3


def test_the_command_is_one_the_pipeline_takes():
    result = subprocess.run(
        [sys.executable, *COMMAND[:3], "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    for option in (COMMAND + ALERTS + WEBCAMS)[3::2]:
        assert option in result.stdout
