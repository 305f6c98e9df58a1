"""Derived weather quantities (science.md §5), vectorised; SI units in and out."""

from __future__ import annotations

import numpy as np

from contract import Forecast as F


def relative_humidity(temperature_c, dewpoint_c) -> np.ndarray:
    """Relative humidity 0-1 from temperature and dewpoint (Magnus form)."""
    a, b = F.MAGNUS_A, F.MAGNUS_B_C
    return np.clip(np.exp(a * dewpoint_c / (b + dewpoint_c) - a * temperature_c
                          / (b + temperature_c)), 0.0, 1.0)


def apparent_temperature_c(temperature_c, humidity, wind_ms) -> np.ndarray:
    """Bureau of Meteorology apparent temperature (Steadman 1994), humidity 0-1."""
    vapour_hpa = humidity * 6.105 * np.exp(17.27 * temperature_c / (237.7 + temperature_c))
    return temperature_c + 0.33 * vapour_hpa - 0.70 * wind_ms - 4.00


def wind_speed_ms(u, v) -> np.ndarray:
    """Wind speed from its components."""
    return np.hypot(u, v)


def wind_direction_deg(u, v) -> np.ndarray:
    """Direction the wind comes from, degrees clockwise from north, [0, 360)."""
    return np.degrees(np.arctan2(-u, -v)) % 360.0
