"""Builds that fail for other reasons than a bad input file: a full disk, a file size limit, a
broken published manifest, a signal. Each leaves the published version serving, exits non-zero
and says in one line what went wrong, naming the file."""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import contract
from tests.support.procs import pipeline_env

pytestmark = pytest.mark.slow  # they build with the pipeline

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "geonames"
GEOCODING = ("--only", "geocoding")
# What a failed write says: the errno's message, or a library's own with the file size limit
# (when one is set) and the free space (numpy's tofile: "N requested and M written"; netCDF4:
# the errno's message, or from HDF5 "NetCDF: HDF error").
WRITE_PROBLEM = (
    r"(?:{0}|(?:{0}|\d+ requested and \d+ written|NetCDF: HDF error){1}; \d+ "
    r"bytes free on its file system)"
)
SIZE_LIMIT = r"; this process may write files of at most \d+ bytes \(ulimit -f\)"
NO_SPACE = WRITE_PROBLEM.format("No space left on device", "")
TOO_LARGE = WRITE_PROBLEM.format("File too large", SIZE_LIMIT)


def build_args(datasets: Path, out: Path, *only: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipeline",
        "build",
        "--datasets",
        str(datasets),
        "--out",
        str(out),
        *only,
    ]


def run(args: list[str], scratch: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run a build, with its temporary files in `scratch` if given."""
    env = pipeline_env(TMPDIR=str(scratch)) if scratch else pipeline_env()
    return subprocess.run(
        args, cwd=REPO, capture_output=True, text=True, timeout=300, env=env, **kwargs
    )


def assert_failed_cleanly(
    result,
    out: Path,
    previous: Path,
    problem: str,
    scratch: Path | None = None,
    stopped_at: str = "",
) -> None:
    """Exit 1, one line naming a file of the failed version (or a temporary one in `scratch`)
    that matches `stopped_at`, the previous version still served, nothing left behind."""
    assert result.returncode == 1, result.stderr[-2000:]
    [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    written = re.escape(str(out / contract.VERSIONS)) + r"/[^/:]+/[^:]+"
    temporary = re.escape(str(scratch)) + r"/[^:]+" if scratch else r"/[^:]*spill-[^:]*"
    match = re.fullmatch(
        f"error: build failed: ({written}|{temporary}): {problem}; "
        f"{previous.name} is still published",
        line,
    )
    assert match, line
    assert re.search(stopped_at, match[1]), f"stopped elsewhere than at {stopped_at}: {line}"
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == previous
    assert sorted(p.name for p in (out / contract.VERSIONS).iterdir()) == [previous.name]
    assert not scratch or list(scratch.iterdir()) == []


@pytest.fixture(scope="module")
def published(module_tmp):
    """A build directory whose published version holds the fixture's geocoding area (which
    the webcams area links to), built once: tests build on copies of it."""
    root = module_tmp("published")
    shutil.copytree(FIXTURE, root / "datasets" / "geonames")
    result = run(build_args(root / "datasets", root / "out", *GEOCODING))
    assert result.returncode == 0, result.stderr[-2000:]
    return root / "out"


def copy_build(published: Path, out: Path) -> Path:
    """Copy the published build to `out`; returns the copy's published version."""
    shutil.copytree(published, out, symlinks=True)
    return contract.current_version_dir(out)


@pytest.fixture
def built(datasets, published, tmp_path):
    """(datasets, out, published version): a copy of the published geocoding build."""
    out = tmp_path / "out"
    return datasets, out, copy_build(published, out)


