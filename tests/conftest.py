"""Session fixtures: the default build made once by the real pipeline, and a server over it.

`just test` runs the suite in several processes (pytest-xdist): each has a session of its own,
so what is expensive to make (the default build) is made by whichever process needs it first,
once, into a directory all of them share (`shared_dir`); each process starts its own server.
Tests that build data or start servers are marked `slow` (`just test-fast` leaves them out):
by hand, and here every test that needs the default build."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.procs import Server, add_key, run_pipeline
from tests.support.s3 import s3_endpoint


def shared_dir(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """A directory `make` fills once per test run, however many xdist processes run it: the
    first to ask makes it under a lock, the others wait for it and use it (pytest-xdist's
    documented recipe, with the standard library's lock). Without xdist, the session's own."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.mktemp(name)
        make(path)
        return path
    root = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
    path, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(path, ignore_errors=True)  # left half made by a failed attempt
            path.mkdir()
            make(path)
            done.touch()
    return path


@pytest.hookimpl(tryfirst=True)  # before -m selects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "default_build" in item.fixturenames:
            item.add_marker(pytest.mark.slow)


def _default_build(out: Path) -> None:
    (out / "no-datasets").mkdir()
    run_pipeline(
        "build",
        "--datasets",
        str(out / "no-datasets"),
        "--out",
        str(out),
        env={"WEATHERAPI_WEBCAMS_SCALE": "1"},
    )


@pytest.fixture(scope="session")
def default_build(tmp_path_factory):
    """The offline default of every area, full size, built by `python -m pipeline build` (about
    40 s on a quiet machine, once per run; the generated webcam catalog has some 85 million
    snapshots). Read only: tests that change a build make their own."""
    return shared_dir(tmp_path_factory, "default-build", _default_build)


@pytest.fixture(scope="session")
def keys_file(tmp_path_factory):
    """A keys file holding one ordinary test key and one with a tiny rate limit (one per
    process: its session server reads it)."""
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    return path, add_key(path, "tests"), add_key(path, "tiny", rate_limit=3)


@pytest.fixture(scope="session")
def server(default_build, keys_file):
    """A running server over the default build."""
    with Server(default_build, keys_file[0]) as srv:
        srv.wait_ready()
        srv.key, srv.tiny_key = keys_file[1], keys_file[2]
        yield srv


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory, request):
    """module_tmp(name): a directory for a module's fixtures, removed when the module ends with
    every test passed (kept for a look otherwise). Without it each module's builds stayed until
    the run's end: 1.4 GB of a run that ran a CI machine out of disk."""
    made: list[Path] = []
    failed = request.session.testsfailed

    def make(name: str) -> Path:
        made.append(tmp_path_factory.mktemp(name))
        return made[-1]

    yield make
    if request.session.testsfailed == failed:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def s3():
    """An S3 endpoint (moto in server mode on loopback) with one bucket, per test module."""
    with s3_endpoint() as endpoint:
        yield endpoint
