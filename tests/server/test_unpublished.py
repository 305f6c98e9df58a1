"""A served version whose `current` pointer stops leading anywhere keeps being served."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from server.artifacts.store import LOADING_RETRY_S, Store
from server.http.errors import ApiError
from tests.server.test_lifecycle import build, make_datasets
from tests.support.procs import Server, get

pytestmark = pytest.mark.slow  # builds of their own, and servers


def repoint(out: Path, target: str) -> None:
    """Swap build/current atomically, as pipeline/common/publish.py does."""
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
        body = srv.wait_ready(status=503)  # degraded: the load balancer must hear it
        # Not "unpublished": the version served before still answers.
        assert body["state"] == "degraded" and body["build_id"] == served.rsplit("/", 1)[1]
        assert body["areas"]["geocoding"]["state"] == "failed"
        after = get(srv.url + "/geocoding/countries/CH")
        assert after.status == 200 and after.body == before.body
        assert after.headers["X-Data-Version"] == before.headers["X-Data-Version"]
        assert srv.wait_log("leads to no published version")
        repoint(out, served)
        assert srv.wait_ready()["areas"]["geocoding"]["state"] == "loaded"


def test_a_manifest_of_the_wrong_shape_is_one_error_and_not_ready(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    served = out / "current"
    with Server(out, None, WEATHERAPI_LOAD_RETRY_S="0.2") as srv:
        srv.wait_ready()
        before = get(srv.url + "/geocoding/countries/CH")
        for n, text in enumerate(
            (
                '{"schema_version": 1, "build_id": "x"}',
                "[1]",
                '{"schema_version": 1, "areas": {"geocoding": 3}}',
            )
        ):
            version = out / "versions" / f"bad-{n}"
            shutil.copytree(served.resolve(), version, copy_function=os.link)
            (version / "manifest.json").unlink()
            (version / "manifest.json").write_text(text)
            repoint(out, f"versions/{version.name}")
            deadline = time.monotonic() + 30
            while (body := get(srv.url + "/ready").json())["build_id"] != version.name:
                assert time.monotonic() < deadline, f"{version.name} never tried"
                time.sleep(0.02)
            assert body["state"] == "degraded", text
            assert body["areas"]["geocoding"]["state"] == "failed", text
            assert get(srv.url + "/geocoding/countries/CH").body == before.body
        assert srv.log_lines("reloading the build failed") == []  # no traceback per tick


def write_only_kernel_file() -> Path:
    """A file that even root may not open for reading: a bus's `uevent` in sysfs is write-only,
    and the kernel refuses to read it whatever the capabilities (chmod 000 stops no root)."""
    for candidate in sorted(Path("/sys/bus").glob("*/uevent")):
        try:
            candidate.open("rb").close()
        except PermissionError:
            return candidate
        except OSError:
            continue
    pytest.skip(
        "no write-only sysfs file (/sys/bus/*/uevent) to stand for a manifest that "
        "cannot be read: sysfs is not mounted here"
    )


@pytest.mark.parametrize("fault", ["read refused", "lookup fails"])
def test_an_unreadable_manifest_is_one_error_line_and_503(tmp_path, fault):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    manifest = out / "current" / "manifest.json"
    good = manifest.read_bytes()
    manifest.unlink()
    if fault == "read refused":  # as chmod 000 does for a server that is not root
        manifest.symlink_to(write_only_kernel_file())
        problem = "Permission denied"
    else:  # its stat fails, not for want of the file (as in a directory without search
        manifest.symlink_to("x" * 300)  # permission, EACCES; this one fails for root too)
        problem = "File name too long"
    with Server(out, None, WEATHERAPI_LOAD_RETRY_S="0.2", WEATHERAPI_LOG_LEVEL="DEBUG") as srv:
        body = srv.wait_ready(status=503)
        assert body["state"] == "degraded" and body["areas"]["geocoding"]["state"] == "failed"
        reply = get(srv.url + "/geocoding/countries/CH")
        assert reply.status == 503 and reply.headers["Retry-After"] == "1"
        assert reply.headers["Content-Type"].startswith("application/problem+json")
        assert "manifest" not in reply.body.decode()
        path = (out / "current").resolve() / "manifest.json"
        said = srv.wait_log(str(path), count=4)  # the first try and three retries
        assert all(problem in line for line in said), said
        assert [" ERROR " in line for line in said] == [True] + [False] * (len(said) - 1), said
        manifest.unlink()
        manifest.write_bytes(good)
        assert srv.wait_ready()["areas"]["geocoding"]["state"] == "loaded"
    assert "Traceback" not in srv.log and "reloading the build failed" not in srv.log
    assert len([line for line in srv.log.splitlines() if " ERROR " in line]) == 1, srv.log


def test_a_503_says_to_retry_soon_while_loading_and_later_when_absent(tmp_path):
    # A starting server loads its areas in about a second; a missing area waits for a build.
    store = Store(tmp_path / "build", {}, retry_s=45.0)
    with pytest.raises(ApiError) as loading:
        store.require("forecast")
    assert loading.value.status == 503
    assert loading.value.headers["Retry-After"] == str(LOADING_RETRY_S)
    store.snapshot = store.load(None)  # nothing published: every area absent
    assert store.area("forecast").state == "absent"
    with pytest.raises(ApiError) as absent:
        store.require("forecast")
    assert absent.value.headers["Retry-After"] == "45"
