"""The sun: NOAA's solar position (Meeus), sunrise and sunset, whether it is day.

Times are Unix seconds (numpy arrays or scalars), angles degrees, longitude east positive.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

HORIZON_DEG = -0.8333           # 34' refraction plus 16' solar radius
SECONDS_PER_HA_DEG = 240.0      # the hour angle turns 15 degrees an hour
ITERATIONS = 2
# position() is tabulated hourly over blocks of TABLE_BLOCK_S; both quantities are so smooth
# that linear interpolation between hours is exact to well under a second of time.
TABLE_STEP_S = 3600
TABLE_BLOCK_S = 32 * 86400


def position(unix_s) -> tuple[np.ndarray, np.ndarray]:
    """(declination in degrees, equation of time in minutes) at the given times."""
    jc = (np.asarray(unix_s, dtype=np.float64) / 86400.0 + 2440587.5 - 2451545.0) / 36525.0
    l0 = np.radians((280.46646 + jc * (36000.76983 + jc * 0.0003032)) % 360.0)
    m = np.radians(357.52911 + jc * (35999.05029 - 0.0001537 * jc))
    e = 0.016708634 - jc * (0.000042037 + 0.0000001267 * jc)
    centre = (np.sin(m) * (1.914602 - jc * (0.004817 + 0.000014 * jc))
              + np.sin(2 * m) * (0.019993 - 0.000101 * jc) + np.sin(3 * m) * 0.000289)
    omega = np.radians(125.04 - 1934.136 * jc)
    apparent = np.radians(np.degrees(l0) + centre - 0.00569 - 0.00478 * np.sin(omega))
    obliquity = np.radians(23.0 + (26.0 + (21.448 - jc * (46.815 + jc * (0.00059 - jc * 0.001813)))
                                   / 60.0) / 60.0 + 0.00256 * np.cos(omega))
    declination = np.degrees(np.arcsin(np.sin(obliquity) * np.sin(apparent)))
    y = np.tan(obliquity / 2) ** 2
    eq_time = 4.0 * np.degrees(y * np.sin(2 * l0) - 2 * e * np.sin(m)
                               + 4 * e * y * np.sin(m) * np.cos(2 * l0)
                               - 0.5 * y * y * np.sin(4 * l0) - 1.25 * e * e * np.sin(2 * m))
    return declination, eq_time


@lru_cache(maxsize=4)
def _table(block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    times = np.arange((block - 1) * TABLE_BLOCK_S, (block + 3) * TABLE_BLOCK_S + 1,
                      TABLE_STEP_S, dtype=np.float64)
    declination, eq_time = position(times)
    return times, declination, eq_time


def position_fast(unix_s) -> tuple[np.ndarray, np.ndarray]:
    """position() interpolated from an hourly table (a few microseconds instead of ~50)."""
    t = np.asarray(unix_s, dtype=np.float64)
    low, high = float(t.min()), float(t.max())
    times, declination, eq_time = _table(int(low // TABLE_BLOCK_S))
    if not (times[0] <= low and high <= times[-1]):
        return position(t)
    return np.interp(t, times, declination), np.interp(t, times, eq_time)


def hour_angle(unix_s, lon: float, eq_time_min) -> np.ndarray:
    """The sun's hour angle in degrees, in [-180, 180) (0 at solar noon)."""
    minutes = (np.asarray(unix_s, dtype=np.float64) % 86400.0) / 60.0
    true_solar = minutes + eq_time_min + 4.0 * lon
    return ((true_solar / 4.0) % 360.0) - 180.0


def altitude(unix_s, lat: float, lon: float) -> np.ndarray:
    """The sun's altitude above the horizon in degrees (no refraction)."""
    declination, eq_time = position_fast(unix_s)
    ha = np.radians(hour_angle(unix_s, lon, eq_time))
    phi, delta = np.radians(lat), np.radians(declination)
    sin_alt = np.sin(phi) * np.sin(delta) + np.cos(phi) * np.cos(delta) * np.cos(ha)
    return np.degrees(np.arcsin(np.clip(sin_alt, -1.0, 1.0)))


def is_day(unix_s, lat: float, lon: float) -> np.ndarray:
    """True while the sun's upper limb is above the horizon (refraction included)."""
    return altitude(unix_s, lat, lon) > HORIZON_DEG


def solar_noon(near_s, lon: float) -> np.ndarray:
    """The solar noon nearest each given time (Unix seconds, float)."""
    noon = np.asarray(near_s, dtype=np.float64)
    for _ in range(2):
        _, eq_time = position_fast(noon)
        noon = noon - hour_angle(noon, lon, eq_time) * SECONDS_PER_HA_DEG
    return noon


def _event_hour_angle(declination, lat: float) -> np.ndarray:
    """Hour angle (degrees) of the sun at HORIZON_DEG; NaN in polar day or night."""
    phi, delta = np.radians(lat), np.radians(declination)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos_ha = (np.sin(np.radians(HORIZON_DEG)) - np.sin(phi) * np.sin(delta)) / (
            np.cos(phi) * np.cos(delta))
    return np.degrees(np.arccos(np.where(np.abs(cos_ha) <= 1.0, cos_ha, np.nan)))


def rise_set(noon_s, lat: float, lon: float) -> tuple[np.ndarray, np.ndarray]:
    """Sunrise and sunset around each solar noon (Unix seconds, float; NaN on days of polar
    night or midnight sun). Declination and equation of time are re-evaluated at each event
    (NOAA's single noon evaluation is off by up to half a minute)."""
    noon = np.asarray(noon_s, dtype=np.float64)
    n = noon.size
    noon2 = np.concatenate([noon.ravel(), noon.ravel()])
    sign = np.repeat([-1.0, 1.0], n)
    declination, eq_noon = position_fast(noon2)
    event = noon2 + sign * _event_hour_angle(declination, lat) * SECONDS_PER_HA_DEG
    for _ in range(ITERATIONS):
        known = np.where(event == event, event, noon2)
        decl_e, eq_e = position_fast(known)
        event = (noon2 + (eq_noon - eq_e) * 60.0
                 + sign * _event_hour_angle(decl_e, lat) * SECONDS_PER_HA_DEG)
    return event[:n].reshape(noon.shape), event[n:].reshape(noon.shape)
