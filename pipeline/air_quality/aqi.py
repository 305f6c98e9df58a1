"""US AQI (EPA, 2024 PM2.5 revision) and European AQI (EEA 2024 bands) from µg/m³ concentrations.

Both indices are tables (docs/api/air-quality.md#indices) compiled into piecewise-linear
inputs: the concentration in µg/m³ times `scale` (to ppm or ppb where the EPA table uses them),
truncated to the table's decimals (EPA only), mapped through (x, y). The index is the largest
sub-index, capped at 500 and rounded half up to an integer. The manifest publishes the tables,
and the server evaluates them at a point on the concentrations it serves (the grids store no
index); the vectorised evaluation here is the reference its tests compare with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from contract import AirQuality as AQ

# ppb = µg/m³ * 24.45 / MW at 25 °C and 1 atm (docs/api/air-quality.md#us-aqi); g/mol.
MOLAR_VOLUME_L = 24.45
MW_G_MOL = {"o3": 47.997, "no2": 46.0055, "so2": 64.066, "co": 28.010}


def ppb_per_ugm3(gas: str) -> float:
    """Mixing ratio in ppb per µg/m³ of a gas at 25 °C."""
    return MOLAR_VOLUME_L / MW_G_MOL[gas]


@dataclass(frozen=True)
class Piecewise:
    """One input of an index: a concentration column through a piecewise-linear table."""

    variable: str  # grid variable (µg/m³)
    scale: float  # table units per µg/m³
    decimals: int | None  # truncate to this many decimals first (None: no truncation)
    x: tuple[float, ...]  # breakpoints in table units, strictly ascending
    y: tuple[float, ...]  # index at each breakpoint
    below: float | None  # index below x[0]; None: this input gives no index there
    above: float | None  # index above x[-1]; None: no index there
    required: bool = True  # an unknown concentration makes the index unknown
    # Counts only where the index's input reading this variable is above its table (SO2: the
    # 24-hour mean only where the 1-hour value is in the range 1-hour SO2 defines no AQI).
    only_above: str | None = None


def _epa(
    variable: str,
    scale: float,
    decimals: int,
    segments,
    below: float | None = 0.0,
    above: float | None = AQ.INDEX_CAP,
    required: bool = True,
    only_above: str | None = None,
) -> Piecewise:
    """An EPA table given as (C_lo, C_hi, I_lo, I_hi) rows."""
    # After truncation no concentration falls between one row's C_hi and the next row's C_lo
    # (they are one truncation step apart), so linear interpolation through every row's end
    # points is exactly the EPA formula on each row.
    x = tuple(c for lo, hi, _, _ in segments for c in (lo, hi))
    y = tuple(float(i) for _, _, lo, hi in segments for i in (lo, hi))
    return Piecewise(variable, scale, decimals, x, y, below, above, required, only_above)


PPM_O3, PPM_CO = ppb_per_ugm3("o3") / 1000, ppb_per_ugm3("co") / 1000
PPB_SO2, PPB_NO2 = ppb_per_ugm3("so2"), ppb_per_ugm3("no2")

# docs/api/air-quality.md#us-aqi, rows (C_lo, C_hi, I_lo, I_hi). Window means end with the
# hour itself.
US_AQI = (
    _epa(
        "pm25_24h_ugm3",
        1.0,
        1,
        [
            (0.0, 9.0, 0, 50),
            (9.1, 35.4, 51, 100),
            (35.5, 55.4, 101, 150),
            (55.5, 125.4, 151, 200),
            (125.5, 225.4, 201, 300),
            (225.5, 325.4, 301, 500),
        ],
    ),
    _epa(
        "pm10_24h_ugm3",
        1.0,
        0,
        [
            (0, 54, 0, 50),
            (55, 154, 51, 100),
            (155, 254, 101, 150),
            (255, 354, 151, 200),
            (355, 424, 201, 300),
            (425, 504, 301, 400),
            (505, 604, 401, 500),
        ],
    ),
    # 8-hour O3 defines no AQI above 300: above its table it counts as 300 (at least), and the
    # 1-hour O3 (defined from 101 up) gives the higher values.
    _epa(
        "o3_8h_ugm3",
        PPM_O3,
        3,
        [
            (0.000, 0.054, 0, 50),
            (0.055, 0.070, 51, 100),
            (0.071, 0.085, 101, 150),
            (0.086, 0.105, 151, 200),
            (0.106, 0.200, 201, 300),
        ],
        above=300.0,
    ),
    _epa(
        "o3_ugm3",
        PPM_O3,
        3,
        [
            (0.125, 0.164, 101, 150),
            (0.165, 0.204, 151, 200),
            (0.205, 0.404, 201, 300),
            (0.405, 0.504, 301, 400),
            (0.505, 0.604, 401, 500),
        ],
        below=None,
        required=False,
    ),
    _epa(
        "co_8h_ugm3",
        PPM_CO,
        1,
        [
            (0.0, 4.4, 0, 50),
            (4.5, 9.4, 51, 100),
            (9.5, 12.4, 101, 150),
            (12.5, 15.4, 151, 200),
            (15.5, 30.4, 201, 300),
            (30.5, 40.4, 301, 400),
            (40.5, 50.4, 401, 500),
        ],
    ),
    # 1-hour SO2 defines no AQI from 200 up: below 305 ppb (truncated) the 1-hour sub-index
    # applies alone; from 305 ppb it counts as 200 (at least) and the 24-hour mean (defined
    # from 305 ppb, AQI 201) gives the higher values. A 24-hour mean of 305 ppb or more with
    # a 1-hour value below 305 ppb does not count.
    _epa(
        "so2_ugm3",
        PPB_SO2,
        0,
        [(0, 35, 0, 50), (36, 75, 51, 100), (76, 185, 101, 150), (186, 304, 151, 200)],
        above=200.0,
    ),
    _epa(
        "so2_24h_ugm3",
        PPB_SO2,
        0,
        [(305, 604, 201, 300), (605, 804, 301, 400), (805, 1004, 401, 500)],
        below=None,
        required=False,
        only_above="so2_ugm3",
    ),
    _epa(
        "no2_ugm3",
        PPB_NO2,
        0,
        [
            (0, 53, 0, 50),
            (54, 100, 51, 100),
            (101, 360, 101, 150),
            (361, 649, 151, 200),
            (650, 1249, 201, 300),
            (1250, 1649, 301, 400),
            (1650, 2049, 401, 500),
        ],
    ),
)

# docs/api/air-quality.md#european-aqi: upper limits (µg/m³) of good, fair, moderate, poor,
# very poor; hourly values.
EEA_LIMITS_UGM3 = {
    "pm25_ugm3": (5, 15, 50, 90, 140),
    "pm10_ugm3": (15, 45, 120, 195, 270),
    "no2_ugm3": (10, 25, 60, 100, 150),
    "o3_ugm3": (60, 100, 120, 160, 180),
    "so2_ugm3": (20, 40, 125, 190, 275),
}
EEA_POINTS_PER_BAND = 20.0


def _eea(variable: str, limits: tuple[float, ...]) -> Piecewise:
    """0 at 0, 20 points a band up to 100, then the very-poor slope to the cap."""
    # One more breakpoint where the line reaches 500.
    x = (0.0, *map(float, limits))
    y = tuple(EEA_POINTS_PER_BAND * i for i in range(len(x)))
    slope = EEA_POINTS_PER_BAND / (x[-1] - x[-2])
    x_cap = x[-1] + (AQ.INDEX_CAP - y[-1]) / slope
    return Piecewise(variable, 1.0, None, x + (x_cap,), y + (AQ.INDEX_CAP,), 0.0, AQ.INDEX_CAP)


EUROPEAN_AQI = tuple(_eea(v, limits) for v, limits in EEA_LIMITS_UGM3.items())
INDICES = {"european_aqi": EUROPEAN_AQI, "us_aqi": US_AQI}


def truncate(values: np.ndarray, decimals: int) -> np.ndarray:
    """Cut to `decimals` (never round up), tolerant of float32 storage error."""
    factor = 10.0**decimals
    return np.floor(values * factor + AQ.TRUNCATION_SLACK) / factor


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Round to integers, halves up (NaN stays NaN)."""
    return np.floor(values + 0.5 + AQ.HALF_UP_SLACK)


