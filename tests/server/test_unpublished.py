"""A served version whose `current` pointer stops leading anywhere keeps being served."""

from __future__ import annotations

import os
from pathlib import Path

from tests.server.test_lifecycle import build, make_datasets
from tests.support.procs import Server, get


def repoint(out: Path, target: str) -> None:
    """Swap build/current atomically, as pipeline/publish.py does."""
    tmp = out / ".current.test"
    tmp.symlink_to(target)
    os.replace(tmp, out / "current")


def test_a_dangling_current_keeps_the_loaded_version_and_is_not_ready(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    served = os.readlink(out / "current")
    with Server(out) as srv:
        srv.wait_ready()
        before = get(srv.url + "/geocoding/countries/CH")
        assert before.status == 200
        repoint(out, "versions/removed-by-hand")
        body = srv.wait_ready(status=503)       # degraded: the load balancer must hear it
        assert body["areas"]["geocoding"]["state"] == "failed"
        after = get(srv.url + "/geocoding/countries/CH")
        assert after.status == 200 and after.body == before.body
        assert after.headers["X-Data-Version"] == before.headers["X-Data-Version"]
        assert srv.wait_log("leads to no published version")
        repoint(out, served)
        assert srv.wait_ready()["areas"]["geocoding"]["state"] == "loaded"
