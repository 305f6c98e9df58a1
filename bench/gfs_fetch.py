"""Fetch benchmark: a full-size GFS 0.25° run (1440 x 721, hours to 240, ~515 MB a file) from a
local NOAA stand-in, fetched by `python -m pipeline fetch gfs`, then the forecast build over it.

    python -m bench.gfs_fetch [--horizon 240] [--keep DIR]

Measures the fetch's wall time and peak RSS, bytes moved against the whole files' bytes (range
requests), requests made, and the forecast build's wall time and peak RSS over the fetched
run. The whole files are never written anywhere: the stand-in makes their wanted messages on
demand and serves padding for the rest (tests/support/upstreams/noaa_full.py). Needs about
1.5 GB of disk for the fetched subsets. bench/forecast.py's heavy() calls measure().
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import log, measure_process  # noqa: E402
from pipeline.forecast.sources.gfs import GfsConfig, recent_cycles  # noqa: E402
from tests.support.upstreams import noaa_full  # noqa: E402
from tests.support.upstreams.base import StandIn  # noqa: E402

SUMMARY = re.compile(r"gfs: fetched (\d+) file\(s\), ([\d,]+) bytes in ([\d.]+) s")


def serve_full_size_run(
    server: StandIn, horizon_h: int = 240, cycle: dt.datetime | None = None
) -> tuple[dt.datetime, int, int]:
    """Publish a full-size run on `server`: (cycle, files, whole files' bytes)."""
    cycle = cycle or recent_cycles(dt.datetime.now(dt.timezone.utc), 2)[1]
    hours = GfsConfig(horizon_h=horizon_h).hours()
    whole = noaa_full.publish(server, cycle, hours)
    return cycle, len(hours), whole


def measure(workdir: Path, horizon_h: int = 240) -> dict:
    """Fetch a full-size run into workdir/datasets and build the forecast over it."""
    datasets = workdir / "datasets"
    started = time.perf_counter()
    with StandIn() as server:
        cycle, files, whole = serve_full_size_run(server, horizon_h)
        log(
            f"stand-in: {files} files, {whole / 1e9:.1f} GB whole, published in "
            f"{time.perf_counter() - started:.0f} s"
        )
        env = {
            **os.environ,
            "WEATHERAPI_GFS_FALLBACK_URL": "",
            "WEATHERAPI_GFS_HORIZON_H": str(horizon_h),
            "WEATHERAPI_OPERATOR_CONTACT": os.environ.get(
                "WEATHERAPI_OPERATOR_CONTACT", "bench@localhost"
            ),
        }
        fetched = measure_process(
            [
                sys.executable,
                "-m",
                "pipeline",
                "fetch",
                "gfs",
                "--datasets",
                str(datasets),
                "--base-url",
                server.url,
                "--run",
                f"{cycle:%Y%m%d%H}",
            ],
            workdir / "fetch.log",
            3600,
            "fetch full-size GFS run",
            env=env,
        )
        hits = server.hits()
    summary = SUMMARY.search((workdir / "fetch.log").read_text(errors="replace"))
    run_dir = datasets / "forecast" / "gfs" / f"{cycle:%Y%m%d%H}"
    subset = sum(item["bytes"] for item in json.loads((run_dir / "run.json").read_text())["files"])
    moved = int(summary[2].replace(",", "")) if summary else sum(h.sent for h in hits)
    result = {
        "files": files,
        "fetch_s": round(fetched.wall_s, 1),
        "fetch_peak_rss_mib": max(fetched.peak_rss_mib, fetched.tree_peak_rss_mib),
        "requests": len(hits),
        "bytes_moved": moved,
        "bytes_whole": whole,
        "bytes_subset": subset,
        "moved_pct_of_whole": round(100 * moved / whole, 2),
        "cpu": fetched.cpu,
    }
    try:
        built = measure_process(
            [
                sys.executable,
                "-m",
                "pipeline",
                "build",
                "--datasets",
                str(datasets),
                "--out",
                str(workdir / "out"),
                "--only",
                "forecast",
            ],
            workdir / "build.log",
            3600,
            "build forecast over the fetched run",
        )
    except RuntimeError as exc:  # a build that cannot read GRIB runs yet: say so, go on
        result["warnings"] = [
            f"forecast build over the fetched GFS run failed: {str(exc).splitlines()[-1]}"
        ]
        return result
    result.update(
        build_s=round(built.wall_s, 1),
        build_peak_rss_mib=max(built.peak_rss_mib, built.tree_peak_rss_mib),
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gfs_fetch", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--horizon", type=int, default=240, help="last forecast hour")
    parser.add_argument(
        "--keep",
        type=Path,
        help="work in DIR and keep it (default: a temporary directory, removed)",
    )
    args = parser.parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="gfs-fetch-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = measure(workdir, args.horizon)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    result.pop("cpu", None)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
