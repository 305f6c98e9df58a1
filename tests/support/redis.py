"""A real redis-server for tests, on a Unix socket in a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """Start redis-server (skip when it is not installed); yield its unix:// URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    import redis

    socket_path = folder / "redis.sock"
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            "0",
            "--unixsocket",
            str(socket_path),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(unix_socket_path=str(socket_path))
    deadline = time.monotonic() + 30
    try:
        while True:  # readiness by polling PING
            try:
                client.ping()
                break
            except (redis.ConnectionError, FileNotFoundError):
                assert proc.poll() is None and time.monotonic() < deadline, (
                    "redis-server did not start"
                )
                time.sleep(0.05)
        yield f"unix://{socket_path}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
