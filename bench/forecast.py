"""Forecast benchmarks: the full response and the daily-only one (exclude=minutely,hourly) under
load at 1000 distinct points (the full one also near 1000 places, where the gazetteer gives
the elevation), latency over one connection, the same responses built in-process (no HTTP), the
sun and moon against PyEphem, and with --heavy the ingest of a full-size 0.25°
run. Unless --quick, an alerts-only refresh over a running server (bench/alerts_refresh.py).
The plug-in interface is in bench/run.py."""

from __future__ import annotations

import calendar
import datetime as dt
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import (
    Context,
    CpuMeter,
    Target,
    Workload,
    log,
    measure_process,
    now_s,
    percentile,
    table,
)

AREA = "forecast"

# ---- targets (from the issue) ---------------------------------------------------------------

FULL_RATIO, DAILY_RATIO = 0.15, 0.4
# Against the bare aiohttp app (issue 27), and both answers' p99 at 32 connections.
FULL_BARE, DAILY_BARE, P99_MS = 0.18, 0.25, 20.0
P50_MS = 5.0
BUILD_S = 60.0  # default build of the forecast area
ALERTS_REFRESH_S = 15.0  # an alerts-only refresh, start to the new version served
HEAVY_PEAK_MIB = 8 * 1024.0  # "within 8 GB", read as GiB
SUN_S, MOON = 60.0, 0.01
POINTS = 1000


def _points(seed: int, n: int = POINTS) -> list[tuple[float, float]]:
    """Distinct points where people live and anywhere (oceans, poles included)."""
    rng = random.Random(seed)
    return [
        (
            round(rng.uniform(-60, 70) if i % 4 else rng.uniform(-89.9, 89.9), 4),
            round(rng.uniform(-180, 180), 4),
        )
        for i in range(n)
    ]


def _near_places(ctx: Context, n: int = POINTS) -> list[tuple[float, float]]:
    """Points a kilometre or two from random gazetteer places: where people ask (none
    without the geocoding area)."""
    if "geocoding" not in ctx.manifest["areas"]:
        return []
    import pyarrow.parquet as pq

    from contract import Geocoding as G

    places = pq.read_table(ctx.version_dir / G.LOCATIONS, columns=["lat", "lon"])
    lats, lons = places.column("lat").to_numpy(), places.column("lon").to_numpy()
    rng = random.Random(ctx.seed + 2)
    rows = [rng.randrange(len(lats)) for _ in range(n)]
    return [
        (
            round(min(90.0, max(-90.0, float(lats[r]) + rng.gauss(0, 0.02))), 4),
            round((float(lons[r]) + rng.gauss(0, 0.02) + 180) % 360 - 180, 4),
        )
        for r in rows
    ]


def workloads(ctx: Context) -> list[Workload]:
    """Full, daily-only and a language/units mix at 1000 points, the full one near places
    too; the full one over 1 connection for the p50 target."""
    points = _points(ctx.seed)
    key = f"api_key={ctx.api_key}"
    full = [f"/forecast/{lat},{lon}?{key}" for lat, lon in points]
    near = [f"/forecast/{lat},{lon}?{key}" for lat, lon in _near_places(ctx)]
    daily = [f"/forecast/{lat},{lon}?{key}&exclude=minutely,hourly" for lat, lon in points]
    langs = ("de", "fr", "ja", "pt-BR", "zh-TW", "ru", "ar", "es")
    mixed = [
        f"/forecast/{lat},{lon}?{key}&units=auto&lang={langs[i % len(langs)]}"
        for i, (lat, lon) in enumerate(points)
    ]
    return [
        Workload(
            AREA,
            "full",
            f"forecast, full ({POINTS} points)",
            full,
            ratio_target=FULL_RATIO,
            bare_target=FULL_BARE,
            p99_target_ms=P99_MS,
        ),
        Workload(
            AREA,
            "daily",
            "forecast, exclude=minutely,hourly",
            daily,
            ratio_target=DAILY_RATIO,
            bare_target=DAILY_BARE,
            p99_target_ms=P99_MS,
        ),
        Workload(AREA, "mixed", "forecast, units=auto, 8 languages", mixed),
        *(
            [Workload(AREA, "near_places", f"forecast, full, near {POINTS} places", near)]
            if near
            else []
        ),
        Workload(
            AREA,
            "full_c1",
            "forecast, full, 1 connection",
            full,
            connections=1,
            p50_target_ms=P50_MS,
        ),
    ]


