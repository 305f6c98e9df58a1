"""CAMS global atmospheric composition forecasts (ADS `cams-global-atmospheric-composition-
forecasts`, NetCDF as the Atmosphere Data Store converts it).

Runs at 00 and 12 UTC, lead times 0-120 h (the ADS serves surface fields hourly, model-level
fields 3-hourly; each field keeps its own lead hours), 0.4° grid (900 x 451), longitudes
0-360, latitudes descending. Dimensions `forecast_period` (hours) and
`forecast_reference_time` (in any order, a file may hold several runs) with a `valid_time`
coordinate. A surface file holds pm2p5 and pm10 (kg/m³) and duaod550 (dust aerosol optical
depth at 550 nm); a model-level file holds go3, no2, so2 and co (kg/kg mass mixing ratios) on
`model_level`, of which the lowest, 137, is read. Files may also come zipped together.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.common.io import InputError
from pipeline.air_quality.sources import cams
from pipeline.air_quality.sources.cams import Field, Run

DOMAIN = "global"
FOLDER = Path("cams") / "global"
LOWEST_MODEL_LEVEL = 137
# kg/kg -> kg/m³ near the surface (docs/data/air-quality.md#units-conversion)
AIR_DENSITY_KG_M3 = 1.223803
KG_TO_UG = 1e9
# NetCDF variable -> (area variable, factor to the area's units, units kind)
VARIABLES = {
    "pm2p5": ("pm25_ugm3", KG_TO_UG, "kg"),
    "pm10": ("pm10_ugm3", KG_TO_UG, "kg"),
    "go3": ("o3_ugm3", AIR_DENSITY_KG_M3 * KG_TO_UG, "kg"),
    "no2": ("no2_ugm3", AIR_DENSITY_KG_M3 * KG_TO_UG, "kg"),
    "so2": ("so2_ugm3", AIR_DENSITY_KG_M3 * KG_TO_UG, "kg"),
    "co": ("co_ugm3", AIR_DENSITY_KG_M3 * KG_TO_UG, "kg"),
    "duaod550": ("dust_aod", 1.0, None),
}
REQUIRED = tuple(v[0] for v in VARIABLES.values())
PERIOD, REFERENCE = "forecast_period", "forecast_reference_time"


def present(datasets: Path) -> bool:
    """True when real CAMS global inputs are given."""
    return (datasets / FOLDER).is_dir()


def scan(folder: Path, scratch: Path, decode_timedelta: bool | None = None) -> list[Run]:
    """Every run found in the folder's files, newest first, all on one grid."""
    return cams.scan(folder, scratch, _add_file, REQUIRED, decode_timedelta)


def _add_file(ds: xr.Dataset, path: Path, runs: dict[int, Run]) -> None:
    names = cams.known_variables(ds, VARIABLES, "CAMS global", path)
    for coord in (PERIOD, REFERENCE):
        if coord not in ds.variables or ds[coord].ndim != 1:
            raise InputError(path, f"needs a 1-D {coord} coordinate")
    hours = cams.lead_hours(ds[PERIOD].values, path, PERIOD)
    references = np.asarray(ds[REFERENCE].values)
    if not np.issubdtype(references.dtype, np.datetime64):
        raise InputError(path, f"{REFERENCE} is not a date and time")
    _check_valid_time(ds, references, hours, path)
    axes = cams.axes(ds, path)
    for k, reference in enumerate(references):
        run = cams.run_of(runs, DOMAIN, cams.unix_seconds(reference), axes, path)
        for name in names:
            run.add(VARIABLES[name][0], _field(ds, name, k, hours, path))


def _field(ds: xr.Dataset, name: str, run_index: int, hours: np.ndarray, path: Path) -> Field:
    area_name, factor, units = VARIABLES[name]
    select = {REFERENCE: run_index}
    expected = {PERIOD, REFERENCE, "latitude", "longitude"}
    if "model_level" in ds[name].dims:
        select |= cams.level_selection(ds, name, "model_level", LOWEST_MODEL_LEVEL, path)
        expected.add("model_level")
    cams.check_dims(ds, name, expected, path)
    if units:
        cams.check_units(ds, name, units, path)
    return Field(path, name, select, PERIOD, hours, factor)


def _check_valid_time(ds: xr.Dataset, references: np.ndarray, hours: np.ndarray,
                      path: Path) -> None:
    """valid_time, when present, must equal reference time plus lead time."""
    if "valid_time" not in ds.variables:
        return
    if set(ds["valid_time"].dims) != {REFERENCE, PERIOD}:
        raise InputError(path, f"valid_time must have dimensions {REFERENCE} and {PERIOD}")
    valid = ds["valid_time"].transpose(REFERENCE, PERIOD).values
    expected = references[:, None] + hours[None, :].astype("timedelta64[h]")
    if not np.array_equal(valid.astype("datetime64[s]"), expected.astype("datetime64[s]")):
        raise InputError(path, "valid_time is not forecast_reference_time + forecast_period")
