"""Packaging that a real install survives: the wheel, installed (not editable) into a fresh
virtual environment, serves from that environment's site-packages with nothing of the checkout
importable; the embed player's page carries the package's player.css and player.js (package
data) byte for byte as the repository has them.

The wheel goes in alone (--no-deps, --no-index); its dependencies are the test environment's,
reached through a path file placed after the fresh site-packages (a path so added is not a site
directory: the checkout's editable-install hook in it never runs). Installing every dependency
afresh cost 1.5 GB of disk and minutes, and ran a CI machine out of space; `pip check` still
proves that what the wheel declares is satisfied.

Slow: a wheel build, a new virtual environment and a server that compiles its numba code
afresh (the checkout's numba cache is keyed by the checkout's paths): a few minutes in all."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from tests.support.procs import ROOT, get

pytestmark = pytest.mark.slow

PLAYER = Path("server/webcams/player")
ASSETS = {"player.css": "style-src", "player.js": "script-src"}  # file -> its CSP directive
READY_S = 600  # a fresh install compiles the webcams' numba code before it is ready


def _env(**extra: str) -> dict[str, str]:
    """The environment without anything that points Python at the checkout or its venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
    }
    return {**env, **extra}


def _run(*args: object, cwd: Path, timeout: float = 900, env: dict | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, args[:4]))} ... failed ({result.returncode}):"
            f"\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        )
    return result.stdout


def _sources(dest: Path) -> Path:
    """A copy of the checkout's files as git sees them (tracked, and new ones not ignored), as
    a clone would have them: a build in place would write build/ (the data directory) and
    *.egg-info into the checkout."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listing.stdout.decode().split("\0")):
        if (ROOT / name).is_file():  # not a file deleted in the work tree
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def _borrow_dependencies(python: Path, cwd: Path) -> None:
    """Make the test environment's packages importable after the fresh venv's own."""
    fresh = Path(
        _run(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=cwd
        ).strip()
    )
    ours = Path(sysconfig.get_paths()["purelib"])
    (fresh / "zz-test-dependencies.pth").write_text(f"{ours}\n")


class InstalledServer:
    """`python -m server` of another interpreter, started in another directory
    (tests.support.procs.Server runs the checkout's interpreter in the checkout)."""

    def __init__(self, python: Path, cwd: Path, *args: object, env: dict[str, str]):
        self.cmd = [str(python), "-m", "server", "--port", "0", *map(str, args)]
        self.cwd, self.env, self.url = cwd, env, ""
        self.log_path = cwd / "server.log"

    def __enter__(self) -> InstalledServer:
        self.log = open(self.log_path, "w")  # a file: no pipe to fill while it compiles
        self.proc = subprocess.Popen(
            self.cmd, cwd=self.cwd, env=self.env, text=True, stdout=subprocess.PIPE, stderr=self.log
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        match = re.search(r"http://\S+", line)
        if not match:
            self.__exit__()
            raise AssertionError(f"server did not start: {line!r} {self.stderr()}")
        self.url = match.group(0)
        return self

    def stderr(self) -> str:
        return self.log_path.read_text()[-3000:]

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"server exited: {self.stderr()}"
            try:
                if get(self.url + "/ready").status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"not ready in {timeout} s: {self.stderr()}")

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.log.close()


def test_the_wheel_installed_in_a_fresh_venv_serves_the_player(tmp_path):
    took: dict[str, float] = {}
    started = time.monotonic()

    def lap(name: str) -> None:
        nonlocal started
        took[name], started = time.monotonic() - started, time.monotonic()

    source = _sources(tmp_path / "source")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "-q",
        "-w",
        tmp_path / "dist",
        source,
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"contract.py", "server/__main__.py", "pipeline/__main__.py"} <= set(names)
    assert {str(PLAYER / name) for name in ASSETS} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "bench/"))]
    lap("wheel")

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    lap("venv")
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    _borrow_dependencies(python, tmp_path)
    _run(python, "-m", "pip", "check", cwd=tmp_path)
    lap("install")

    # Outside the checkout nothing of it is importable: what runs is the installed package.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = _run(
        python,
        "-c",
        "import contract, server, sysconfig; print(server.__file__); "
        "print(contract.__file__); print(sysconfig.get_paths()['purelib'])",
        cwd=elsewhere,
    ).splitlines()
    server_init, contract_file, site = map(Path, found)
    assert site.is_relative_to(venv)
    assert server_init == site / "server" / "__init__.py"
    assert contract_file == site / "contract.py"
    for name in ASSETS:
        assert (site / PLAYER / name).read_bytes() == (ROOT / PLAYER / name).read_bytes()

    # The installed pipeline builds what the player needs: a small webcam catalog alone (no
    # other area, so the installed server compiles only the webcams' kernels: minutes less).
    build = tmp_path / "build"
    (tmp_path / "no-datasets").mkdir()
    _run(
        python,
        "-m",
        "pipeline",
        "build",
        "--only",
        "webcams",
        "--datasets",
        tmp_path / "no-datasets",
        "--out",
        build,
        cwd=elsewhere,
        env={"WEATHERAPI_WEBCAMS_SCALE": "0.02"},
    )
    lap("build")

    keys = tmp_path / "keys.json"
    key = (
        _run(python, "-m", "server", "keys", "add", "packaging", "--keys-file", keys, cwd=elsewhere)
        .strip()
        .splitlines()[-1]
    )
    env = _env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    with InstalledServer(python, elsewhere, "--build", build, "--keys-file", keys, env=env) as srv:
        srv.wait_ready(READY_S)
        lap("server ready")
        listing = get(f"{srv.url}/webcams?limit=1", {"X-API-Key": key})
        assert listing.status == 200, listing.body[:500]
        public_id = listing.json()["results"][0]["public_id"]
        detail = get(f"{srv.url}/webcams/{public_id}", {"X-API-Key": key})
        assert detail.status == 200, detail.body[:500]
        page = get(detail.json()["player"]["embed"])
    assert page.status == 200, page.body[:500]
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    # The player's style and script are inline (allowed by their hashes in the CSP), not
    # separate URLs: each must be the repository's file, byte for byte.
    policy = page.headers["Content-Security-Policy"]
    for name, directive in ASSETS.items():
        data = (ROOT / PLAYER / name).read_bytes()
        tag = b"style" if name.endswith(".css") else b"script"
        assert b"<%b>%b</%b>" % (tag, data, tag) in page.body, name
        digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in policy, name
    print("packaging: " + ", ".join(f"{k} {v:.0f} s" for k, v in took.items()))
