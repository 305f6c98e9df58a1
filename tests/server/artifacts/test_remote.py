"""Replicas following builds published to object storage (`--build-from s3://...`), on moto:
two replicas pick up a new publish under load, a corrupt object and a pointer to a missing
version are refused while the version before keeps serving."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import obstore
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

import contract
from server.openapi import document as openapi
from tests.support.builds import geocoding_build, place
from tests.support.procs import Server, get, run_pipeline
from tests.support.redis import redis_server
from tests.support.s3 import BUCKET, Endpoint

pytestmark = pytest.mark.slow  # builds of their own, and servers

POLL_S = 0.5


def publish(s3: Endpoint, out: Path, prefix: str) -> None:
    run_pipeline("publish", "--to", f"s3://{BUCKET}/{prefix}", "--out", str(out), env=s3.env)


def replica(s3: Endpoint, cache: Path, prefix: str, *args: str, **env: str) -> Server:
    """A server following BUCKET/prefix into `cache` (its build directory)."""
    return Server(
        cache,
        None,
        "--build-from",
        f"s3://{BUCKET}/{prefix}",
        *args,
        WEATHERAPI_POLL_INTERVAL_S=str(POLL_S),
        WEATHERAPI_LOAD_RETRY_S="1",
        **s3.env,
        **env,
    )


READINESS = Draft202012Validator(
    {"$ref": "urn:openapi#/components/schemas/Readiness"},
    registry=Registry().with_resource(
        "urn:openapi",
        Resource.from_contents(openapi.document(), default_specification=DRAFT202012),
    ),
)


def serving(srv: Server) -> dict:
    """The replica's /ready body, checked against the OpenAPI document's Readiness."""
    body = get(srv.url + "/ready").json()
    assert not [e.message for e in READINESS.iter_errors(body)], body
    return body


def wait_serving(srv: Server, build_id: str, timeout: float = 60.0) -> float:
    """Poll /ready until the replica serves `build_id`; the seconds it took."""
    started = time.monotonic()
    while (body := serving(srv))["build_id"] != build_id:
        assert srv.proc.poll() is None, f"server exited: {''.join(srv._lines)[-2000:]}"
        assert time.monotonic() - started < timeout, f"still {body}"
        time.sleep(0.05)
    return time.monotonic() - started


def test_two_replicas_pick_up_a_new_publish_without_failing_a_request(tmp_path, s3):
    out = tmp_path / "build"
    first = geocoding_build(tmp_path, out)
    publish(s3, out, "live")
    with (
        redis_server(tmp_path) as redis_url,
        replica(s3, tmp_path / "r1", "live", WEATHERAPI_RATE_LIMIT_REDIS_URL=redis_url) as r1,
        replica(s3, tmp_path / "r2", "live", WEATHERAPI_RATE_LIMIT_REDIS_URL=redis_url) as r2,
    ):
        for srv in (r1, r2):
            body = srv.wait_ready()
            assert body["build_id"] == first.name
            assert body["remote"] == {
                "state": "following",
                "pointer": first.name,
                "checked": body["remote"]["checked"],
            }
        statuses: list[int] = []
        done = threading.Event()

        def hammer(srv: Server) -> None:
            while not done.is_set():
                statuses.append(get(srv.url + "/geocoding/lookup?q=zurich").status)

        threads = [threading.Thread(target=hammer, args=(s,)) for s in (r1, r2, r1, r2)]
        for thread in threads:
            thread.start()
        try:
            second = geocoding_build(tmp_path, out, place(1))
            started = time.monotonic()
            publish(s3, out, "live")  # the pointer changes before the command returns
            published = time.monotonic() - started
            took = [wait_serving(srv, second.name) + published for srv in (r1, r2)]
            seen = len(statuses)
            deadline = time.monotonic() + 30
            while len(statuses) < seen + 40 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            done.set()
            for thread in threads:
                thread.join()
        print(
            f"publish took {published:.2f} s; replicas served it {took[0]:.2f} s and "
            f"{took[1]:.2f} s after the publish started ({len(statuses)} requests)"
        )
        assert statuses and set(statuses) == {200}, f"failed requests: {set(statuses)}"
        # The publish, then the poll interval, the store's reload interval (0.2 s) and a
        # download of 2 MB.
        assert max(took) < published + POLL_S + 5
        for srv in (r1, r2):
            found = get(srv.url + "/geocoding/lookup?q=place%201").json()
            assert [r["name"] for r in found["results"]][:1] == ["Place 1"]
        versions = sorted(p.name for p in (tmp_path / "r1" / contract.VERSIONS).iterdir())
        assert versions == [first.name, second.name]  # nothing partial left


def test_the_workers_of_a_replica_download_once_into_one_cache(tmp_path, s3):
    out, cache = tmp_path / "build", tmp_path / "cache"
    first = geocoding_build(tmp_path, out)
    publish(s3, out, "workers")
    with replica(s3, cache, "workers", "--workers", "2") as srv:
        assert srv.wait_ready()["build_id"] == first.name
        second = geocoding_build(tmp_path, out, place(3))
        publish(s3, out, "workers")
        # Each /ready is a new connection, which either worker may take: ten in a row on the
        # new build means both serve it.
        deadline, in_a_row = time.monotonic() + 60, 0
        while in_a_row < 10:
            assert time.monotonic() < deadline, serving(srv)
            in_a_row = in_a_row + 1 if serving(srv)["build_id"] == second.name else 0
        for build_id in (first.name, second.name):  # one worker downloaded each, once
            assert len(srv.log_lines(f"build {build_id} from s3://")) == 1
    assert sorted(p.name for p in (cache / contract.VERSIONS).iterdir()) == [
        first.name,
        second.name,
    ]
    # Restarted over its cache: the pointer's version is there, verified; nothing downloaded.
    with replica(s3, cache, "workers") as again:
        body = again.wait_ready()
        assert body["build_id"] == second.name
        deadline = time.monotonic() + 30
        while serving(again)["remote"].get("pointer") != second.name:
            assert time.monotonic() < deadline, serving(again)
            time.sleep(0.05)
        assert serving(again)["remote"]["state"] == "following"
        assert again.log_lines("from s3://") == []


def copy_version(s3: Endpoint, source: str, target: str, build_id: str, corrupt: str = "") -> None:
    """Copy a version's objects from one prefix to another, then its pointer (the publish
    order); the object `corrupt` (a path in the version) with one byte changed."""
    objects, store = s3.keys(source), s3.store(target)
    for key, body in objects.items():
        if key.startswith(f"{contract.VERSIONS}/{build_id}/"):
            if key == contract.remote_key(build_id, corrupt):
                body = body[:-1] + bytes([body[-1] ^ 0xFF])
            obstore.put(store, key, body)
    obstore.put(store, contract.POINTER, objects[contract.POINTER])


def changed_file(first: Path, second: Path) -> str:
    """A file whose bytes differ between two versions (so it is downloaded, not linked)."""
    sums = [json.loads((v / contract.MANIFEST).read_bytes())["checksums"] for v in (first, second)]
    return next(rel for rel, s in sums[1].items() if sums[0].get(rel) != s)


def test_a_corrupt_object_is_refused_and_the_old_version_kept(tmp_path, s3):
    out = tmp_path / "build"
    first = geocoding_build(tmp_path, out)
    publish(s3, out, "stage")
    copy_version(s3, "stage", "corrupt", first.name)
    cache = tmp_path / "cache"
    with replica(s3, cache, "corrupt") as srv:
        assert srv.wait_ready()["build_id"] == first.name
        second = geocoding_build(tmp_path, out, place(2))
        publish(s3, out, "stage")
        victim = changed_file(first, second)
        copy_version(s3, "stage", "corrupt", second.name, corrupt=victim)
        srv.wait_log(f"refusing build {second.name}")
        body = serving(srv)
        assert body["state"] == "ready" and body["build_id"] == first.name
        assert body["remote"]["state"] == "failed"
        assert "is not the file the manifest lists" in body["remote"]["error"]
        assert victim in body["remote"]["error"]
        assert get(srv.url + "/geocoding/lookup?q=zurich").status == 200
        assert [p.name for p in (cache / contract.VERSIONS).iterdir()] == [first.name]
        # Repaired in storage: the replica tries again (WEATHERAPI_LOAD_RETRY_S) and takes it.
        copy_version(s3, "stage", "corrupt", second.name)
        wait_serving(srv, second.name)
        assert serving(srv)["remote"]["state"] == "following"
    assert "test-secret-key" not in srv.log


def test_a_pointer_to_a_missing_version_or_no_pointer_is_ignored(tmp_path, s3):
    out = tmp_path / "build"
    first = geocoding_build(tmp_path, out)
    publish(s3, out, "missing")
    with replica(s3, tmp_path / "cache", "missing") as srv:
        assert srv.wait_ready()["build_id"] == first.name
        absent = "20991231T235959Z-abcdef"
        pointer = {"build_id": absent, "manifest_bytes": 2, "manifest_sha256": "0" * 64}
        obstore.put(s3.store("missing"), contract.POINTER, json.dumps(pointer).encode())
        srv.wait_log(f"refusing build {absent}")
        body = serving(srv)
        assert body["state"] == "ready" and body["build_id"] == first.name
        assert body["remote"]["pointer"] == absent
        assert "is missing" in body["remote"]["error"]
        assert get(srv.url + "/geocoding/lookup?q=zurich").status == 200
        # Not a pointer at all: said, and the version before still served.
        obstore.put(s3.store("missing"), contract.POINTER, b"<html>oops</html>")
        srv.wait_log("current.json is not a pointer to a build")
        body = serving(srv)
        assert body["state"] == "ready" and body["build_id"] == first.name
        assert body["remote"]["state"] == "failed"
