"""Stopping `python -m server` with a signal, however it was started, and its workers with it."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from server import workers as workers_module
from tests.support.procs import ROOT, Server, add_key, get, run_pipeline

pytestmark = pytest.mark.slow  # servers


def _ignore_sigint() -> None:
    """As a shell script's `cmd &` starts it: SIGINT ignored (inherited across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(
    tmp_path: Path, workers: str, preexec: Callable[[], None] | None = None
) -> tuple[subprocess.Popen, str]:
    """A server over an empty build, and its URL once /ready answers that nothing is published
    (every worker preloads before it listens)."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "server",
            "--build",
            str(tmp_path / "empty"),
            "--port",
            "0",
            "--workers",
            workers,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=preexec,
    )
    url = proc.stdout.readline().split(" on ", 1)[1].split()[0]
    deadline = time.monotonic() + 60
    while True:
        try:
            reply = get(url + "/ready")
            if reply.status == 503 and reply.json()["state"] == "unpublished":
                return proc, url
        except OSError:
            pass
        assert time.monotonic() < deadline, "never loaded"
        time.sleep(0.05)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    proc.stdout.close()


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_signal_stops_the_server_started_with_sigint_ignored(tmp_path, workers, signum):
    proc, _ = start(tmp_path, workers, _ignore_sigint)
    try:
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 0
    finally:
        stop(proc)


def test_workers_stop_when_their_parent_is_killed(tmp_path):
    # SIGKILL (or the OOM killer) leaves the parent no time to stop them: they must notice.
    proc, url = start(tmp_path, "2")
    try:
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while True:  # nothing answers once both workers have gone
            try:
                get(url + "/health")
            except OSError:
                break
            assert time.monotonic() < deadline, "a worker outlived its parent"
            time.sleep(0.05)
    finally:
        stop(proc)


def _state(pid: int) -> str:
    """A process's state and what it waits in, from /proc (for a failure's message)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return "gone"
    return next((line for line in status if line.startswith("State:")), "?") + f" in {wchan}"