def prepare(ctx: Context) -> dict:
    """Responses built in-process (the part of a request that is the forecast's own work), the
    webcam host's cloud_cover() call, and the sun and moon against the ephemeris."""
    from server.forecast import blocks as forecast_blocks
    from server.forecast import data as forecast_data
    from server.forecast.blocks import BLOCKS, EXTENDED_HOURS, HOURLY_HOURS, Request
    from server.forecast.place import locate
    from server.forecast.science import units

    t0 = now_s()
    data = forecast_data.load(ctx.version_dir, ctx.manifest["areas"][AREA])
    load_s = now_s() - t0
    gazetteer = None
    if "geocoding" in ctx.manifest["areas"]:
        from server.geocoding.index import GeocodingIndex

        gazetteer = GeocodingIndex(ctx.version_dir)
    points = _points(ctx.seed + 1)
    now = time.time()
    every = frozenset(BLOCKS)
    cases = {
        "full": (every, HOURLY_HOURS),
        "daily": (every - {"minutely", "hourly"}, HOURLY_HOURS),
        "extended": (every, EXTENDED_HOURS),
    }
    out = {"load_s": round(load_s, 3)}
    meter = CpuMeter()
    for name, (blocks, hours) in cases.items():
        samples = []
        for i, (lat, lon) in enumerate(points):
            started = now_s()
            place = locate(lat, lon, gazetteer)
            request = Request(lat, lon, "si", "en", hours, blocks)
            forecast_blocks.respond(data, place, request, units.SYSTEMS["si"], now)
            if i >= 50:  # the first calls warm caches (timezone days, phrases)
                samples.append((now_s() - started) * 1000)
        out[name] = {
            "p50_ms": round(percentile(samples, 50), 3),
            "p99_ms": round(percentile(samples, 99), 3),
            "mean_ms": round(statistics.fmean(samples), 3),
            "samples": len(samples),
        }
    cloud = []
    for lat, lon in points:
        started = now_s()
        data.cloud_cover(lat, lon, int(now))
        cloud.append((now_s() - started) * 1e6)
    out["cloud_cover_us"] = {
        "p50": round(percentile(cloud, 50), 1),
        "p99": round(percentile(cloud, 99), 1),
    }
    out["cpu"] = meter.stop()
    out["ephemeris"] = _ephemeris_check(ctx.seed)
    if not ctx.args.quick:
        out["alerts_refresh"] = _alerts_refresh(ctx)
        out["warnings"] = out["alerts_refresh"].pop("warnings", [])
    return out


def _alerts_refresh(ctx: Context) -> dict:
    """bench/alerts_refresh.py over a linked copy of this build (its own server)."""
    from bench import alerts_refresh

    try:
        return alerts_refresh.measure(ctx.build_dir, ctx.workdir)
    except Exception as exc:  # noqa: BLE001 (the other figures stand)
        return {"warnings": [f"alerts refresh benchmark failed: {exc}"]}


