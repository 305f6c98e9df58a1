"""Small real-format CAMS inputs with chosen concentrations, for known-value tests.

Europe (1° grid, the real domain and conventions): a west region (lon < 10) and an east region
(lon > 10) with constant concentrations; yesterday's run has more PM2.5 in the west, so the
24-hour means of today's first hours mix both runs. Global (5° grid; as the ADS serves it,
surface fields hourly and model-level fields 3-hourly): PM2.5 varies linearly with |longitude| up
to 60° (so values across the 0/360 seam are known), PM10 (hourly) grows 0.1 µg/m³ an hour and
NO2 (3-hourly steps interpolated to hours) 0.2 µg/m³ an hour from each run's start, dust AOD
grows with latitude, the other pollutants are constant.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.air_quality.aqi import ppb_per_ugm3
from pipeline.air_quality.sources import generated as gen

DAY_S = 86400
NO2_EAST_UGM3 = 121.5 / ppb_per_ugm3("no2")  # 121.5 ppb: truncated to 121 ppb
WEST = {
    "pm25_ugm3": 20.0,
    "pm10_ugm3": 30.0,
    "o3_ugm3": 70.0,
    "no2_ugm3": 20.0,
    "so2_ugm3": 5.0,
    "co_ugm3": 400.0,
    "dust_ugm3": 12.0,
    "birch_pollen_grains_m3": 120.5,
    "grass_pollen_grains_m3": 3.2,
    "olive_pollen_grains_m3": None,
    "ragweed_pollen_grains_m3": 0.0,
    "alder_pollen_grains_m3": 7.5,
    "mugwort_pollen_grains_m3": None,
}
EAST = {
    "pm25_ugm3": 8.0,
    "pm10_ugm3": 14.0,
    "o3_ugm3": 40.0,
    "no2_ugm3": NO2_EAST_UGM3,
    "so2_ugm3": 3.0,
    "co_ugm3": 300.0,
    "dust_ugm3": 0.0,
    **{k: None for k in WEST if k.endswith("pollen_grains_m3")},
}
WEST_PM25_YESTERDAY = 50.0
GLOBAL_CONSTANT = {"o3_ugm3": 60.0, "so2_ugm3": 4.0, "co_ugm3": 250.0}


def global_pm25(lon: float | np.ndarray) -> float | np.ndarray:
    return 20.0 + 0.5 * np.clip(np.abs(lon), 0.0, 60.0)


def global_pm10(hours_since_run: float | np.ndarray) -> float | np.ndarray:
    return 40.0 + 0.1 * hours_since_run


def global_no2(hours_since_run: float | np.ndarray) -> float | np.ndarray:
    return 15.0 + 0.2 * hours_since_run


def dust_aod(lat: float | np.ndarray) -> float | np.ndarray:
    return 0.1 + 0.004 * lat


def _europe(run_s: int, today_s: int, west_pm25: float | None = None):
    def compute(names, times_s, lat, lon):
        shape = (len(times_s), len(lat), len(lon))
        west = np.broadcast_to(lon[None, None, :] < 10.0, shape)
        out = {}
        for name in names:
            w = WEST_PM25_YESTERDAY if name == "pm25_ugm3" and run_s < today_s else WEST[name]
            w = west_pm25 if name == "pm25_ugm3" and west_pm25 is not None else w
            e = EAST[name]
            out[name] = np.where(west, np.nan if w is None else w, np.nan if e is None else e)
        return out

    return compute


def _global(run_s: int):
    def compute(names, times_s, lat, lon):
        shape = (len(times_s), len(lat), len(lon))
        hours = ((np.asarray(times_s) - run_s) / 3600.0)[:, None, None]
        values = {
            "pm25_ugm3": global_pm25(lon)[None, None, :],
            "pm10_ugm3": global_pm10(hours),
            "no2_ugm3": global_no2(hours),
            "dust_aod": dust_aod(lat)[None, :, None],
            **GLOBAL_CONSTANT,
        }
        return {n: np.broadcast_to(np.asarray(values[n], dtype=np.float64), shape) for n in names}

    return compute


def write_known(datasets: Path, today_s: int, days: tuple[int, ...] = (-1, 0)) -> Path:
    """DATASETS/cams/{europe,global} with the runs of those days (0: today); returns DATASETS."""
    europe, world = gen.europe_grid(1.0), gen.global_grid(5.0)
    for run in (today_s + day * DAY_S for day in days):
        day = gen.stamp(run)
        gen.write_europe_run(
            datasets / "cams" / "europe" / f"europe-{day}.nc", run, europe, _europe(run, today_s)
        )
        gen.write_global_run(
            datasets / "cams" / "global" / f"global-{day}", run, world, _global(run)
        )
    return datasets


def today_s(now_s: float) -> int:
    """00 UTC of the day of `now_s`."""
    return int(now_s // DAY_S * DAY_S)


def write_europe_analysis(datasets: Path, day_s: int, today_s: int, west_pm25: float) -> Path:
    """A CAMS Europe ANALYSIS of hours 0-23 of `day_s`: the known fields, PM2.5 west_pm25."""
    return gen.write_europe_run(
        datasets / "cams" / "europe" / f"europe-analysis-{gen.stamp(day_s)}.nc",
        day_s,
        gen.europe_grid(1.0),
        _europe(day_s, today_s, west_pm25),
        leads=np.arange(24),
        kind="ANALYSIS",
    )
