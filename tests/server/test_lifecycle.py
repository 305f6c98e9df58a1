"""Publishing, hot reload, broken artifacts, keys CLI and workers, on small real-format builds."""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from server.workers import bind, ensure_free
from tests.support.procs import ROOT, Server, add_key, get, run_pipeline

pytestmark = pytest.mark.slow  # builds of their own, and servers

FIXTURE = ROOT / "tests" / "fixtures" / "geonames"
NEW_PLACE = (
    "9999001\tReloadville\tReloadville\t\t47.0\t8.0\tP\tPPL\tCH\t\tZH\t\t\t\t1234"
    "\t\t400\tEurope/Zurich\t2026-01-01\n"
)


def make_datasets(root: Path, extra_rows: str = "") -> Path:
    """A copy of the hand-made GeoNames fixture, optionally with more places."""
    datasets = root / "datasets"
    shutil.copytree(FIXTURE, datasets / "geonames")
    with open(datasets / "geonames" / "cities500.txt", "a", encoding="utf-8") as handle:
        handle.write(extra_rows)
    return datasets


def build(datasets: Path, out: Path) -> None:
    run_pipeline("build", "--datasets", str(datasets), "--out", str(out), "--only", "geocoding")


def version_of(url: str) -> str:
    return get(url + "/geocoding/countries/CH").headers["X-Data-Version"]


