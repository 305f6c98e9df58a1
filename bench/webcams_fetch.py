"""Fetch benchmark: `python -m pipeline fetch webcams` over a Windy-like catalog of 20,000
webcams (listed per country within the free plan's offset limit, 50 a page) and 1,000 owned
cameras serving JPEGs, all local stand-ins; then the webcams build over what it wrote.

    python -m bench.webcams_fetch [--webcams 20000] [--cameras 1000] [--keep DIR]

Measures the fetch's wall time and peak RSS (/usr/bin/time -v), requests made, and the
webcams build's (geocoding carried from the packaged gazetteer). bench/webcams.py's heavy()
calls measure().
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.harness import log, measure_process  # noqa: E402
from tests.support.upstreams.base import StandIn  # noqa: E402
from tests.support.upstreams.webcams import Cameras, WindyLayout, windy_webcams  # noqa: E402

KEY = "bench-windy-key"
# 25 countries of 800 webcams each: every listing within the free plan's 1,000 offset.
COUNTRIES = (
    "AT",
    "BE",
    "CH",
    "CZ",
    "DE",
    "DK",
    "ES",
    "FI",
    "FR",
    "GB",
    "GR",
    "HR",
    "HU",
    "IE",
    "IT",
    "NL",
    "NO",
    "PL",
    "PT",
    "RO",
    "SE",
    "SI",
    "SK",
    "US",
    "CA",
)


def owned_catalog(datasets: Path, urls: list[str]) -> None:
    """webcams.csv with one owned camera per URL, spread over the Alps."""
    lines = ["public_id,name,latitude,longitude,country_code,views,timezone,snapshot_url"]
    lines += [
        f"cam-{i:04d},Camera {i},{46 + (i % 100) / 50:.4f},{6 + (i // 100) / 2:.4f},CH,"
        f"{i},Europe/Zurich,{url}"
        for i, url in enumerate(urls)
    ]
    (datasets / "webcams").mkdir(parents=True, exist_ok=True)
    (datasets / "webcams" / "webcams.csv").write_text("\n".join(lines) + "\n")


def measure(workdir: Path, webcams: int = 20_000, cameras: int = 1000) -> dict:
    """Fetch the stand-ins' catalog and cameras into workdir/datasets; build over it."""
    datasets = workdir / "datasets"
    with StandIn() as server:
        WindyLayout(server, KEY, windy_webcams(webcams, countries=COUNTRIES))
        cams = Cameras(server)
        owned_catalog(datasets, [cams.add(f"c{i}") for i in range(cameras)])
        env = {
            **os.environ,
            "WEATHERAPI_WINDY_API_KEY": KEY,
            "WEATHERAPI_WINDY_COUNTRIES": ",".join(COUNTRIES),
            "WEATHERAPI_CAMERAS_PER_RUN": str(cameras),
            "WEATHERAPI_OPERATOR_CONTACT": "bench@localhost",
        }
        fetched = measure_process(
            [
                sys.executable,
                "-m",
                "pipeline",
                "fetch",
                "webcams",
                "--datasets",
                str(datasets),
                "--base-url",
                server.url,
            ],
            workdir / "fetch.log",
            1800,
            "fetch webcams",
            env=env,
        )
        hits = server.hits()
    stored = len(list((datasets / "webcams" / "images" / "owned").rglob("*.jpg")))
    result = {
        "webcams": webcams,
        "cameras": cameras,
        "fetch_s": fetched.wall_s,
        "fetch_peak_rss_mib": max(fetched.peak_rss_mib, fetched.tree_peak_rss_mib),
        "requests": len(hits),
        "listing_requests": sum("/webcams/api/" in h.path for h in hits),
        "images_stored": stored,
        "cpu": fetched.cpu,
    }
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
            "webcams",
        ],
        workdir / "build.log",
        1800,
        "build webcams over the fetched catalog",
    )
    result.update(
        build_s=built.wall_s, build_peak_rss_mib=max(built.peak_rss_mib, built.tree_peak_rss_mib)
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webcams_fetch", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--webcams", type=int, default=20_000)
    parser.add_argument("--cameras", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it")
    args = parser.parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="webcams-fetch-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = measure(workdir, args.webcams, args.cameras)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    result.pop("cpu", None)
    print(json.dumps(result, indent=1))
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
