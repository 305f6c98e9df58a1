"""Precipitation phase, probability and moisture, vectorised over (time, lat, lon) arrays."""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from contract import Forecast as F

# ECMWF precipitation type codes (GRIB code table 4.201) -> (snow share, sleet share).
PTYPE_SHARES = {
    0: (np.nan, np.nan),  # no precipitation: the phase is left to the temperature
    1: (0.0, 0.0),  # rain
    3: (0.0, 1.0),  # freezing rain
    5: (1.0, 0.0),  # snow
    6: (1.0, 0.0),  # wet snow
    7: (0.5, 0.0),  # mixture of rain and snow
    8: (0.0, 1.0),  # ice pellets
    12: (0.0, 1.0),  # freezing drizzle
}
# Without a categorical type: all snow at or below SNOW_ALL_C, all rain at or above RAIN_ALL_C.
SNOW_ALL_C, RAIN_ALL_C = -1.5, 1.5
# Neighbourhood of the precipitation probability: about this radius, and one hour either side.
NEIGHBOURHOOD_KM = 25.0
KM_PER_DEGREE = 111.2


def shares_from_flags(
    rain: np.ndarray, snow: np.ndarray, freezing: np.ndarray, pellets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(snow share, sleet share) from GFS categorical flags (0/1, or fractions after time
    averaging); NaN where no flag is set."""
    sleet = np.maximum(freezing, pellets)
    total = rain + snow + sleet
    with np.errstate(invalid="ignore", divide="ignore"):
        snow_share = np.where(total > 0, snow / total, np.nan)
        sleet_share = np.where(total > 0, sleet / total, np.nan)
    return snow_share.astype(np.float32), sleet_share.astype(np.float32)


def shares_from_ptype(ptype: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(snow share, sleet share) from ECMWF ptype codes; NaN for none and unknown codes."""
    codes = np.rint(np.nan_to_num(ptype, nan=-1)).astype(np.int32)
    snow = np.full(codes.shape, np.nan, dtype=np.float32)
    sleet = np.full(codes.shape, np.nan, dtype=np.float32)
    for code, (s, f) in PTYPE_SHARES.items():
        hit = codes == code
        snow[hit], sleet[hit] = s, f
    return snow, sleet


def fill_shares_by_temperature(
    snow: np.ndarray, sleet: np.ndarray, temperature_c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where the model gave no phase, snow by temperature (linear between the thresholds)."""
    by_temperature = np.clip((RAIN_ALL_C - temperature_c) / (RAIN_ALL_C - SNOW_ALL_C), 0, 1)
    missing = np.isnan(snow) | np.isnan(sleet)
    snow = np.where(missing, by_temperature, snow).astype(np.float32)
    sleet = np.where(missing, 0.0, sleet).astype(np.float32)
    return snow, sleet


def neighbourhood_cells(dlat_deg: float) -> int:
    """Half-width in cells of the probability neighbourhood on a grid of this spacing."""
    return int(round(NEIGHBOURHOOD_KM / (abs(dlat_deg) * KM_PER_DEGREE)))


def probability(rate_mmh: np.ndarray, half_cells: int, wraps: bool) -> np.ndarray:
    """Neighbourhood probability of precipitation: the share of cells within half_cells and
    of hours within one hour (a deterministic model's spatial and timing uncertainty) whose
    rate reaches contract.Forecast.PROBABILITY_THRESHOLD_MMH. Axes: (time, lat, lon)."""
    wet = (np.nan_to_num(rate_mmh, nan=0.0) >= F.PROBABILITY_THRESHOLD_MMH).astype(np.float32)
    size = (3, 2 * half_cells + 1, 2 * half_cells + 1)
    out = ndimage.uniform_filter(
        wet, size=size, mode=("nearest", "nearest", "wrap" if wraps else "nearest")
    )
    out = np.clip(out, 0.0, 1.0)
    out[np.isnan(rate_mmh)] = np.nan
    return out


def dewpoint_c(temperature_c: np.ndarray, humidity_pct: np.ndarray) -> np.ndarray:
    """Dewpoint from temperature and relative humidity (Magnus form, inverse of the
    server's humidity)."""
    a, b = F.MAGNUS_A, F.MAGNUS_B_C
    rh = np.clip(humidity_pct, 0.1, 100.0) / 100.0
    gamma = np.log(rh) + a * temperature_c / (b + temperature_c)
    return (b * gamma / (a - gamma)).astype(np.float32)
