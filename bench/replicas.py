"""Replica pick-up benchmark: the default build published to a local S3 endpoint (moto in
server mode on loopback), a replica following it (`python -m server --build-from`), then a new
default build published; the time from current.json changing until the replica's /ready names
the new build (target: 60 s), with the replica's poll interval as in production (10 s).

    python -m bench.replicas [--build-dir DIR] [--poll 10]

Without --build-dir the default build is made first (about a minute); with it, DIR's current
version is published (it must have been built with checksums). The second build is always
made, into a scratch directory. Also printed: the publish's upload time, and a cold replica's
time from start until it serves (the whole build downloaded).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import subprocess  # noqa: E402

import obstore  # noqa: E402

import contract  # noqa: E402
from bench.harness import log, table  # noqa: E402
from tests.support.procs import Server, get, run_pipeline  # noqa: E402
from tests.support.s3 import BUCKET, Endpoint, s3_endpoint  # noqa: E402

PREFIX = "bench"
TARGET_S = 60.0
FULL_SIZE = {"WEATHERAPI_WEBCAMS_SCALE": "1"}  # the default build, not the tests' small one


def build(datasets: Path, out: Path) -> tuple[Path, float]:
    """The default build into `out`; its version and seconds."""
    started = time.monotonic()
    run_pipeline("build", "--datasets", str(datasets), "--out", str(out), env=FULL_SIZE)
    version = contract.current_version_dir(out)
    assert version is not None
    return version, time.monotonic() - started


def publish(s3: Endpoint, out: Path) -> float:
    """`python -m pipeline publish` of out's current version; its seconds."""
    started = time.monotonic()
    run_pipeline("publish", "--to", f"s3://{BUCKET}/{PREFIX}", "--out", str(out), env=s3.env)
    return time.monotonic() - started


class PointerWatch(threading.Thread):
    """Reads current.json every 50 ms and notes when it first names `build_id`."""

    def __init__(self, s3: Endpoint, build_id: str):
        super().__init__(daemon=True)
        self.store, self.build_id = s3.store(PREFIX), build_id
        self.changed_at: float | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                body = json.loads(bytes(obstore.get(self.store, contract.POINTER).bytes()))
                if body["build_id"] == self.build_id:
                    self.changed_at = time.monotonic()
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)


def wait_serving(srv: Server, build_id: str, timeout: float) -> float:
    """Poll /ready until the replica serves `build_id`; the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert srv.proc is not None and srv.proc.poll() is None, "the replica exited"
        reply = get(srv.url + "/ready")
        if reply.status == 200 and reply.json()["build_id"] == build_id:
            return time.monotonic()
        time.sleep(0.05)
    raise AssertionError(f"the replica did not serve {build_id} within {timeout:.0f} s")


def downloaded(srv: Server, build_id: str) -> str:
    """The replica's own line on the version: files, bytes, downloaded, seconds."""
    lines = srv.log_lines(f"build {build_id} from")
    match = re.search(r": (.*) verified in ([0-9.]+) s", lines[-1]) if lines else None
    return f"{match.group(1)} in {match.group(2)} s" if match else "?"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.replicas")
    parser.add_argument("--build-dir", type=Path, help="publish this build's current version")
    parser.add_argument("--poll", type=float, default=10.0, help="replica poll interval (s)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    rows: list[list[str]] = []
    try:
        (work / "empty").mkdir()
        with s3_endpoint() as s3:
            out = args.build_dir or work / "build"
            if args.build_dir is None:
                log("building the default build")
                first, seconds = build(work / "empty", out)
                rows.append(["default build (with checksums)", f"{seconds:.1f} s", ""])
            else:
                first = contract.current_version_dir(out) or Path("-")
            size = sum(p.stat().st_size for p in first.rglob("*") if p.is_file())
            log(f"publishing {first.name} ({size / 2**20:.0f} MiB)")
            seconds = publish(s3, out)
            rows.append(["publish (upload, verify)", f"{seconds:.1f} s", f"{size / 2**20:.0f} MiB"])
            # numba's cache filled first, as before any server start (bench.run does the same)
            subprocess.run([sys.executable, "-m", "server.kernels.warmup", str(out)], check=True)
            env = {**s3.env, "WEATHERAPI_POLL_INTERVAL_S": str(args.poll)}
            started = time.monotonic()
            with Server(
                work / "cache", None, "--build-from", f"s3://{BUCKET}/{PREFIX}", **env
            ) as srv:
                cold = wait_serving(srv, first.name, 600) - started
                rows.append(
                    ["cold replica: start to serving", f"{cold:.1f} s", downloaded(srv, first.name)]
                )
                # The second build into a copy of the build directory (hard links): a full
                # rebuild, as a scheduled refresh after new inputs makes one.
                second_out = work / "build2"
                shutil.copytree(out, second_out, symlinks=True, copy_function=os.link)
                log("building a new default build")
                second, seconds = build(work / "empty", second_out)
                watch = PointerWatch(s3, second.name)
                watch.start()
                log(f"publishing {second.name}")
                seconds = publish(s3, second_out)
                rows.append(["publish of the new build", f"{seconds:.1f} s", ""])
                watch.join(timeout=60)
                assert watch.changed_at is not None, "the pointer never changed"
                served = wait_serving(srv, second.name, 600) - watch.changed_at
                rows.append(
                    [
                        "pointer changed to replica serving",
                        f"{served:.1f} s",
                        downloaded(srv, second.name),
                    ]
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(["step", "time", "detail"], rows, "lrl"))
    verdict = "PASS" if served <= TARGET_S else "FAIL"
    print(
        f"target: a replica serves a new publish within {TARGET_S:.0f} s of the pointer: "
        f"{served:.1f} s (poll interval {args.poll:g} s) {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
