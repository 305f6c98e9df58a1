"""Derived weather quantities (docs/api/forecast.md#derived-quantities); SI units in and out.
Plain arithmetic and numpy ufuncs only, so the same functions serve numpy arrays, scalars, and
the forecast's compiled kernels (server/forecast/kernels.py)."""

from __future__ import annotations

import numpy as np

from contract import Forecast as F

MAGNUS_A, MAGNUS_B_C = F.MAGNUS_A, F.MAGNUS_B_C


def relative_humidity(temperature_c, dewpoint_c):
    """Relative humidity 0-1 from temperature and dewpoint (Magnus form)."""
    return np.minimum(
        np.exp(
            MAGNUS_A * dewpoint_c / (MAGNUS_B_C + dewpoint_c)
            - MAGNUS_A * temperature_c / (MAGNUS_B_C + temperature_c)
        ),
        1.0,
    )


def apparent_temperature_c(temperature_c, humidity, wind_ms):
    """Bureau of Meteorology apparent temperature (Steadman 1994), humidity 0-1."""
    vapour_hpa = humidity * 6.105 * np.exp(17.27 * temperature_c / (237.7 + temperature_c))
    return temperature_c + 0.33 * vapour_hpa - 0.70 * wind_ms - 4.00


def wind_speed_ms(u, v):
    """Wind speed from its components."""
    return np.hypot(u, v)


def wind_direction_deg(u, v):
    """Direction the wind comes from, degrees clockwise from north, [0, 360)."""
    return np.degrees(np.arctan2(-u, -v)) % 360.0
