"""Plausible synthetic air-quality fields for the offline default (not CAMS data).

Deterministic functions of time, position and run: urban and traffic peaks around large
cities (rush hours at 8 and 18 local solar time, weekdays), winter heating, ozone with an
afternoon maximum and urban titration, industrial and volcanic SO2, desert dust with Saharan
episodes that cross the Mediterranean, and the six pollen types in their seasons and regions
(missing out of season). Units: µg/m³, grains/m³, dust AOD dimensionless.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# (lat, lon, weight): the urban signal of large cities.
CITIES = (
    (51.51, -0.13, 1.0),
    (48.86, 2.35, 1.0),
    (40.42, -3.70, 0.8),
    (41.39, 2.17, 0.6),
    (41.90, 12.50, 0.7),
    (45.46, 9.19, 0.9),
    (52.52, 13.40, 0.7),
    (53.55, 9.99, 0.4),
    (48.14, 11.58, 0.4),
    (48.21, 16.37, 0.5),
    (50.08, 14.44, 0.4),
    (52.23, 21.01, 0.6),
    (50.06, 19.94, 0.6),
    (47.50, 19.04, 0.5),
    (44.43, 26.10, 0.6),
    (42.70, 23.32, 0.5),
    (44.79, 20.45, 0.5),
    (37.98, 23.73, 0.7),
    (41.01, 28.98, 1.0),
    (55.76, 37.62, 1.0),
    (50.45, 30.52, 0.6),
    (52.37, 4.90, 0.5),
    (50.85, 4.35, 0.5),
    (51.45, 7.00, 0.7),
    (38.72, -9.14, 0.4),
    (47.37, 8.54, 0.3),
    (59.33, 18.07, 0.3),
    (59.91, 10.75, 0.25),
    (55.68, 12.57, 0.3),
    (60.17, 24.94, 0.25),
    (40.85, 14.27, 0.5),
    (45.76, 4.84, 0.4),
    (53.48, -2.24, 0.4),
    (30.04, 31.24, 1.2),
    (36.75, 3.06, 0.4),
    (36.81, 10.18, 0.3),
    (33.57, -7.59, 0.4),
    (35.69, 51.39, 1.0),
    (39.93, 32.86, 0.5),
    (28.61, 77.21, 1.6),
    (19.08, 72.88, 1.2),
    (22.57, 88.36, 1.2),
    (23.81, 90.41, 1.3),
    (24.86, 67.00, 1.0),
    (31.55, 74.34, 1.3),
    (39.90, 116.41, 1.3),
    (31.23, 121.47, 1.1),
    (23.13, 113.26, 1.0),
    (30.57, 104.07, 0.9),
    (37.57, 126.98, 0.8),
    (35.68, 139.69, 0.9),
    (13.76, 100.50, 0.8),
    (-6.21, 106.85, 1.0),
    (14.60, 120.98, 0.8),
    (6.52, 3.38, 1.0),
    (-4.44, 15.27, 0.7),
    (-26.20, 28.05, 0.7),
    (-1.29, 36.82, 0.4),
    (24.71, 46.68, 0.6),
    (40.71, -74.01, 0.8),
    (34.05, -118.24, 0.9),
    (41.88, -87.63, 0.6),
    (29.76, -95.37, 0.5),
    (19.43, -99.13, 1.1),
    (-23.55, -46.63, 0.9),
    (-34.60, -58.38, 0.6),
    (-12.05, -77.04, 0.6),
    (4.71, -74.07, 0.5),
    (-33.45, -70.67, 0.6),
    (-33.87, 151.21, 0.3),
    (43.65, -79.38, 0.4),
    (-36.85, 174.76, 0.3),
    (-18.14, 178.44, 0.1),
)
# Broad polluted regions (lat, lon, sigma°, extra PM2.5 µg/m³).
REGIONS = (
    (27.0, 80.0, 7.0, 45.0),
    (35.0, 115.0, 7.0, 30.0),
    (25.0, 45.0, 9.0, 12.0),
    (8.0, 5.0, 8.0, 18.0),
    (45.5, 10.5, 2.0, 8.0),
    (50.0, 20.0, 4.0, 5.0),
)
# SO2 point sources: coal regions and volcanoes (lat, lon, µg/m³).
SO2_SOURCES = (
    (44.6, 20.2, 45.0),
    (50.3, 19.0, 25.0),
    (42.7, 25.9, 30.0),
    (69.3, 88.2, 80.0),
    (23.7, 86.4, 40.0),
    (40.0, 110.0, 35.0),
    (-26.0, 29.2, 40.0),
    (37.75, 15.0, 35.0),
    (63.6, -19.6, 15.0),
)
# Deserts (lat, lon, sigma°, dust AOD).
DESERTS = (
    (21.0, 5.0, 9.0, 0.45),
    (24.0, 47.0, 7.0, 0.3),
    (40.0, 88.0, 6.0, 0.3),
    (-25.0, 133.0, 8.0, 0.08),
)
# Pollen: (peak day of year, season width in days, grains/m³ at the peak, regions).
POLLEN = {
    "alder_pollen_grains_m3": (60, 18, 250.0, ((52.0, 15.0, 9.0), (47.0, 5.0, 6.0))),
    "birch_pollen_grains_m3": (112, 14, 900.0, ((56.0, 18.0, 8.0), (51.0, 8.0, 6.0))),
    "grass_pollen_grains_m3": (160, 25, 150.0, ((49.0, 10.0, 12.0), (42.0, -3.0, 5.0))),
    "mugwort_pollen_grains_m3": (220, 18, 60.0, ((50.0, 25.0, 10.0),)),
    "olive_pollen_grains_m3": (
        140,
        14,
        300.0,
        ((38.5, -4.0, 3.0), (41.0, 15.0, 4.0), (38.0, 23.0, 3.5)),
    ),
    "ragweed_pollen_grains_m3": (
        243,
        14,
        200.0,
        ((47.0, 20.0, 3.0), (45.5, 9.0, 1.5), (45.5, 4.8, 1.5), (47.0, 35.0, 4.0)),
    ),
}
OUT_OF_SEASON = 0.01  # season factor below which a pollen field is missing


def _gauss(lat2, lon2, lat0, lon0, sigma):
    """exp(-d²/2σ²) with d in degrees, longitude distance scaled by cos(latitude), wrapped."""
    dlon = (lon2 - lon0 + 180.0) % 360.0 - 180.0
    dlon = dlon * np.cos(np.radians(lat0))
    return np.exp(-((lat2 - lat0) ** 2 + dlon**2) / (2.0 * sigma * sigma))


@lru_cache(maxsize=8)
def _static(lat: tuple, lon: tuple, step_deg: float) -> dict[str, np.ndarray]:
    """Maps that do not change in time, on a grid (cells' centres; blobs at least a cell wide)."""
    lat2, lon2 = np.meshgrid(np.array(lat), np.array(lon), indexing="ij")
    sigma = max(0.6, 0.8 * step_deg)
    urban = sum(w * _gauss(lat2, lon2, la, lo, sigma) for la, lo, w in CITIES)
    region = sum(pm * _gauss(lat2, lon2, la, lo, s) for la, lo, s, pm in REGIONS)
    so2 = sum(v * _gauss(lat2, lon2, la, lo, max(0.5, step_deg)) for la, lo, v in SO2_SOURCES)
    desert = sum(a * _gauss(lat2, lon2, la, lo, s) for la, lo, s, a in DESERTS)
    pollen = {
        name: sum(_gauss(lat2, lon2, la, lo, s) for la, lo, s in regions)
        for name, (_, _, _, regions) in POLLEN.items()
    }
    return {
        "lat": lat2,
        "lon": lon2,
        "urban": urban,
        "region": region,
        "so2": so2,
        "desert": desert,
        **{"pollen:" + k: v for k, v in pollen.items()},
    }


def _clock(times_s: np.ndarray, lon2: np.ndarray):
    """Local solar hour (t, lat, lon), day of year and weekday (t, 1, 1) of Unix times."""
    t = np.asarray(times_s, dtype=np.int64)[:, None, None]
    utc_hour = (t % 86400) / 3600.0
    local = (utc_hour + lon2[None] / 15.0) % 24.0
    days = t // 86400
    doy = (t.astype("datetime64[s]") - t.astype("datetime64[s]").astype("datetime64[Y]")).astype(
        "timedelta64[D]"
    ).astype(np.int64) + 1
    weekday = (days + 3) % 7  # 1970-01-01 was a Thursday: Monday is 0
    return local, doy.astype(np.float64), weekday, days


def _traffic(local: np.ndarray, weekday: np.ndarray) -> np.ndarray:
    """Relative traffic emissions: morning and evening rush hours, quieter weekends."""
    rush = (
        0.35
        + 0.75 * np.exp(-((local - 8.0) ** 2) / 3.0)
        + 0.6 * np.exp(-((local - 18.0) ** 2) / 4.0)
        + 0.25 * np.exp(-((local - 13.0) ** 2) / 12.0)
    )
    return rush * np.where(weekday >= 5, 0.75, 1.0)


def _weather(lat2, lon2, times_s, run_time_s) -> np.ndarray:
    """Slowly moving ventilation pattern (around 1), slightly different in each run."""
    days = (np.asarray(times_s, dtype=np.float64)[:, None, None]) / 86400.0
    phase = (run_time_s // 86400) % 97 * 0.37
    wave = np.sin(np.radians(lat2) * 9.0 + np.radians(lon2) * 5.0 - days * 1.3) + 0.6 * np.sin(
        np.radians(lon2) * 11.0 - np.radians(lat2) * 4.0 + days * 0.8
    )
    return 1.0 + 0.22 * wave + 0.05 * np.sin(np.radians(lon2) * 7.0 + phase)


def _dust_aod(s: dict, days: np.ndarray, local_days: np.ndarray) -> np.ndarray:
    """Desert dust AOD plus a Saharan plume that crosses the Mediterranean every 11 days."""
    cycle = (local_days % 11.0) / 11.0  # (t, 1, 1)
    lat0, lon0 = 28.0 + 18.0 * cycle, -2.0 + 18.0 * cycle
    strength = 0.55 * np.sin(np.pi * cycle) ** 2
    plume = strength * np.exp(
        -((s["lat"][None] - lat0) ** 2 + ((s["lon"][None] - lon0) * 0.8) ** 2) / (2 * 5.0**2)
    )
    return s["desert"][None] * (0.8 + 0.2 * np.cos(2 * np.pi * days / 5.0)) + plume


def fields(
    names: list[str],
    times_s: np.ndarray,
    lat: np.ndarray,
    lon: np.ndarray,
    run_time_s: int,
    step_deg: float,
) -> dict[str, np.ndarray]:
    """The requested variables at every (time, lat, lon), float32."""
    s = _static(tuple(np.round(lat, 6)), tuple(np.round(lon, 6)), float(step_deg))
    local, doy, weekday, days = _clock(times_s, s["lon"])
    traffic = _traffic(local, weekday)
    weather = _weather(s["lat"], s["lon"], times_s, run_time_s)
    urban = s["urban"][None]
    # Heating: winter (northern or southern), evenings and nights.
    winter = np.cos(2 * np.pi * (doy - 15) / 365.25) * np.sign(s["lat"][None])
    heating = np.clip(winter, 0, None) * (0.6 + 0.4 * np.cos(2 * np.pi * (local - 21) / 24))
    sun = np.clip(np.cos(2 * np.pi * (local - 15.0) / 24.0), 0, None) ** 1.5
    summer = 0.5 + 0.5 * np.cos(2 * np.pi * (doy - 172) / 365.25) * np.sign(s["lat"][None])
    dust_aod = _dust_aod(s, days, np.asarray(times_s, dtype=np.float64)[:, None, None] / 86400)
    out = {}
    pm25 = (4.0 + s["region"][None] + 16.0 * urban * traffic + 10.0 * urban * heating) * weather
    values = {
        "pm25_ugm3": lambda: pm25 + 12.0 * dust_aod,
        "pm10_ugm3": lambda: pm25 * 1.45 + 3.0 + 95.0 * dust_aod,
        "no2_ugm3": lambda: (3.0 + 48.0 * urban * traffic) * weather,
        "o3_ugm3": lambda: np.clip(
            (42.0 + 14.0 * summer + 30.0 * sun * summer) * (1.5 - 0.5 * weather)
            - 28.0 * urban * (1.0 - sun) * traffic,
            2.0,
            None,
        ),
        "so2_ugm3": lambda: (1.2 + s["so2"][None] * (0.8 + 0.3 * heating)) * weather,
        "co_ugm3": lambda: (
            (140.0 + 9.0 * s["region"][None] + 320.0 * urban * traffic + 120.0 * urban * heating)
            * weather
        ),
        "dust_aod": lambda: dust_aod,
        "dust_ugm3": lambda: 110.0 * dust_aod,
    }
    for name in names:
        if name in values:
            out[name] = values[name]()
        else:
            out[name] = _pollen(name, s, doy, local)
        out[name] = np.broadcast_to(out[name], local.shape).astype(np.float32)
    return out


def _pollen(name: str, s: dict, doy: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Pollen in season (NaN for out-of-season hours), peaking around midday."""
    peak, width, amount, _ = POLLEN[name]
    distance = (doy - peak + 182.5) % 365.0 - 182.5
    season = np.exp(-0.5 * (distance / width) ** 2)
    midday = 0.55 + 0.45 * np.clip(np.cos(2 * np.pi * (local - 13.0) / 24.0), 0, None)
    value = amount * season * s["pollen:" + name][None] * midday
    return np.where(season < OUT_OF_SEASON, np.nan, value)
