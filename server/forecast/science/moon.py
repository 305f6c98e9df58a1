"""The moon's phase as the lunation fraction (elongation from the sun / 360°), Meeus ch. 47.

Takes numpy arrays or scalars; compiled with numba (cache=True) like server.forecast.science.sun."""

from __future__ import annotations

import numpy as np
from numba import njit

# Periodic terms of the moon's longitude (Meeus table 47.A, largest 24): multiples of
# D, M, M', F and the coefficient in 1e-6 degrees.
LONGITUDE_TERMS = np.array(
    [
        (0, 0, 1, 0, 6288774),
        (2, 0, -1, 0, 1274027),
        (2, 0, 0, 0, 658314),
        (0, 0, 2, 0, 213618),
        (0, 1, 0, 0, -185116),
        (0, 0, 0, 2, -114332),
        (2, 0, -2, 0, 58793),
        (2, -1, -1, 0, 57066),
        (2, 0, 1, 0, 53322),
        (2, -1, 0, 0, 45758),
        (0, 1, -1, 0, -40923),
        (1, 0, 0, 0, -34720),
        (0, 1, 1, 0, -30383),
        (2, 0, 0, -2, 15327),
        (0, 0, 1, 2, -12528),
        (0, 0, 1, -2, 10980),
        (4, 0, -1, 0, 10675),
        (0, 0, 3, 0, 10034),
        (4, 0, -2, 0, 8548),
        (2, 1, -1, 0, -7888),
        (2, 1, 0, 0, -6766),
        (1, 0, -1, 0, -5163),
        (1, 1, 0, 0, 4987),
        (2, -1, 1, 0, 4036),
    ],
    dtype=np.float64,
)


@njit(cache=True)
def phase(unix_s):
    """Lunation fraction at the given times: 0 new, 0.25 first quarter, 0.5 full, 0.75 last."""
    t = (unix_s / 86400.0 + 2440587.5 - 2451545.0) / 36525.0
    d = np.radians(297.8501921 + 445267.1114034 * t - 0.0018819 * t * t)
    m = np.radians(357.5291092 + 35999.0502909 * t - 0.0001536 * t * t)
    mp = np.radians(134.9633964 + 477198.8675055 * t + 0.0087414 * t * t)
    f = np.radians(93.2720950 + 483202.0175233 * t - 0.0036539 * t * t)
    e = 1.0 - 0.002516 * t - 0.0000074 * t * t
    moon = 218.3164477 + 481267.88123421 * t - 0.0015786 * t * t
    for k in range(LONGITUDE_TERMS.shape[0]):
        row = LONGITUDE_TERMS[k]
        term = row[4] * 1e-6 * np.sin(row[0] * d + row[1] * m + row[2] * mp + row[3] * f)
        moon = moon + (term * e if row[1] != 0 else term)
    # The sun's geometric longitude (the aberration and nutation terms largely cancel).
    l0 = 280.46646 + 36000.76983 * t + 0.0003032 * t * t
    centre = (
        np.sin(m) * (1.914602 - t * (0.004817 + 0.000014 * t))
        + np.sin(2 * m) * (0.019993 - 0.000101 * t)
        + np.sin(3 * m) * 0.000289
    )
    return ((moon - (l0 + centre)) % 360.0) / 360.0
