"""CAMS global atmospheric composition forecasts (ADS `cams-global-atmospheric-composition-
forecasts`, NetCDF as the Atmosphere Data Store converts it).

Runs at 00 and 12 UTC, lead times 0-120 h (the ADS serves surface fields hourly, model-level
fields 3-hourly; each field keeps its own lead hours), 0.4° grid (900 x 451), longitudes
0-360, latitudes descending. Dimensions `forecast_period` (hours) and
`forecast_reference_time` (in any order, a file may hold several runs) with a `valid_time`
coordinate. A surface file holds pm2p5 and pm10 (kg/m³) and duaod550 (dust aerosol optical
depth at 550 nm); a model-level file holds go3, no2, so2 and co (kg/kg mass mixing ratios) on
`model_level`, of which the lowest, 137, is read. Files may also come zipped together.

Fetching (SOURCE, `python -m pipeline fetch cams-global`): the 00 UTC runs of D-1 and D, each
two requests, since the ADS serves the two kinds of field at different steps: the surface
fields at lead hours 0-120 hourly, model level 137 at 0-120 by 3 h. Both parts of a run land
together, after both are checked. Only the 00 UTC run is fetched: the 12 UTC run would double
the volume (some 0.9 GB a run at 0.4°) for a forecast 12 hours fresher.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.air_quality.sources import cams, cams_fetch
from pipeline.air_quality.sources.cams import Field, Run
from pipeline.air_quality.sources.cams_fetch import DAY_S, Part, Unit
from pipeline.common.io import InputError

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


def collect(folder: Path, scratch: Path) -> list[Run]:
    """Every run in the folder's files, none required (the fetch checks a delivery)."""
    return list(cams.collect(folder, scratch, _add_file).values())


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


def _check_valid_time(
    ds: xr.Dataset, references: np.ndarray, hours: np.ndarray, path: Path
) -> None:
    """valid_time, when present, must equal reference time plus lead time."""
    if "valid_time" not in ds.variables:
        return
    if set(ds["valid_time"].dims) != {REFERENCE, PERIOD}:
        raise InputError(path, f"valid_time must have dimensions {REFERENCE} and {PERIOD}")
    valid = ds["valid_time"].transpose(REFERENCE, PERIOD).values
    expected = references[:, None] + hours[None, :].astype("timedelta64[h]")
    if not np.array_equal(valid.astype("datetime64[s]"), expected.astype("datetime64[s]")):
        raise InputError(path, "valid_time is not forecast_reference_time + forecast_period")


DATASET = "cams-global-atmospheric-composition-forecasts"
# NetCDF variable -> the ADS's name for it in a request.
REQUEST_NAMES = {
    "pm2p5": "particulate_matter_2.5um",
    "pm10": "particulate_matter_10um",
    "duaod550": "dust_aerosol_optical_depth_550nm",
    "go3": "ozone",
    "no2": "nitrogen_dioxide",
    "so2": "sulphur_dioxide",
    "co": "carbon_monoxide",
}
SURFACE = ("pm2p5", "pm10", "duaod550")
MODEL_LEVEL = ("go3", "no2", "so2", "co")
SURFACE_LEADS = tuple(range(121))
MODEL_LEVEL_LEADS = tuple(range(0, 121, 3))
PREFIX = "cams-global"


def request(
    day_s: int, variables: tuple[str, ...], leads: tuple[int, ...], model_level: bool
) -> dict:
    """The ADS request for some fields of the 00 UTC run of a day."""
    day = cams.iso(day_s)[:10]
    out = {
        "variable": [REQUEST_NAMES[v] for v in variables],
        "date": [f"{day}/{day}"],
        "time": ["00:00"],
        "leadtime_hour": [str(h) for h in leads],
        "type": ["forecast"],
        "data_format": "netcdf_zip",
    }
    return out | ({"model_level": [str(LOWEST_MODEL_LEVEL)]} if model_level else {})


def unit(day_s: int, newest: bool = False) -> Unit:
    """The 00 UTC run of a day as a fetch unit: its surface and its model-level part."""
    name = f"{PREFIX}-{cams_fetch.stamp(day_s)}"
    parts = (
        Part(f"{name}-sfc", request(day_s, SURFACE, SURFACE_LEADS, False)),
        Part(f"{name}-ml", request(day_s, MODEL_LEVEL, MODEL_LEVEL_LEADS, True)),
    )
    leads = {VARIABLES[v][0]: SURFACE_LEADS for v in SURFACE}
    leads |= {VARIABLES[v][0]: MODEL_LEVEL_LEADS for v in MODEL_LEVEL}
    return Unit(
        f"CAMS global forecast of {cams.iso(day_s)[:10]} 00 UTC",
        cams.FORECAST,
        day_s,
        parts,
        leads,
        newest,
    )


def plan(day_s: int) -> list[Unit]:
    """Yesterday's and the day's 00 UTC runs (oldest first)."""
    return [unit(day_s - DAY_S), unit(day_s, newest=True)]


# This module is the reader the fetch checks deliveries with.
SOURCE = cams_fetch.CamsSource("cams-global", DATASET, sys.modules[__name__], PREFIX, plan)