def test_new_version_is_served_without_failing_requests_in_flight(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    with Server(out) as srv:
        srv.wait_ready()
        before = version_of(srv.url)
        statuses, versions, done = [], set(), threading.Event()

        def hammer():
            while not done.is_set():
                reply = get(srv.url + "/geocoding/lookup?q=zurich")
                statuses.append(reply.status)
                versions.add(reply.headers.get("X-Data-Version"))

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            build(make_datasets(tmp_path / "b", NEW_PLACE), out)
            deadline = time.monotonic() + 30
            while version_of(srv.url) == before and time.monotonic() < deadline:
                time.sleep(0.05)
            after = version_of(srv.url)
            seen = len(statuses)
            while len(statuses) < seen + 40 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            done.set()
            for thread in threads:
                thread.join()
        assert after != before
        assert statuses and set(statuses) == {200}, f"failed requests: {set(statuses)}"
        assert {before, after} <= versions
        found = get(srv.url + "/geocoding/lookup?q=Reloadville").json()
        assert found["results"][0]["id"] == "9999001"


def test_failed_build_leaves_the_old_version_serving(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    broken = make_datasets(tmp_path / "b")
    (broken / "geonames" / "cities500.txt").write_text("1\tonly three\tcolumns\n")
    with Server(out) as srv:
        srv.wait_ready()
        before = version_of(srv.url)
        published = (out / "current").resolve()
        result = run_pipeline(
            "build",
            "--datasets",
            str(broken),
            "--out",
            str(out),
            "--only",
            "geocoding",
            check=False,
        )
        assert result.returncode != 0
        assert "cities500.txt" in result.stderr
        assert (out / "current").resolve() == published
        assert version_of(srv.url) == before
        assert srv.wait_ready()["state"] == "ready"


def test_broken_artifact_takes_down_only_its_area(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    places = out / "current" / "geocoding" / "index" / "places.arrow"
    places.write_bytes(places.read_bytes()[:100])
    with Server(out) as srv:
        body = srv.wait_ready(status=503)
        assert body["areas"]["geocoding"]["state"] == "failed"
        reply = get(srv.url + "/geocoding/lookup?q=zurich")
        assert reply.status == 503 and reply.headers["Retry-After"]
        assert reply.headers["Content-Type"].startswith("application/problem+json")
        assert str(out) not in reply.body.decode() and "places.arrow" not in reply.body.decode()
        assert get(srv.url + "/health").status == 200
        assert get(srv.url + "/forecast/1,2").status == 403  # other areas answer as usual


def test_an_area_that_failed_to_load_is_tried_again(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    places = out / "current" / "geocoding" / "index" / "places.arrow"
    good = places.read_bytes()
    places.write_bytes(good[:100])
    with Server(out, None, WEATHERAPI_LOAD_RETRY_S="0.3", WEATHERAPI_LOG_LEVEL="DEBUG") as srv:
        assert srv.wait_ready(status=503)["areas"]["geocoding"]["state"] == "failed"
        srv.wait_log("loading geocoding from", count=3)  # the first try and two retries
        places.write_bytes(good)  # repaired in place: no new version is published
        assert srv.wait_ready()["areas"]["geocoding"]["state"] == "loaded"
        assert get(srv.url + "/geocoding/lookup?q=zurich").status == 200
    # The traceback is logged once, the same fault tried again in one debug line each time.
    assert srv.log.count("Traceback") == 1, srv.log


def test_unsupported_schema_version_is_503(tmp_path):
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    manifest = out / "current" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["areas"]["geocoding"]["schema_version"] = 999
    manifest.write_text(json.dumps(data))
    with Server(out) as srv:
        assert srv.wait_ready(status=503)["areas"]["geocoding"]["state"] == "failed"
        assert get(srv.url + "/geocoding/countries").status == 503


def test_nothing_published_is_not_ready_until_a_version_is(tmp_path):
    # Every area is absent, yet such a server answers nothing but 503: no load balancer may
    # send it traffic, though it is alive.
    out = tmp_path / "build"
    with Server(out) as srv:
        body = srv.wait_ready(status=503)
        assert body["state"] == "unpublished" and body["build_id"] is None
        assert {a["state"] for a in body["areas"].values()} == {"absent"}
        reply = get(srv.url + "/ready")
        assert reply.status == 503 and reply.headers["Retry-After"] == "1"
        assert reply.headers["Content-Type"].startswith("application/problem+json")
        problem = reply.json()
        assert (problem["status"], problem["title"]) == (503, "Service Unavailable")
        assert problem["detail"] == "not ready: no version is published"
        assert get(srv.url + "/health").status == 200
        reply = get(srv.url + "/geocoding/reverse?lat=1&lon=2")
        assert reply.status == 503 and reply.json()["status"] == 503
        build(make_datasets(tmp_path / "a"), out)  # geocoding only: the rest stays absent
        body = srv.wait_ready()
        assert body["state"] == "ready" and body["build_id"] == (out / "current").resolve().name
        assert body["areas"]["geocoding"]["state"] == "loaded"
        assert {body["areas"][a]["state"] for a in ("air_quality", "forecast", "webcams")} == {
            "absent"
        }
        assert get(srv.url + "/geocoding/reverse?lat=47.37&lon=8.54").status == 200


def test_a_server_without_keys_keeps_its_secrets_out_of_the_runners_home(tmp_path):
    home = tmp_path / "home"
    with Server(tmp_path / "empty", None, HOME=str(home)) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        config = Path(srv.env["XDG_CONFIG_HOME"])
        assert (config / "weather-geodata-api" / "signing-secrets.json").is_file()
    assert not home.exists()


@pytest.mark.parametrize("name", ["keys.json", "keys.toml"])
def test_keys_cli_stores_only_a_hash(tmp_path, name):
    keys = tmp_path / name
    key = add_key(keys, "alice", rate_limit=5)
    stored = (tomllib.loads if name.endswith(".toml") else json.loads)(keys.read_text())["keys"]
    assert stored == [
        {"name": "alice", "sha256": hashlib.sha256(key.encode()).hexdigest(), "rate_limit": 5}
    ]
    assert key not in keys.read_text()
    with pytest.raises(subprocess.CalledProcessError) as refused:
        add_key(keys, "alice")  # the name is taken: nothing changes
    assert refused.value.returncode == 1
    assert refused.value.stderr == f"error: a key named 'alice' already exists in {keys}\n"
    assert (tomllib.loads if name.endswith(".toml") else json.loads)(keys.read_text())[
        "keys"
    ] == stored
    with Server(tmp_path / "empty", keys) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        assert get(srv.url + "/forecast/1,2", {"X-API-Key": key}).status == 503
        assert get(srv.url + "/forecast/1,2", {"X-API-Key": key + "x"}).status == 403
        assert get(srv.url + "/forecast/1,2", {"X-API-Key": key}).headers["RateLimit-Limit"] == "5"
        # a key added while the server runs is picked up without a restart
        late = add_key(keys, "bob")
        deadline = time.monotonic() + 10
        while get(srv.url + "/forecast/1,2", {"X-API-Key": late}).status == 403:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_keys_cli_never_writes_through_a_planted_temporary_file(tmp_path):
    keys, victim = tmp_path / "keys.json", tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / "keys.json.tmp"  # the name an older writer used, predictably
    planted.symlink_to(victim)
    key = add_key(keys, "alice")
    assert victim.read_text() == "precious\n" and planted.is_symlink()
    assert keys.is_file() and not keys.is_symlink()
    assert (
        json.loads(keys.read_text())["keys"][0]["sha256"]
        == hashlib.sha256(key.encode()).hexdigest()
    )
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    # No temporary file left; the lock file stays (see server.security.private_file.locked).
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".keys.json.lock",
        "keys.json",
        "keys.json.tmp",
        "victim.txt",
    ]


def _workers_of(pid: int) -> set[int]:
    """The worker processes of a server's parent (multiprocessing's spawned children)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return {int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()}


def test_several_workers_share_the_port_and_each_answers(tmp_path):
    # README: "--workers N runs N processes on one port". Each access line names the process
    # that answered (the log format's %(process)d); new connections are spread by the kernel
    # (SO_REUSEPORT), so both workers answer some, and only they do.
    out = tmp_path / "build"
    build(make_datasets(tmp_path / "a"), out)
    with Server(out, None, "--workers", "2", WEATHERAPI_ACCESS_LOG="1") as srv:
        srv.wait_ready()
        workers = _workers_of(srv.proc.pid)
        assert len(workers) == 2 and srv.proc.pid not in workers
        answered: set[int] = set()
        deadline = time.monotonic() + 60
        sent = 0
        while len(answered) < 2:  # a fresh connection each time (urllib keeps none)
            assert time.monotonic() < deadline, f"only {answered} answered {sent} requests"
            reply = get(srv.url + "/geocoding/lookup?q=zurich")
            assert reply.status == 200 and reply.json()["results"][0]["id"] == "2657896"
            sent += 1
            lines = srv.wait_log("] GET /geocoding/lookup ", count=sent)  # [request id]
            answered = {int(line.split()[2]) for line in lines}
            assert answered <= workers, (answered, workers)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_second_server_on_a_busy_port_refuses_to_start(tmp_path, workers):
    # With SO_REUSEPORT it would join the port and take half its connections.
    with Server(tmp_path / "empty") as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        port = srv.url.rsplit(":", 1)[1]
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "server",
                "--build",
                str(tmp_path / "other"),
                "--port",
                port,
                "--workers",
                workers,
            ],
            cwd=ROOT,
            env=srv.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2 and second.stdout == ""
        assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in second.stderr
        assert get(srv.url + "/health").status == 200


def test_the_port_is_held_while_the_workers_start():
    # The parent of several workers holds the port with a bound socket that does not listen
    # until they do: another server's probe must not pass beside it.
    held = bind("127.0.0.1", 0, hold_only=True)
    try:
        with pytest.raises(OSError) as refused:
            ensure_free("127.0.0.1", held.getsockname()[1])
        assert refused.value.errno == errno.EADDRINUSE
        worker = bind("127.0.0.1", held.getsockname()[1])  # its own workers still join it
        worker.close()
    finally:
        held.close()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_server_restarts_on_its_port_at_once(tmp_path, workers):
    # Connections the stopped server leaves in TIME_WAIT do not hold the port.
    with Server(tmp_path / "empty", None, "--workers", workers) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        port = srv.url.rsplit(":", 1)[1]
        assert get(srv.url + "/health").status == 200
    with Server(tmp_path / "empty", None, "--workers", workers, "--port", port) as again:
        again.wait_ready(status=503)  # the last --port wins
        assert again.url.endswith(f":{port}")


def test_keys_in_requests_the_parser_rejects_are_not_logged(tmp_path):
    secret = "SECRETKEY4567890"
    with Server(tmp_path / "empty") as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        host, port = srv.url.removeprefix("http://").rsplit(":", 1)
        for raw in (
            b"GET /geocoding/countries HTTP/1.1\r\nHost: x\r\n"
            b"X-API-Key: " + secret.encode() + b"\n\r\n",
            b"GET /" + secret.encode() * 1000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            b"\x16\x03\x01 " + secret.encode() + b"\r\n\r\n",
        ):
            reply = _raw_request(host, int(port), raw)
            head, _, body = reply.partition(b"\r\n\r\n")
            status = 414 if len(raw) > 8190 else 400  # the long target: URI too long
            assert head.split(b"\r\n")[0].split()[1] == b"%d" % status, head
            assert b"content-type: application/problem+json" in head.lower()
            assert json.loads(body)["status"] == status and secret.encode() not in reply
        assert get(srv.url + "/health").status == 200
    assert secret not in srv.log


def test_access_lines_name_the_key_and_never_show_it(default_build, keys_file):
    # README: "access lines name the key, never show it", sent as the X-API-Key header or as
    # the api_key parameter; a refused key is not shown either.
    keys, key, tiny = keys_file
    wrong = "WRONGKEY" + key[8:]
    with Server(default_build, keys, WEATHERAPI_ACCESS_LOG="1") as srv:
        srv.wait_ready()
        point = "/forecast/47.37,8.54"
        requests = [
            (point, {"X-API-Key": key}, 200, "tests"),
            (f"{point}?api_key={key}&units=si", {}, 200, "tests"),
            (f"/webcams?limit=1&api_key={tiny}", {}, 200, "tiny"),
            (f"/geocoding/lookup?q=zurich&api_key={key}", {}, 200, "tests"),  # optional key
            (point, {"X-API-Key": wrong}, 403, "-"),
            (f"{point}?api_key={wrong}", {}, 403, "-"),
            (point, {}, 403, "-"),
        ]
        for target, headers, status, _ in requests:
            assert get(srv.url + target, headers).status == status, target
        deadline = time.monotonic() + 30
        while len(
            lines := [
                _method_path_key(line)
                for line in srv.log_lines(" server.access INFO ")
                if "] GET /ready " not in line
            ]
        ) < len(requests):
            assert time.monotonic() < deadline, lines
            time.sleep(0.02)
    assert lines == [f"GET {target.split('?')[0]} key={name}" for target, _, _, name in requests]
    for secret in (key, tiny, wrong, key[:16], key[-16:]):
        assert secret not in srv.log


def _method_path_key(line: str) -> str:
    """`METHOD PATH key=NAME` of an access line (`[request id] METHOD PATH STATUS key=NAME TIME`)."""
    _, method, path, _, key, _ = line.split(" server.access INFO ")[1].split()
    return f"{method} {path} {key}"


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_requests_the_parser_rejects_are_logged_only_at_debug(tmp_path, level):
    # They are the client's error, and anyone can send them: at ERROR they would flood the log.
    with Server(tmp_path / "empty", None, WEATHERAPI_LOG_LEVEL=level) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        host, port = srv.url.removeprefix("http://").rsplit(":", 1)
        for _ in range(3):
            reply = _raw_request(host, int(port), b"GET /x HTTP/1.1\n\n")
            assert reply.split(b"\r\n")[0].endswith(b" 400 Bad Request"), reply[:100]
        if level == "DEBUG":
            lines = srv.wait_log("Error handling request", count=3)
            assert all(
                "DEBUG" in line and "from 127.0.0.1 (BadStatusLine)" in line for line in lines
            ), lines
        assert get(srv.url + "/health").status == 200
    assert ("Error handling request" in srv.log) == (level == "DEBUG")
    assert " ERROR " not in srv.log


def _raw_request(host: str, port: int, raw: bytes) -> bytes:
    """Send raw bytes; read the answer until the server closes the connection."""
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(raw)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_loading_and_answering_import_no_pipeline_library(default_build):
    """pyarrow's conveniences pull in pandas (~50 MiB and 0.35 s per worker) for nothing, and
    polars, DuckDB and xarray belong to the pipeline: neither loading every area nor answering
    (searches with typos, lookups in another language, reverse for several places) imports them."""
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from server.areas import loaders\n"
        "from server.geocoding.search import search\n"
        "version = Path(sys.argv[1]).resolve()\n"
        "areas = json.loads((version / 'manifest.json').read_text())['areas']\n"
        "loaded = {area: loaders()[area](version, entry) for area, entry in areas.items()}\n"
        "index = loaded['geocoding']\n"
        "for text in ('Amsterdma', 'Zurihc', 'zurich, ch', 'lond', 'ottowa'):\n"
        "    assert search(index, text, field_all=False, country=None, limit=10), text\n"
        "assert len(index.nearest(47.37, 8.54, 5)) == 5\n"
        "assert index.location(0, ('de',), detail=True)['id']\n"
        "found = [m for m in ('pandas', 'polars', 'duckdb', 'xarray') if m in sys.modules]\n"
        "print(sorted(areas), found)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(default_build / "current")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "['air_quality', 'forecast', 'geocoding', 'webcams'] []"


def test_the_compile_step_loads_every_area_of_a_given_build(default_build, tmp_path):
    # `./dev serve` and the benchmarks run it first, so that no server start waits for the
    # compiler; given a build it loads each area as a server does (compiling its kernels).
    result = subprocess.run(
        [sys.executable, "-m", "server.kernels.warmup", str(default_build)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("compiled code ready in ")
    assert lines[1].endswith(
        "(geocoding=loaded, air_quality=loaded, forecast=loaded, webcams=loaded)"
    ), lines
    # Without a published build only the forecast's code is compiled.
    alone = subprocess.run(
        [sys.executable, "-m", "server.kernels.warmup", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert alone.returncode == 0 and len(alone.stdout.splitlines()) == 1, alone
