"""Grid ingest memory against band size: the forecast build of a GFS-like 0.25° GRIB2 run
(1440 x 721, tests/support/grib.py) in a process of its own, once per band size (rows of the
grid a band), for runs of growing length; its peak resident memory (VmHWM) each time.

    python -m bench.dask_ingest [--steps 25 49] [--rows 16 64 0] [--scheduler ADDRESS]
                                [--workdir DIR]

--rows 0 is the default chunking (grid.BAND_BYTES a band). --scheduler runs the bands on a
Dask cluster (or "threads"): the peak is then the client's, the process that writes the
grid, and the workers' highest peak so far is shown beside it (start fresh workers). The
issue's target: at most 1.5 GB with the default chunking, and flat as the grid grows. Needs
about 12 GB of disk under the temporary directory for 97 steps (the run, the decoded scratch
and the grid); a run is written once per step count (under a second a step here).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from bench.harness import log, table  # noqa: E402
from tests.support import forecast_inputs as fi  # noqa: E402
from tests.support import grib  # noqa: E402

TARGET_MIB = 1.5 * 1000**3 / 2**20  # "1.5 GB"
# The build as `python -m pipeline build --only forecast` runs it, in the bands asked for;
# VmHWM is this process image's own peak (getrusage's would count its parent's too).
BUILD = """
import json, sys, time
from pathlib import Path
from pipeline.common import bands, grid
from pipeline.forecast import build

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

datasets, version, rows, scheduler = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
imported = status("VmRSS")
start = time.monotonic()
with bands.configured(scheduler or None, band_rows=rows or None):
    entry = build.build(datasets, version)
spec = entry["grids"]["hourly"]
print(json.dumps({"peak_bytes": status("VmHWM"), "imports_bytes": imported,
                  "seconds": round(time.monotonic() - start, 1), "nlat": spec["nlat"],
                  "nlon": spec["nlon"], "ntime": spec["ntime"], "nvar": len(spec["variables"]),
                  "default_rows": grid.BAND_BYTES // (spec["nlon"] * spec["ntime"]
                                                      * len(spec["variables"]) * 4)}))
"""


def write_run(datasets: Path, steps: int) -> float:
    """A GFS-like 0.25° run of `steps` hourly steps into datasets; seconds taken."""
    started = time.perf_counter()
    grib.gfs_quarter_run(datasets, fi.last_run(), list(range(steps)))
    return time.perf_counter() - started


def measure(datasets: Path, version: Path, rows: int, scheduler: str) -> dict:
    """One forecast build in a process of its own: its figures (see BUILD)."""
    result = subprocess.run(
        [sys.executable, "-c", BUILD, str(datasets), str(version), str(rows), scheduler],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the build failed:\n{result.stderr[-3000:]}")
    figures = json.loads(result.stdout.splitlines()[-1])
    if "://" in scheduler:
        figures["worker_peak_bytes"] = max(worker_peaks(scheduler).values())
    return figures


def worker_peaks(address: str) -> dict[str, int]:
    """Each worker process's peak resident memory so far (VmHWM): start fresh workers for
    one figure per build."""
    from distributed import Client

    def peak() -> int:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0

    with Client(address, set_as_default=False) as client:
        return client.run(peak)


def row(figures: dict, rows: int) -> list[str]:
    """One line of the table: the grid, the band, the peaks, the time, the target."""
    band_rows = rows or figures["default_rows"]
    band_mib = band_rows * figures["nlon"] * figures["ntime"] * figures["nvar"] * 4 / 2**20
    peak = figures["peak_bytes"] / 2**20
    workers = figures.get("worker_peak_bytes")
    return [
        f"{figures['nlat']} x {figures['nlon']} x {figures['ntime']} h x {figures['nvar']}",
        f"{band_rows}{' (default)' if not rows else ''}",
        f"{band_mib:.0f}",
        f"{peak:.0f}",
        f"{(figures['peak_bytes'] - figures['imports_bytes']) / 2**20:.0f}",
        f"{figures['seconds']:.0f}",
        f"{workers / 2**20:.0f}" if workers else "",
        ("PASS" if peak <= TARGET_MIB else "FAIL") if not rows else "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dask_ingest")
    parser.add_argument("--steps", type=int, nargs="+", default=[25, 49])
    parser.add_argument("--rows", type=int, nargs="+", default=[16, 64, 0])
    parser.add_argument("--scheduler", default="", help="a Dask cluster's address, or threads")
    parser.add_argument("--workdir", type=Path, help="default: a temporary directory")
    args = parser.parse_args(argv)
    if not grib.REAL_GFS.is_file():
        print(f"the real GFS sample is absent: {grib.REAL_GFS}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="dask-ingest-", dir=args.workdir))
    rows_out = []
    try:
        for steps in args.steps:
            datasets = work / f"datasets-{steps}"
            log(f"writing a 0.25° run of {steps} steps")
            log(f"written in {write_run(datasets, steps):.0f} s")
            for rows in args.rows:
                version = work / "version"
                version.mkdir()
                figures = measure(datasets, version, rows, args.scheduler)
                shutil.rmtree(version)
                rows_out.append(row(figures, rows))
                log(f"{steps} steps, {rows_out[-1][1]} rows a band: peak {rows_out[-1][3]} MiB")
            shutil.rmtree(datasets)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nGFS-like 0.25° forecast ingest, bands on {args.scheduler or 'this process'}")
    print(
        table(
            [
                "hourly grid (lat x lon x hours x vars)",
                "band rows",
                "band MiB",
                "peak RSS MiB",
                "peak over imports MiB",
                "build s",
                "worker peak MiB",
                f"<= {TARGET_MIB:.0f} MiB",
            ],
            rows_out,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
