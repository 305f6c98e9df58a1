"""A GFS-like run on the 0.25° grid (1440 x 721) read by the GRIB2 reader in a process of its
own: its peak resident memory stays far below the size of the messages it decodes (each is
written to a scratch file as it is decoded, and read back a band of rows at a time)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import forecast_inputs as fi
from tests.support import grib
from tests.support.procs import ROOT

pytestmark = grib.NEEDS_REAL_GFS

STEPS = list(range(25))
# Reads the run as the build does (scan, then every field in bands of 64 rows, the rows
# model_hourly asks for at a time) and reports the figures.
# The peak is VmHWM, this process image's own: getrusage's ru_maxrss also counts the memory
# of the parent it was forked from (Linux keeps the larger across exec).
READER = """
import json, sys, time
from pathlib import Path
from pipeline.forecast.sources import model_grib, runs

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024

imported = status("VmRSS")
start = time.monotonic()
scan = model_grib.scan(runs.held_runs(Path(sys.argv[1]), "gfs"), Path(sys.argv[2]))
scanned = time.monotonic() - start
nlat, nlon = len(scan.lat), len(scan.lon)
for run in scan.runs:
    for name in run.pieces:
        for a in range(0, nlat, 64):
            run.read(name, a, min(nlat, a + 64))
messages = sum(len(p.times_s) for r in scan.runs for ps in r.pieces.values() for p in ps)
print(json.dumps({"messages": messages, "decoded_bytes": messages * nlat * nlon * 4,
                  "peak_rss_bytes": status("VmHWM"),
                  "rss_after_imports_bytes": imported, "scan_s": round(scanned, 1),
                  "all_s": round(time.monotonic() - start, 1)}))
"""


def test_a_quarter_degree_run_is_read_with_bounded_memory(tmp_path):
    grib.gfs_quarter_run(tmp_path / "d", fi.last_run(), STEPS)
    (tmp_path / "scratch").mkdir()
    result = subprocess.run(
        [sys.executable, "-c", READER, str(tmp_path / "d"), str(tmp_path / "scratch")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.splitlines()[-1])
    print(f"\n0.25° GFS-like run, {len(STEPS)} steps: {figures}")
    # 25 steps x 14 fields (of 24 messages a file: not prate beside tp, not 2r beside 2d, not
    # the averages of tcc and the flags) x 4.15 MB: about 1.45 GB decoded.
    assert figures["messages"] == 14 * len(STEPS) - 1  # no tp at f000
    # About 340 MB alone, 240 of them the pipeline's imports (the same before any file is
    # read); 434 MB in a parallel CI run (the scratch files' mapped pages count in VmHWM, and
    # how many stay mapped varies). Bounded either way: a third of what is decoded, and the
    # reading itself a sixth of it.
    assert figures["peak_rss_bytes"] < figures["decoded_bytes"] / 3
    assert (
        figures["peak_rss_bytes"] - figures["rss_after_imports_bytes"]
        < figures["decoded_bytes"] / 6
    )
