"""A point's series: bilinear model values in, derived SI quantities and conditions out.

Every derived quantity is a row of one float64 matrix (rows named below), converted per unit
system by a factor and an offset and rounded to DIGITS decimals when written; the derivation
and classification themselves run in kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from server.forecast import kernels
from server.forecast.kernels import (  # the rows' indices: the kernels' own
    APPARENT,
    CLOUD,
    DEWPOINT,
    DIRECTION,
    GUST,
    HUMIDITY,
    PRESSURE,
    PROBABILITY,
    RATE,
    SLEET,
    SNOW,
    TEMPERATURE,
    VISIBILITY,
    WIND,
    U,
    V,
)
from server.forecast.science.units import UnitSystem

ROWS = (
    "temperature",
    "apparent",
    "dewpoint",
    "humidity",
    "pressure",
    "wind",
    "gust",
    "direction",
    "cloud",
    "visibility_km",
    "rate",
    "probability",
    "u",
    "v",
    "snow_frac",
    "sleet_frac",
)
assert len(ROWS) == kernels.NROWS  # a name for each of the kernels' rows, in their order
# What each row is, for unit conversion: temperature, speed, precipitation, visibility.
QUANTITY = {
    TEMPERATURE: "t",
    APPARENT: "t",
    DEWPOINT: "t",
    WIND: "s",
    GUST: "s",
    RATE: "p",
    VISIBILITY: "v",
}
DIGITS = {
    TEMPERATURE: 2,
    APPARENT: 2,
    DEWPOINT: 2,
    HUMIDITY: 2,
    PRESSURE: 1,
    WIND: 2,
    GUST: 2,
    DIRECTION: 0,
    CLOUD: 2,
    VISIBILITY: 2,
    RATE: 4,
    PROBABILITY: 2,
    U: 2,
    V: 2,
    SNOW: 2,
    SLEET: 2,
}


@dataclass
class Series:
    """Derived rows (len(ROWS), n), the condition parts (8, n) of each instant (see
    text.RADIX), their codes and icon indexes (into text.ICON_CODES)."""

    rows: np.ndarray
    parts: np.ndarray
    codes: np.ndarray
    icons: np.ndarray

    def __getitem__(self, row: int) -> np.ndarray:
        return self.rows[row]

    @property
    def kind(self) -> np.ndarray:
        """0 none, 1 rain, 2 snow, 3 sleet."""
        return self.parts[kernels.KIND]


def input_columns(column: dict[str, int]) -> np.ndarray:
    """The grid column of each of kernels.INPUTS (-1 when absent)."""
    return np.array([column.get(name, -1) for name in kernels.INPUTS], dtype=np.int64)


def derive(values: np.ndarray, inputs: np.ndarray, lift_c: float) -> Series:
    """Quantities at the point from the bilinear values (n, nvar); `lift_c` is the elevation
    correction added to temperature and dewpoint (their spread kept, the humidity nearly)."""
    n = values.shape[0]
    rows, parts = np.empty((len(ROWS), n)), np.empty((8, n), dtype=np.int64)
    codes, icons = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    kernels.point_series(
        np.ascontiguousarray(values), inputs, float(lift_c), rows, parts, codes, icons, 0, n, -1
    )
    return Series(rows=rows, parts=parts, codes=codes, icons=icons)


# Largest value shown, in SI, by whether the system shows miles (visibility: 16 km, 10 mi).
CAP_KM, CAP_MI = 16.0, 10.0 / 0.6213712


@dataclass(frozen=True, eq=False)
class Conversion:
    """Per-row factor, offset and cap (largest SI value shown) of one unit system, as a
    (3, len(ROWS)) matrix (the rounding of each row is DIGITS)."""

    matrix: np.ndarray


_CONVERSIONS: dict[str, Conversion] = {}


def conversion(units: UnitSystem) -> Conversion:
    """The row conversions of a unit system (built on first use)."""
    cached = _CONVERSIONS.get(units.name)
    if cached is None:
        factor, offset = np.ones(len(ROWS)), np.zeros(len(ROWS))
        cap = np.full(len(ROWS), np.inf)
        cap[VISIBILITY] = CAP_MI if units.visibility != 1.0 else CAP_KM
        for row, quantity in QUANTITY.items():
            if quantity == "t" and units.fahrenheit:
                factor[row], offset[row] = 1.8, 32.0
            elif quantity != "t":
                factor[row] = {"s": units.speed, "p": units.precipitation, "v": units.visibility}[
                    quantity
                ]
        cached = _CONVERSIONS[units.name] = Conversion(np.vstack([factor, offset, cap]))
    return cached