def _ephemeris_check(seed: int) -> dict:
    """Largest differences to PyEphem over random places up to 65° and dates."""
    try:
        import ephem
    except ImportError:
        return {"skipped": "ephem not installed (pip install -e '.[dev]')"}
    import numpy as np

    from server.forecast.science import moon, sun

    rng = random.Random(seed)
    worst_sun = worst_moon = 0.0
    for _ in range(400):
        lat, lon = rng.uniform(-65, 65), rng.uniform(-180, 180)
        day = calendar.timegm((2024, 1, 1, 12, 0, 0)) + rng.randrange(0, 3 * 365) * 86400
        noon = sun.solar_noon(np.array([day - lon * 240.0]), lon)
        rise, set_ = sun.rise_set(noon, lat, lon)
        if math.isnan(float(rise[0])):
            continue
        observer = ephem.Observer()
        observer.lat, observer.lon, observer.pressure, observer.horizon = (
            str(lat),
            str(lon),
            0,
            "-0:34",
        )
        observer.date = _ephem_date(ephem, float(noon[0]))
        for ours, theirs in (
            (rise[0], observer.previous_rising(ephem.Sun())),
            (set_[0], observer.next_setting(ephem.Sun())),
        ):
            when = theirs.datetime()
            worst_sun = max(
                worst_sun,
                abs(float(ours) - calendar.timegm(when.timetuple()) - when.microsecond / 1e6),
            )
        when = _ephem_date(ephem, float(noon[0]))
        expected = (
            float(ephem.Ecliptic(ephem.Moon(when)).lon - ephem.Ecliptic(ephem.Sun(when)).lon)
            / (2 * math.pi)
            % 1.0
        )
        got = float(moon.phase(float(noon[0])))
        worst_moon = max(worst_moon, abs((got - expected + 0.5) % 1.0 - 0.5))
    return {
        "sun_max_s": round(worst_sun, 2),
        "moon_max": round(worst_moon, 5),
        "ephem": ephem.__version__,
    }


def _ephem_date(ephem, unix_s: float):
    return ephem.Date(dt.datetime.fromtimestamp(unix_s, dt.timezone.utc).replace(tzinfo=None))