@pytest.fixture
def scratch(tmp_path) -> Path:
    """An empty directory for the build's temporary files (TMPDIR)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


# Which write each limit stops: the first file to outgrow it.
@pytest.mark.parametrize(
    "area, limit_kb, stopped_at",
    [
        ("geocoding", 1, r"/spill-"),  # a pyarrow IPC spill file
        ("geocoding", 64, r"/geocoding/index/nearest_rows\.npy$"),  # NpyWriter's blocks
        ("air_quality", 64, r"/generated/europe/cams-europe-\d+\.nc$"),  # generated, NetCDF3
        ("forecast", 64, r"/forecast-generated-[^/]+/forecast/gfs\.[^/]+\.nc$"),  # NetCDF4
        ("webcams", 64, r"/webcams/index/webcam_json\.bin$"),
        # memory-mapped: numpy's write of its last byte fails first (posix_fallocate, which
        # keeps a full disk from ending in a SIGBUS, is reached by the full-disk case below)
        ("webcams", 1024, r"/webcams/index/snap_times\.npy$"),
    ],
    ids=[
        "geocoding-spill",
        "geocoding-npy",
        "air_quality-netcdf3",
        "forecast-netcdf4",
        "webcams-json",
        "webcams-mmap",
    ],
)
def test_a_file_size_limit_names_the_file_it_stopped(built, scratch, area, limit_kb, stopped_at):
    # RLIMIT_FSIZE fails a write as a full disk does (an errno, no file name); Python
    # ignores SIGXFSZ, so the write raises instead of killing the process.
    datasets, out, previous = built
    limit = limit_kb * 1024
    result = run(
        build_args(datasets, out, "--only", area),
        scratch,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )
    assert_failed_cleanly(result, out, previous, TOO_LARGE, scratch, stopped_at)


@pytest.fixture
def small_disk(tmp_path):
    """small_disk(megabytes): a new tmpfs of that size (needs the right to mount: skipped
    without it), unmounted afterwards."""
    mounted = []

    def mount(size_mb: int) -> Path:
        disk = tmp_path / f"disk{len(mounted)}"
        disk.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(disk)],
            capture_output=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
        mounted.append(disk)
        return disk

    yield mount
    for disk in mounted:  # lazily: a failed test may still hold files open on it
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def fill(disk: Path, leave: int) -> None:
    """Fill the file system but for about `leave` bytes."""
    (disk / "reserve").write_bytes(b"\0" * leave)
    # Unbuffered: a buffered file would fail once more when closed, flushing what did not fit.
    with open(disk / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass
    (disk / "reserve").unlink()


# An area's build on a disk of `size_mb` with `leave_kb` free, and where that stops it. The
# forecast's temporary files (its generated run) are on the disk too.
@pytest.mark.parametrize(
    "area, size_mb, leave_kb, stopped_at",
    [
        ("geocoding", 4, 0, r"/geocoding/locations\.parquet$"),
        ("geocoding", 4, 64, r"/geocoding/index/nearest_rows\.npy$"),
        ("geocoding", 4, 1000, r"/geocoding/index/nearest_elevated_a\.npy$"),
        # The generated CAMS runs (2 x 59 MB NetCDF3, then 4 NetCDF4 files, 40 MB), the stitched
        # series (134 MB of scratch files), the grids (177 MB).
        ("air_quality", 512, 30_000, r"/generated/europe/cams-europe-\d+\.nc$"),
        ("air_quality", 512, 130_000, r"/generated/global/cams-global-\d+-(sfc|ml)\.nc$"),
        ("air_quality", 512, 220_000, r"/\.air_quality-scratch/[^/]+\.raw$"),
        # The generated run (31 MB, then 158 MB of NetCDF4 written five files at once), the grid
        # (226 MB).
        ("forecast", 512, 100_000, r"/forecast-generated-[^/]+/forecast/gfs\.[^/]+\.nc$"),
        ("forecast", 512, 300_000, r"/forecast/hourly\.npy$"),
        # JSON blobs (0.1 MB in), the memory-mapped snapshot times (6.9 MB, 0.5 MB in), the daily
        # picks written after them.
        ("webcams", 16, 100, r"/webcams/index/webcam_json\.bin$"),
        ("webcams", 16, 1000, r"/webcams/index/snap_times\.npy$"),
        ("webcams", 16, 7350, r"/webcams/index/daily_[a-z]+\.npy$"),
    ],
    ids=[
        "geocoding-parquet",
        "geocoding-npy",
        "geocoding-npy-later",
        "air_quality-netcdf3",
        "air_quality-netcdf4",
        "air_quality-scratch",
        "forecast-netcdf4",
        "forecast-grid",
        "webcams-json",
        "webcams-mmap",
        "webcams-npy",
    ],
)
def test_a_full_disk_names_the_file_it_stopped(
    datasets, published, small_disk, area, size_mb, leave_kb, stopped_at
):
    disk = small_disk(size_mb)
    out, scratch = disk / "out", disk / "tmp"
    previous = copy_build(published, out)
    scratch.mkdir()
    fill(disk, leave_kb * 1024)
    result = run(build_args(datasets, out, "--only", area), scratch)
    assert_failed_cleanly(result, out, previous, NO_SPACE, scratch, stopped_at)


def many_names(n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(places, names) as pipeline.geocoding.keys.write takes them: n places of one name and one
    alternate name each, all different."""
    i = np.arange(n)
    ids = pl.Series([f"p{k}" for k in i])
    places = pl.DataFrame(
        {
            "id": ids,
            "row": i.astype(np.int32),
            "rank": i.astype(np.int32),
            "name": [f"place {k:x} {k * 7919 % 1000003:x}" for k in i],
            "is_airport": np.zeros(n, dtype=bool),
            "population": np.full(n, 1000, dtype=np.int64),
        }
    )
    names = pl.DataFrame(
        {
            "id": ids,
            "name": [f"alt {k * 31 % 999983:x}" for k in i],
            "language": pl.Series([None] * n, dtype=pl.String),
            "is_preferred": np.zeros(n, dtype=bool),
        }
    )
    return places, names


