"""Builds that fail for other reasons than a bad input file: a full disk, a file size limit, a
broken published manifest, a signal. Each leaves the published version serving, exits non-zero
and says in one line what went wrong, naming the file."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import contract
from tests.support.procs import pipeline_env

REPO = Path(__file__).resolve().parents[2]
GEOCODING = ("--only", "geocoding")


def build_args(datasets: Path, out: Path, *only: str) -> list[str]:
    return [sys.executable, "-m", "pipeline", "build", "--datasets", str(datasets),
            "--out", str(out), *only]


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=pipeline_env(), **kwargs)


def assert_failed_cleanly(result, out: Path, previous: Path, problem: str) -> None:
    """Exit 1, one line naming a file of the failed version, the previous one still served."""
    assert result.returncode == 1, result.stderr[-2000:]
    [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    written = re.escape(str(out / contract.VERSIONS)) + r"/[^/:]+/[^:]+"
    assert re.fullmatch(f"error: build failed: (?:{written}|/[^:]*spill-[^:]*): {problem}; "
                        f"{previous.name} is still published", line), line
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == previous
    assert sorted(p.name for p in (out / contract.VERSIONS).iterdir()) == [previous.name]


@pytest.fixture
def built(datasets, tmp_path):
    """(datasets, out, published version) after a good geocoding build."""
    out = tmp_path / "out"
    result = run(build_args(datasets, out, *GEOCODING))
    assert result.returncode == 0, result.stderr[-2000:]
    return datasets, out, contract.current_version_dir(out)


@pytest.mark.parametrize("limit_kb", [1, 64])
def test_a_file_size_limit_names_the_file_it_stopped(built, limit_kb):
    # RLIMIT_FSIZE fails a write as a full disk does (an errno, no file name); Python
    # ignores SIGXFSZ, so the write raises instead of killing the process.
    datasets, out, previous = built
    limit = limit_kb * 1024
    result = run(build_args(datasets, out, *GEOCODING), preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_FSIZE, (limit, limit)))
    assert_failed_cleanly(result, out, previous,
                          r"(File too large|\d+ requested and \d+ written; \d+ bytes free on "
                          r"its file system)")


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs (needs the right to mount: skipped without it), unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def fill(disk: Path, leave: int) -> None:
    """Fill the file system but for about `leave` bytes."""
    (disk / "reserve").write_bytes(b"\0" * leave)
    with open(disk / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    (disk / "reserve").unlink()


@pytest.mark.parametrize("leave_kb", [0, 64, 1000])
def test_a_full_disk_names_the_file_it_stopped(datasets, small_disk, leave_kb):
    out = small_disk / "out"
    assert run(build_args(datasets, out, *GEOCODING)).returncode == 0
    previous = contract.current_version_dir(out)
    fill(small_disk, leave_kb * 1024)
    result = run(build_args(datasets, out, *GEOCODING))
    assert_failed_cleanly(result, out, previous,
                          r"(No space left on device|\d+ requested and \d+ written; \d+ bytes "
                          r"free on its file system)")


def test_a_broken_published_manifest_fails_a_partial_build_not_a_full_one(built):
    datasets, out, previous = built
    manifest = previous / contract.MANIFEST
    manifest.write_text('{"areas": ', encoding="utf-8")
    result = run(build_args(datasets, out, *GEOCODING))
    assert result.returncode == 1
    assert (f"error: build failed: {manifest}: the published manifest is unreadable "
            "(JSONDecodeError: ") in result.stderr
    assert "build every area (no --only) to replace it" in result.stderr
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == previous
    # A full build carries nothing over, so it needs nothing of the broken manifest.
    result = run(build_args(datasets, out))
    assert result.returncode == 0, result.stderr[-2000:]
    version = contract.current_version_dir(out)
    assert version != previous
    assert set(contract.read_manifest(version)["areas"]) == set(contract.AREAS)


@pytest.mark.parametrize("signum, code, message", [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),
])
def test_a_signal_stops_the_build_and_removes_what_it_wrote(built, tmp_path, signum, code,
                                                            message):
    datasets, out, previous = built
    # The places file is a FIFO without a writer: reading it blocks, so the build is
    # certainly still running when the signal comes.
    places = datasets / "geonames" / "cities500.txt"
    places.unlink()
    os.mkfifo(places)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    build = subprocess.Popen(build_args(datasets, out, *GEOCODING), cwd=REPO, text=True,
                             stderr=subprocess.PIPE, env=pipeline_env(TMPDIR=str(scratch)))
    watchdog = threading.Timer(120, build.kill)     # a build deaf to the signal fails the test
    watchdog.start()
    try:
        for line in build.stderr:
            if "reading GeoNames dumps" in line:
                break
        build.send_signal(signum)
        rest = build.stderr.read()
        assert build.wait(timeout=60) == code
    finally:
        watchdog.cancel()
        build.kill()
        build.wait()
    assert f"error: build failed: {message}; {previous.name} is still published" in rest
    assert "Traceback" not in rest
    assert contract.current_version_dir(out) == previous
    assert sorted(p.name for p in (out / contract.VERSIONS).iterdir()) == [previous.name]
    assert list(scratch.iterdir()) == []       # its spill files are gone too


def test_a_failure_after_the_rename_keeps_the_published_version(tmp_path):
    # A signal or an fsync error after publish()'s rename reaches the build's clean-up: the
    # version it would discard is the one now served.
    from pipeline import publish
    version = tmp_path / contract.VERSIONS / "20260101T000000Z-aaaaaa"
    version.mkdir(parents=True)
    (version / contract.MANIFEST).write_text("{}\n")
    publish.publish(tmp_path, version)
    publish.discard(version)
    assert contract.current_version_dir(tmp_path) == version.resolve()
    unpublished = tmp_path / contract.VERSIONS / "20260102T000000Z-bbbbbb"
    unpublished.mkdir()
    publish.discard(unpublished)
    assert not unpublished.exists()
