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
COMMAND = ["-m", "pipeline", "refresh", "--datasets", "/var/lib/weatherapi/datasets",
           "--out", "/var/lib/weatherapi/build"]


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
    return subprocess.run(["systemd-analyze", "verify", *map(str, units)],
                          capture_output=True, text=True, timeout=60)


def exec_start(unit: Path) -> list[str]:
    """The ExecStart command of a unit, split as systemd splits it."""
    line = next(x for x in unit.read_text().splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


def test_systemd_units_verify(tmp_path):
    units = installed_copy(tmp_path)
    result = verify(units / "weatherapi-refresh.service", units / "weatherapi-refresh.timer")
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
    service = exec_start(DEPLOY / "systemd" / "weatherapi-refresh.service")
    assert service == [f"{INSTALL}/.venv/bin/python", *COMMAND]
    cron = next(line for line in (DEPLOY / "cron" / "weatherapi-refresh").read_text()
                .splitlines() if line and not line.startswith(("#", "SHELL")))
    fields = cron.split(None, 6)
    assert fields[:5] == ["15", "*", "*", "*", "*"] and fields[5] == "weatherapi"
    assert f"cd {INSTALL} && .venv/bin/python {shlex.join(COMMAND)}" in fields[6]
    job = yaml.safe_load((DEPLOY / "kubernetes" / "refresh-cronjob.yaml").read_text())
    assert job["kind"] == "CronJob" and job["spec"]["schedule"] == "15 * * * *"
    assert job["spec"]["concurrencyPolicy"] == "Forbid"
    container = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", *COMMAND]
    assert container["workingDir"] == INSTALL


def test_the_command_is_one_the_pipeline_takes():
    result = subprocess.run([sys.executable, *COMMAND[:3], "--help"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for option in COMMAND[3::2]:
        assert option in result.stdout