def heavy(ctx: Context) -> dict:
    """Ingest of a generated full-size GFS run (0.25°, 1440 x 721, 192 h, ten fields) under
    /usr/bin/time: wall time and peak RSS. Needs about 16 GB of disk under the system's
    temporary directory (input 6 GB, artifacts 10 GB), deleted afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="forecast-heavy-"))
    try:
        free = shutil.disk_usage(scratch).free / 2**30
        if free < 20:
            return {
                "skipped": f"only {free:.0f} GiB free in {scratch.parent}; 20 GiB needed",
                "warnings": ["forecast heavy run skipped: not enough disk"],
            }
        started = now_s()
        generated = measure_process(
            [sys.executable, "bench/make_forecast_run.py", "--out", str(scratch / "datasets")],
            scratch / "generate.log",
            3600,
            "generate 0.25° run",
        )
        log(f"generated the run in {now_s() - started:.0f} s")
        inputs = sum(f.stat().st_size for f in (scratch / "datasets").rglob("*.nc"))
        ingest = measure_process(
            [
                sys.executable,
                "-m",
                "pipeline",
                "build",
                "--datasets",
                str(scratch / "datasets"),
                "--out",
                str(scratch / "out"),
                "--only",
                AREA,
            ],
            scratch / "ingest.log",
            3 * 3600,
            "ingest 0.25° run",
        )
        artifacts = sum(f.stat().st_size for f in (scratch / "out").rglob("*") if f.is_file())
        return {
            "generate_s": generated.wall_s,
            "ingest_s": ingest.wall_s,
            "ingest_peak_rss_mib": max(ingest.peak_rss_mib, ingest.tree_peak_rss_mib),
            "peak_rss_method": ingest.peak_rss_method,
            "input_gib": round(inputs / 2**30, 2),
            "artifacts_gib": round(artifacts / 2**30, 2),
            "grid": "0.25° global, 1440 x 721, 192 h (hourly to 120 h, then 3-hourly), 10 fields",
            "cpu": ingest.cpu,
            "fetch_gfs": _fetch_gfs(),
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fetch_gfs() -> dict:
    """`fetch gfs` of a full-size run from a local stand-in, then the build over it
    (bench/gfs_fetch.py): seconds, peak RSS, bytes moved against the whole files."""
    from bench import gfs_fetch

    scratch = Path(tempfile.mkdtemp(prefix="gfs-fetch-heavy-"))
    try:
        result = gfs_fetch.measure(scratch)
        result.pop("cpu", None)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def targets(report: dict) -> list[Target]:
    """Build time, in-process p50, the ephemeris checks and the heavy ingest."""
    out, mine = [], report["areas"].get(AREA, {})
    build_s = (report.get("build") or {}).get("area_s", {}).get(AREA)
    if build_s is not None:
        out.append(
            Target(
                "forecast default build (from the build log)",
                build_s,
                "s",
                f"<= {BUILD_S:g} s",
                build_s <= BUILD_S,
            )
        )
    for name in ("full", "daily"):
        if name in mine:
            p50 = mine[name]["p50_ms"]
            out.append(
                Target(
                    f"{name} response in-process p50 (info)",
                    p50,
                    "ms",
                    f"<= {P50_MS:g} ms",
                    p50 <= P50_MS,
                    "no HTTP",
                )
            )
    eph = mine.get("ephemeris", {})
    if "sun_max_s" in eph:
        out.append(
            Target(
                "sunrise/sunset vs PyEphem, |lat| <= 65",
                eph["sun_max_s"],
                "s",
                f"<= {SUN_S:g} s",
                eph["sun_max_s"] <= SUN_S,
                "worst of 400 days",
            )
        )
        out.append(
            Target(
                "moon phase vs PyEphem",
                eph["moon_max"],
                "",
                f"<= {MOON:g}",
                eph["moon_max"] <= MOON,
            )
        )
    refresh = (mine.get("alerts_refresh") or {}).get("changed")
    if refresh:
        out.append(
            Target(
                "alerts-only refresh, start to new version served",
                refresh["to_served_s"],
                "s",
                f"<= {ALERTS_REFRESH_S:g} s",
                refresh["to_served_s"] <= ALERTS_REFRESH_S and refresh["rebuilt_alerts_only"],
                f"refresh itself {refresh['refresh_s']} s; server reload every 2 s",
            )
        )
    heavy = mine.get("heavy") or {}
    if "ingest_peak_rss_mib" in heavy:
        out.append(
            Target(
                "0.25° run ingest peak RSS",
                heavy["ingest_peak_rss_mib"],
                "MiB",
                f"<= {HEAVY_PEAK_MIB:g} MiB",
                heavy["ingest_peak_rss_mib"] <= HEAVY_PEAK_MIB,
                f"{heavy['ingest_s']:.0f} s",
            )
        )
        out.append(
            Target(
                "0.25° run ingest time (info)",
                heavy["ingest_s"],
                "s",
                "report",
                None,
                f"{heavy['input_gib']} GiB in, {heavy['artifacts_gib']} GiB out",
            )
        )
    return out


def print_section(report: dict) -> None:
    """In-process latencies, the ephemeris check and the heavy run."""
    mine = report["areas"].get(AREA, {})
    rows = [
        [
            name,
            mine[name]["p50_ms"],
            mine[name]["p99_ms"],
            mine[name]["mean_ms"],
            mine[name]["samples"],
        ]
        for name in ("full", "daily", "extended")
        if name in mine
    ]
    if rows:
        print("\n## Forecast responses in-process (no HTTP), distinct points")
        print(table(["response", "p50 ms", "p99 ms", "mean ms", "samples"], rows))
        cloud = mine.get("cloud_cover_us", {})
        print(
            f"cloud_cover() for the webcam images: p50 {cloud.get('p50')} µs, "
            f"p99 {cloud.get('p99')} µs; data loaded in {mine.get('load_s')} s"
        )
    eph = mine.get("ephemeris", {})
    if eph:
        print(
            f"sun vs PyEphem {eph.get('ephem', '')}: worst {eph.get('sun_max_s')} s; "
            f"moon phase: worst {eph.get('moon_max')}"
        )
    heavy = mine.get("heavy")
    if heavy:
        print("\n## Heavy: full-size 0.25° run")
        for key, value in heavy.items():
            if key not in ("cpu", "warnings"):
                print(f"  {key}: {value}")