# Writes the search keys of 200,000 names with DuckDB in 48 MB on one thread (so that it
# spills), then prints the OSError's file and problem.
KEYS_SCRIPT = """
import sys
from pathlib import Path
from pipeline.geocoding import keys as geocoding_keys
from tests.pipeline.test_build_failures import many_names
try:
    places, names = many_names(200_000)
    geocoding_keys.write(
        Path(sys.argv[1]), {"places": places, "names": names}, memory="48MB", threads=1
    )
except OSError as exc:
    print(exc.filename)
    print(exc.strerror)
"""


# DuckDB fails a spill it has no room for as out of memory, one it cannot write as an IO error.
@pytest.mark.parametrize(
    "limit, problem",
    [
        ("disk", r"Out of Memory Error: failed to offload data block [^;]*"),
        ("file size", r'IO Error: Could not write file "[^"]+": File too large'),
    ],
    ids=["disk", "file-size"],
)
def test_a_duckdb_spill_that_does_not_fit_names_its_directory(small_disk, tmp_path, limit, problem):
    # The fixture's search keys never make DuckDB spill (allCountries' do, beyond 512 MB): here
    # 200,000 names in 48 MB do, on a 2 MB disk or under a 64 KB file size limit.
    version = (small_disk(2) if limit == "disk" else tmp_path) / "version"
    version.mkdir()
    size = 64 * 1024
    done = subprocess.run(
        [sys.executable, "-c", KEYS_SCRIPT, str(version)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=pipeline_env(),
        preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size)))
        if limit == "file size"
        else None,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    filename, strerror = done.stdout.splitlines()[-2:]  # after DuckDB's progress bar
    limited = SIZE_LIMIT if limit == "file size" else ""
    assert re.fullmatch(f"{problem}{limited}; \\d+ bytes free on its file system", strerror), (
        strerror
    )
    assert re.fullmatch(re.escape(str(version)) + r"/\.keys-[^/]+", filename)
    assert list(version.glob(".keys-*")) == []  # the spill directory is gone


def test_a_broken_published_manifest_fails_a_partial_build_not_a_full_one(built):
    datasets, out, previous = built
    manifest = previous / contract.MANIFEST
    manifest.write_text('{"areas": ', encoding="utf-8")
    result = run(build_args(datasets, out, *GEOCODING))
    assert result.returncode == 1
    assert (
        f"error: build failed: {manifest}: the published manifest is unreadable (JSONDecodeError: "
    ) in result.stderr
    assert "build every area (no --only) to replace it" in result.stderr
    assert "Traceback" not in result.stderr
    assert contract.current_version_dir(out) == previous
    # A full build carries nothing over, so it needs nothing of the broken manifest.
    result = run(build_args(datasets, out))
    assert result.returncode == 0, result.stderr[-2000:]
    version = contract.current_version_dir(out)
    assert version != previous
    assert set(contract.read_manifest(version)["areas"]) == set(contract.AREAS)


@pytest.mark.parametrize(
    "signum, code, message",
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated (SIGTERM)"),
    ],
)
def test_a_signal_stops_the_build_and_removes_what_it_wrote(built, scratch, signum, code, message):
    datasets, out, previous = built
    # The places file is a FIFO without a writer: reading it blocks, so the build is
    # certainly still running when the signal comes.
    places = datasets / "geonames" / "cities500.txt"
    places.unlink()
    os.mkfifo(places)
    build = subprocess.Popen(
        build_args(datasets, out, *GEOCODING),
        cwd=REPO,
        text=True,
        stderr=subprocess.PIPE,
        env=pipeline_env(TMPDIR=str(scratch)),
    )
    watchdog = threading.Timer(120, build.kill)  # a build deaf to the signal fails the test
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
    assert list(scratch.iterdir()) == []  # its spill files are gone too


def test_a_failure_after_the_rename_keeps_the_published_version(tmp_path):
    # A signal or an fsync error after publish()'s rename reaches the build's clean-up: the
    # version it would discard is the one now served.
    from pipeline.common import publish

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


def test_a_published_manifest_that_cannot_be_looked_up_fails_in_one_line(built):
    # Its stat fails (as in a version directory without search permission, EACCES), which
    # is not "nothing published": the build stops saying which file, without a traceback.
    datasets, out, previous = built
    manifest = previous / contract.MANIFEST
    manifest.unlink()
    manifest.symlink_to("x" * 300)
    result = run(build_args(datasets, out, *GEOCODING))
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line == (
        f"error: build failed: {manifest}: File name too long; the published version is unchanged"
    ), line
    assert sorted(p.name for p in (out / contract.VERSIONS).iterdir()) == [previous.name]
