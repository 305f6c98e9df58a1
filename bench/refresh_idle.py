"""Refresh with nothing new: `python -m pipeline refresh` against a NOAA stand-in holding the
current GFS cycle (13 hours, the real sample's messages) and an Atmosphere Data Store stand-in,
once to fetch and publish, then `--rounds` times more with nothing new upstream. Reports each
idle refresh's wall time (median and range), the requests NOAA saw and their methods, and
whether a version was published (it must not be).

    python -m bench.refresh_idle [--rounds 3] [--keep DIR]

Target (issue 24): an idle refresh in 10 s or less, nothing downloaded, no new version.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import contract  # noqa: E402
from bench.harness import log  # noqa: E402
from pipeline.forecast.sources.gfs import recent_cycles  # noqa: E402
from tests.support.upstreams.ads import AdsStandIn, Running  # noqa: E402
from tests.support.upstreams.base import StandIn  # noqa: E402
from tests.support.upstreams.noaa import NoaaLayout  # noqa: E402

TOKEN = "bench-token"


def _refresh(work: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """One `pipeline refresh` of the forecast and air quality; (seconds, the process)."""
    cmd = [sys.executable, "-m", "pipeline", "refresh", "--datasets", str(work / "datasets")]
    cmd += ["--out", str(work / "build"), "--only", "forecast", "air_quality"]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env})
    return time.perf_counter() - started, done


def measure(work: Path, rounds: int = 3) -> dict:
    """The first refresh, then `rounds` idle ones; the figures."""
    cycle = recent_cycles(dt.datetime.now(dt.timezone.utc), 1)[0]
    (work / "ads").mkdir(parents=True, exist_ok=True)
    with StandIn() as server, Running(AdsStandIn(work / "ads", tokens={TOKEN})) as ads:
        noaa = NoaaLayout(server)
        noaa.add_run(cycle, list(range(13)))
        env = {
            "WEATHERAPI_GFS_BASE_URL": noaa.url,
            "WEATHERAPI_GFS_FALLBACK_URL": "",
            "WEATHERAPI_GFS_HORIZON_H": "12",
            "WEATHERAPI_GFS_HISTORY_CYCLES": "0",
            "WEATHERAPI_OPERATOR_CONTACT": "bench@example.org",
            "WEATHERAPI_CAMS_BASE_URL": ads.url,
            "CDSAPI_KEY": TOKEN,
            "CDSAPI_RC": str(work / "none"),
            "WEATHERAPI_CAMS_POLL_S": "0.05",
            "WEATHERAPI_REFRESH_SOURCES": "gfs,cams-europe,cams-global",
        }
        first_s, first = _refresh(work, env)
        if first.returncode != 0:
            raise SystemExit(f"first refresh failed:\n{first.stderr[-3000:]}")
        log(f"first refresh (fetch, build, publish): {first_s:.1f} s")
        versions = sorted(p.name for p in (work / "build" / contract.VERSIONS).iterdir())
        idle, methods, published = [], set(), False
        for _ in range(rounds):
            server.clear_hits()
            seconds, again = _refresh(work, env)
            idle.append(seconds)
            methods |= {h.method for h in server.hits()}
            published |= "nothing new: no version published" not in again.stderr
            log(f"idle refresh: {seconds:.2f} s, {len(server.hits())} NOAA requests")
        now = sorted(p.name for p in (work / "build" / contract.VERSIONS).iterdir())
    return {
        "first_refresh_s": round(first_s, 1),
        "idle_refresh_s_median": round(statistics.median(idle), 2),
        "idle_refresh_s_range": [round(min(idle), 2), round(max(idle), 2)],
        "noaa_methods_when_idle": sorted(methods),
        "published_when_idle": published or now != versions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.refresh_idle", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="idle refreshes (default 3)")
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it")
    args = parser.parse_args(argv)
    if args.keep:
        result = measure(args.keep, args.rounds)
    else:
        with tempfile.TemporaryDirectory(prefix="refresh-idle-") as tmp:
            result = measure(Path(tmp), args.rounds)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
