"""CAMS European air quality forecasts (ADS `cams-europe-air-quality-forecasts`, NetCDF).

One run a day at 00 UTC, hourly lead times 0-96 h, 0.1° grid (700 x 420), longitudes stored
0-360, latitudes descending; variables (time, level, latitude, longitude) with `time` in hours
from the run date, which stands in the FORECAST (or ANALYSIS) global attribute and in
`time.long_name`. An ANALYSIS file (the analysed hours of its date) is a run of its own kind,
which takes precedence over forecasts for its hours. Concentrations in µg/m³, pollen in
grains/m³ (its units string is not trusted); values at or below -999 are missing. A file may
hold any subset of the variables.
"""

from __future__ import annotations

import re
from pathlib import Path

import xarray as xr

from pipeline.common.io import InputError
from pipeline.air_quality.sources import cams
from pipeline.air_quality.sources.cams import Field, Run

DOMAIN = "europe"
FOLDER = Path("cams") / "europe"
# NetCDF variable -> area variable. CAMS Europe's `dust` is a mass concentration, not the dust
# optical depth the API serves (docs/api/air-quality.md#european-domain), so it is not read.
POLLUTANTS = {"pm2p5_conc": "pm25_ugm3", "pm10_conc": "pm10_ugm3", "o3_conc": "o3_ugm3",
              "no2_conc": "no2_ugm3", "so2_conc": "so2_ugm3", "co_conc": "co_ugm3"}
POLLEN = {"apg_conc": "alder_pollen_grains_m3", "bpg_conc": "birch_pollen_grains_m3",
          "gpg_conc": "grass_pollen_grains_m3", "mpg_conc": "mugwort_pollen_grains_m3",
          "opg_conc": "olive_pollen_grains_m3", "rwpg_conc": "ragweed_pollen_grains_m3"}
VARIABLES = {**POLLUTANTS, **POLLEN}
REQUIRED = tuple(POLLUTANTS.values())
SURFACE_M = 0.0
KIND_ATTRS = ("FORECAST", "ANALYSIS")       # the global attribute naming a file's kind and date


def present(datasets: Path) -> bool:
    """True when real CAMS Europe inputs are given."""
    return (datasets / FOLDER).is_dir()


def scan(folder: Path, scratch: Path, decode_timedelta: bool | None = None) -> list[Run]:
    """Every run found in the folder's files, newest first, all on one grid."""
    return cams.scan(folder, scratch, _add_file, REQUIRED, decode_timedelta)


def _add_file(ds: xr.Dataset, path: Path, runs: dict[int, Run]) -> None:
    names = cams.known_variables(ds, VARIABLES, "CAMS Europe", path)
    if "time" not in ds.variables:
        raise InputError(path, "needs a time coordinate (hours from the run date)")
    hours = cams.lead_hours(ds["time"].values, path, "time")
    run = cams.run_of(runs, DOMAIN, run_date(ds, path), cams.axes(ds, path), path,
                      run_kind(ds, path))
    for name in names:
        cams.check_dims(ds, name, _dims(ds, name), path)
        if name in POLLUTANTS:
            cams.check_units(ds, name, "ug", path)
        select = cams.level_selection(ds, name, "level", SURFACE_M, path)
        run.add(VARIABLES[name], Field(path, name, select, "time", hours))


def _dims(ds: xr.Dataset, name: str) -> set[str]:
    dims = {"time", "latitude", "longitude"}
    return dims | {"level"} if "level" in ds[name].dims else dims


def run_kind(ds: xr.Dataset, path: Path) -> str:
    """forecast or analysis, as the global attribute and time.long_name say (or forecast)."""
    kinds = {key.lower() for key in KIND_ATTRS if key in ds.attrs}
    long_name = str(ds["time"].attrs.get("long_name", ""))
    kinds |= {word.lower() for word in re.findall(r"\b(FORECAST|ANALYSIS)\b", long_name,
                                                 flags=re.IGNORECASE)}
    if len(kinds) > 1:
        raise InputError(path, "says both FORECAST and ANALYSIS (global attributes and "
                               "time.long_name): one file is one forecast or one analysis")
    return kinds.pop() if kinds else cams.FORECAST


def run_date(ds: xr.Dataset, path: Path) -> int:
    """The run's date (00 UTC) from FORECAST/ANALYSIS and time.long_name; both must agree."""
    stamps = {cams.date_stamp(str(ds.attrs[key])) for key in KIND_ATTRS if key in ds.attrs}
    stamps.add(cams.date_stamp(str(ds["time"].attrs.get("long_name", ""))))
    stamps.discard(None)
    if not stamps:
        raise InputError(path, "no run date: expected a FORECAST or ANALYSIS global attribute "
                               "(e.g. 'Europe, 20240101+[0H_96H]') or a time long_name "
                               "naming the date")
    if len(stamps) > 1:
        raise InputError(path, "the FORECAST/ANALYSIS attribute and time.long_name name "
                               "different dates")
    return stamps.pop()