def table_value(table: Piecewise, conc_ugm3: np.ndarray) -> np.ndarray:
    """The concentration in the table's units, truncated as the table says."""
    value = np.asarray(conc_ugm3, dtype=np.float64) * table.scale
    return value if table.decimals is None else truncate(value, table.decimals)


def above_table(table: Piecewise, conc_ugm3: np.ndarray) -> np.ndarray:
    """Where the concentration lies above the table's last breakpoint (False where unknown)."""
    return table_value(table, conc_ugm3) > table.x[-1]


def sub_index(table: Piecewise, conc_ugm3: np.ndarray) -> np.ndarray:
    """The unrounded sub-index of one input (NaN where unknown or outside its table)."""
    value = table_value(table, conc_ugm3)
    nan = float("nan")
    return np.interp(
        value,
        table.x,
        table.y,
        left=nan if table.below is None else table.below,
        right=nan if table.above is None else table.above,
    )


def index(tables: tuple[Piecewise, ...], columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """The integer-valued index (as float, NaN when unknown) from concentration columns."""
    best = None
    unknown = None
    above = {}
    for table in tables:
        conc = np.asarray(columns[table.variable], dtype=np.float64)
        above[table.variable] = above_table(table, conc)
        part = sub_index(table, conc)
        if table.only_above is not None:
            part = np.where(above[table.only_above], part, np.nan)
        best = part if best is None else np.fmax(best, part)
        if table.required:
            missing = np.isnan(conc)
            unknown = missing if unknown is None else unknown | missing
    out = round_half_up(np.minimum(best, AQ.INDEX_CAP))
    out[unknown] = np.nan
    return out


def known(tables: tuple[Piecewise, ...], columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Where every required input of the index is known (there the index is known)."""
    return np.logical_and.reduce([~np.isnan(columns[t.variable]) for t in tables if t.required])


def us_aqi(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """US AQI from the hourly and window-mean concentrations (µg/m³)."""
    return index(US_AQI, columns)


def european_aqi(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """European AQI from hourly concentrations (µg/m³)."""
    return index(EUROPEAN_AQI, columns)


def manifest_tables() -> dict:
    """The compiled tables as the manifest publishes them (contract.AirQuality.AQI_TABLES)."""
    return {
        name: [asdict(t) | {"x": list(t.x), "y": list(t.y)} for t in tables]
        for name, tables in (("us", US_AQI), ("eu", EUROPEAN_AQI))
    }
