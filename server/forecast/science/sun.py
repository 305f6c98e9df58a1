"""The sun: NOAA's solar position (Meeus), solar noon, sunrise and sunset, whether it is day.

Times are Unix seconds, angles degrees, longitude east positive. Every function takes numpy
arrays or scalars alike; they are compiled with numba (cache=True), because a forecast
response evaluates them in loops of a few values, where numpy's per-call cost dominates.
NaN propagates: the event of a polar day or night is NaN.
"""

from __future__ import annotations

import numpy as np
from numba import njit

HORIZON_DEG = -0.8333  # 34' refraction plus 16' solar radius
SECONDS_PER_HA_DEG = 240.0  # the hour angle turns 15 degrees an hour
ITERATIONS = 2  # re-evaluations at the event time (each within ~1 s after 2)


@njit(cache=True)
def position(unix_s):
    """(declination in degrees, equation of time in minutes) at the given times."""
    jc = (unix_s / 86400.0 + 2440587.5 - 2451545.0) / 36525.0
    l0 = np.radians((280.46646 + jc * (36000.76983 + jc * 0.0003032)) % 360.0)
    m = np.radians(357.52911 + jc * (35999.05029 - 0.0001537 * jc))
    e = 0.016708634 - jc * (0.000042037 + 0.0000001267 * jc)
    centre = (
        np.sin(m) * (1.914602 - jc * (0.004817 + 0.000014 * jc))
        + np.sin(2 * m) * (0.019993 - 0.000101 * jc)
        + np.sin(3 * m) * 0.000289
    )
    omega = np.radians(125.04 - 1934.136 * jc)
    apparent = np.radians(np.degrees(l0) + centre - 0.00569 - 0.00478 * np.sin(omega))
    obliquity = np.radians(
        23.0
        + (26.0 + (21.448 - jc * (46.815 + jc * (0.00059 - jc * 0.001813))) / 60.0) / 60.0
        + 0.00256 * np.cos(omega)
    )
    declination = np.degrees(np.arcsin(np.sin(obliquity) * np.sin(apparent)))
    y = np.tan(obliquity / 2) ** 2
    eq_time = 4.0 * np.degrees(
        y * np.sin(2 * l0)
        - 2 * e * np.sin(m)
        + 4 * e * y * np.sin(m) * np.cos(2 * l0)
        - 0.5 * y * y * np.sin(4 * l0)
        - 1.25 * e * e * np.sin(2 * m)
    )
    return declination, eq_time


@njit(cache=True)
def hour_angle(unix_s, lon, eq_time_min):
    """The sun's hour angle in degrees, in [-180, 180) (0 at solar noon)."""
    true_solar = (unix_s % 86400.0) / 60.0 + eq_time_min + 4.0 * lon
    return ((true_solar / 4.0) % 360.0) - 180.0


@njit(cache=True)
def altitude(unix_s, lat, lon):
    """The sun's altitude above the horizon in degrees (no refraction)."""
    declination, eq_time = position(unix_s)
    return altitude_at(unix_s, lat, lon, declination, eq_time)


@njit(cache=True)
def altitude_at(unix_s, lat, lon, declination, eq_time):
    """altitude() given the sun's position at that time (which depends on the time alone)."""
    ha = np.radians(hour_angle(unix_s, lon, eq_time))
    phi, delta = np.radians(lat), np.radians(declination)
    sin_alt = np.sin(phi) * np.sin(delta) + np.cos(phi) * np.cos(delta) * np.cos(ha)
    return np.degrees(np.arcsin(np.minimum(np.maximum(sin_alt, -1.0), 1.0)))


@njit(cache=True)
def is_day(unix_s, lat, lon):
    """True while the sun's upper limb is above the horizon (refraction included)."""
    return altitude(unix_s, lat, lon) > HORIZON_DEG


@njit(cache=True)
def solar_noon(near_s, lon):
    """The solar noon nearest each given time."""
    noon = near_s + 0.0
    for _ in range(2):
        _, eq_time = position(noon)
        noon = noon - hour_angle(noon, lon, eq_time) * SECONDS_PER_HA_DEG
    return noon


@njit(cache=True)
def event_hour_angle(declination, lat):
    """Hour angle (degrees) of the sun at HORIZON_DEG; NaN in polar day or night
    (|cos| > 1)."""
    phi, delta = np.radians(lat), np.radians(declination)
    cos_ha = (np.sin(np.radians(HORIZON_DEG)) - np.sin(phi) * np.sin(delta)) / (
        np.cos(phi) * np.cos(delta)
    )
    return np.degrees(np.arccos(cos_ha))


@njit(cache=True)
def rise_set(noon_s, lat, lon):
    """Sunrise and sunset around each solar noon (NaN on days of polar night or midnight
    sun). Declination and equation of time are re-evaluated at each event, since one
    evaluation at noon is off by up to half a minute."""
    declination, eq_noon = position(noon_s)
    rise = noon_s - event_hour_angle(declination, lat) * SECONDS_PER_HA_DEG
    set_ = noon_s + event_hour_angle(declination, lat) * SECONDS_PER_HA_DEG
    for _ in range(ITERATIONS):
        declination, eq_time = position(rise)
        rise = (
            noon_s
            + (eq_noon - eq_time) * 60.0
            - event_hour_angle(declination, lat) * SECONDS_PER_HA_DEG
        )
        declination, eq_time = position(set_)
        set_ = (
            noon_s
            + (eq_noon - eq_time) * 60.0
            + event_hour_angle(declination, lat) * SECONDS_PER_HA_DEG
        )
    return rise, set_