def _workers(pid: int) -> list[int]:
    """The worker processes of a server's parent (not multiprocessing's resource tracker),
    once each handles SIGTERM: /ready answers when one is serving, the other may be starting
    (and a SIGTERM then would kill it at once, not stop it)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    deadline = time.monotonic() + 60
    while not all(_handles(c, signal.SIGTERM) for c in found):
        assert time.monotonic() < deadline, "a worker never handled SIGTERM"
        time.sleep(0.05)
    return found


def _handles(pid: int, signum: int) -> bool:
    """Whether a process has a handler for a signal (SigCgt of /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    caught = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt:"))
    return bool(caught >> (signum - 1) & 1)


def _stop_process(pid: int) -> None:
    """SIGSTOP, and wait until it has taken effect."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    while not _state(pid).startswith("State:\tT"):
        assert time.monotonic() < deadline, "SIGSTOP did not stop the process"
        time.sleep(0.01)


def test_a_worker_that_dies_stops_the_server_with_status_1(tmp_path):
    # Left serving with one worker fewer (or none), it would never be restarted.
    proc, url = start(tmp_path, "2")
    try:
        workers = _workers(proc.pid)
        assert len(workers) == 2
        os.kill(workers[0], signal.SIGKILL)
        try:
            status = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            left = {pid: _state(pid) for pid in [proc.pid, *workers]}
            raise AssertionError(f"the server did not stop; processes: {left}") from None
        assert status == 1
        with pytest.raises(OSError):
            get(url + "/health")
    finally:
        stop(proc)


@pytest.mark.parametrize("stuck", [1, 2])
def test_a_stuck_worker_is_killed_once_its_shutdown_time_is_over(tmp_path, stuck):
    # A worker that cannot stop (here: stopped by SIGSTOP) must not keep the server up, nor
    # must all of them (then no worker's exit wakes the parent: the signal itself must).
    proc, _ = start(tmp_path, "2")
    try:
        workers = _workers(proc.pid)
        for pid in workers[-stuck:]:
            _stop_process(pid)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert time.monotonic() - started >= workers_module.SHUTDOWN_TIMEOUT_S
        assert all(_state(pid) == "gone" for pid in workers)
    finally:
        stop(proc)


def test_workers_that_all_die_at_once_stop_the_server_with_status_1(tmp_path):
    # Both gone before the parent looks (the same bad artifact, the OOM killer): still a
    # failure, not a clean stop, or a supervisor would not restart the server.
    proc, _ = start(tmp_path, "2")
    try:
        workers = _workers(proc.pid)
        _stop_process(proc.pid)
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not all(_state(pid).startswith("State:\tZ") for pid in workers):
            assert time.monotonic() < deadline, "the workers did not end"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=60) == 1
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def big_image_catalog(module_tmp) -> tuple[Path, Path, int]:
    """A real-format webcam catalog of one webcam whose snapshots are one large image file,
    built with the pipeline; (build directory, the image, its size). The image outweighs
    every socket buffer between server and client many times over, so that its answer is
    still being sent while the client does not read."""
    tmp_path = module_tmp("big-image")
    wmem_max = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    size = max(32 << 20, 8 * wmem_max)
    folder = tmp_path / "datasets" / "webcams"
    (folder / "images").mkdir(parents=True)
    image = folder / "images" / "big.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8))
    (folder / "webcams.csv").write_text(
        "public_id,name,latitude,longitude,country_code,views\nbig,Big Picture,47.37,8.54,CH,1\n"
    )
    now = int(time.time()) // 600 * 600
    (folder / "snapshots.csv").write_text(
        "public_id,captured_at,image\n"
        + "".join(
            f"big,{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now - 600 * i))},big.png\n"
            for i in range(3)
        )
    )
    run_pipeline(
        "build",
        "--datasets",
        str(tmp_path / "datasets"),
        "--out",
        str(tmp_path / "build"),
        "--only",
        "webcams",
    )
    return tmp_path / "build", image, size


def _refused(host: str, port: int) -> bool:
    """Whether a new connection to the port is refused (nothing listens there any more)."""
    try:
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_lets_a_request_in_flight_finish(big_image_catalog, tmp_path, workers):
    # README: "SIGTERM or SIGINT stops the server after the requests in flight". The request:
    # a large image the client has begun to receive and then stops reading, so that it is
    # still being sent (blocked on the full socket) when the signal comes.
    build, image, size = big_image_catalog
    keys = tmp_path / "keys.json"
    key = add_key(keys, "tests")
    with Server(build, keys, "--workers", workers) as srv:
        srv.wait_ready()
        detail = get(srv.url + "/webcams/big", {"X-API-Key": key})
        assert detail.status == 200, detail.body[:300]
        link = urllib.parse.urlsplit(detail.json()["image"]["current"])
        host, port = link.hostname, link.port
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)  # before connecting
        client.settimeout(30)
        client.connect((host, port))
        with client:
            client.sendall(
                f"GET {link.path}?{link.query} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = client.recv(65536)
                assert chunk, received
                received += chunk
            head, body = received.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200 "), head
            assert f"content-length: {size}\r\n".encode() in head.lower() + b"\r\n", head
            srv.proc.send_signal(signal.SIGTERM)
            # Stopping: the server listens no more (new connections are refused), while the
            # answer in flight has most of its bytes still to send.
            deadline = time.monotonic() + 30
            while not _refused(host, port):
                assert time.monotonic() < deadline, "the server still accepts connections"
                time.sleep(0.05)
            assert srv.proc.poll() is None, "the server exited with a request in flight"
            digest = hashlib.sha256(body)
            length = len(body)
            while chunk := client.recv(1 << 20):
                digest.update(chunk)
                length += len(chunk)
        assert length == size
        assert digest.hexdigest() == hashlib.sha256(image.read_bytes()).hexdigest()
        assert srv.proc.wait(timeout=30) == 0
