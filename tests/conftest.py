"""Session fixtures: the default build made once by the real pipeline, and a server over it."""

from __future__ import annotations

import pytest

from tests.support.procs import Server, add_key, run_pipeline


@pytest.fixture(scope="session")
def default_build(tmp_path_factory):
    """The offline default of every area, full size, built by `python -m pipeline build` (about
    40 s, once; the generated webcam catalog has some 85 million snapshots)."""
    out = tmp_path_factory.mktemp("default-build")
    (out / "no-datasets").mkdir()
    run_pipeline("build", "--datasets", str(out / "no-datasets"), "--out", str(out),
                 env={"WEATHERAPI_WEBCAMS_SCALE": "1"})
    return out


@pytest.fixture(scope="session")
def keys_file(tmp_path_factory):
    """A keys file holding one ordinary test key and one with a tiny rate limit."""
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    return path, add_key(path, "tests"), add_key(path, "tiny", rate_limit=3)


@pytest.fixture(scope="session")
def server(default_build, keys_file):
    """A running server over the default build."""
    with Server(default_build, keys_file[0]) as srv:
        srv.wait_ready()
        srv.key, srv.tiny_key = keys_file[1], keys_file[2]
        yield srv
