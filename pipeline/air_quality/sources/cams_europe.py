"""CAMS European air quality forecasts (ADS `cams-europe-air-quality-forecasts`, NetCDF).

One run a day at 00 UTC, hourly lead times 0-96 h, 0.1° grid (700 x 420), longitudes stored
0-360, latitudes descending; variables (time, level, latitude, longitude) with `time` in hours
from the run date, which stands in the FORECAST (or ANALYSIS) global attribute and in
`time.long_name`. An ANALYSIS file (the analysed hours of its date) is a run of its own kind,
which takes precedence over forecasts for its hours. Concentrations in µg/m³, pollen in
grains/m³ (its units string is not trusted); values at or below -999 are missing. A file may
hold any subset of the variables.

Fetching (SOURCE, `python -m pipeline fetch cams-europe`): for a day D, the ENSEMBLE forecast
of D-1 and D (surface level 0, lead hours 0-96) and the analysis of D-1 (its hours 0-23),
each one request for every variable read here; D's forecast not yet published is a retry-later,
an analysis not yet published (it appears the next day) only a note.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import xarray as xr

from pipeline.air_quality.sources import cams, cams_fetch
from pipeline.air_quality.sources.cams import Field, Run
from pipeline.air_quality.sources.cams_fetch import DAY_S, Part, Unit
from pipeline.common.io import InputError

DOMAIN = "europe"
FOLDER = Path("cams") / "europe"
# NetCDF variable -> area variable. CAMS Europe's `dust` is a mass concentration, not the dust
# optical depth the API serves (docs/api/air-quality.md#european-domain), so it is not read.
POLLUTANTS = {
    "pm2p5_conc": "pm25_ugm3",
    "pm10_conc": "pm10_ugm3",
    "o3_conc": "o3_ugm3",
    "no2_conc": "no2_ugm3",
    "so2_conc": "so2_ugm3",
    "co_conc": "co_ugm3",
}
POLLEN = {
    "apg_conc": "alder_pollen_grains_m3",
    "bpg_conc": "birch_pollen_grains_m3",
    "gpg_conc": "grass_pollen_grains_m3",
    "mpg_conc": "mugwort_pollen_grains_m3",
    "opg_conc": "olive_pollen_grains_m3",
    "rwpg_conc": "ragweed_pollen_grains_m3",
}
VARIABLES = {**POLLUTANTS, **POLLEN}
REQUIRED = tuple(POLLUTANTS.values())
SURFACE_M = 0.0
KIND_ATTRS = ("FORECAST", "ANALYSIS")  # the global attribute naming a file's kind and date


def present(datasets: Path) -> bool:
    """True when real CAMS Europe inputs are given."""
    return (datasets / FOLDER).is_dir()


def scan(folder: Path, scratch: Path, decode_timedelta: bool | None = None) -> list[Run]:
    """Every run found in the folder's files, newest first, all on one grid."""
    return cams.scan(folder, scratch, _add_file, REQUIRED, decode_timedelta)


def collect(folder: Path, scratch: Path) -> list[Run]:
    """Every run in the folder's files, none required (the fetch checks a delivery)."""
    return list(cams.collect(folder, scratch, _add_file).values())


def _add_file(ds: xr.Dataset, path: Path, runs: dict[int, Run]) -> None:
    names = cams.known_variables(ds, VARIABLES, "CAMS Europe", path)
    if "time" not in ds.variables:
        raise InputError(path, "needs a time coordinate (hours from the run date)")
    hours = cams.lead_hours(ds["time"].values, path, "time")
    run = cams.run_of(
        runs, DOMAIN, run_date(ds, path), cams.axes(ds, path), path, run_kind(ds, path)
    )
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
    kinds |= {
        word.lower()
        for word in re.findall(r"\b(FORECAST|ANALYSIS)\b", long_name, flags=re.IGNORECASE)
    }
    if len(kinds) > 1:
        raise InputError(
            path,
            "says both FORECAST and ANALYSIS (global attributes and "
            "time.long_name): one file is one forecast or one analysis",
        )
    return kinds.pop() if kinds else cams.FORECAST


def run_date(ds: xr.Dataset, path: Path) -> int:
    """The run's date (00 UTC) from FORECAST/ANALYSIS and time.long_name; both must agree."""
    stamps = {cams.date_stamp(str(ds.attrs[key])) for key in KIND_ATTRS if key in ds.attrs}
    stamps.add(cams.date_stamp(str(ds["time"].attrs.get("long_name", ""))))
    stamps.discard(None)
    if not stamps:
        raise InputError(
            path,
            "no run date: expected a FORECAST or ANALYSIS global attribute "
            "(e.g. 'Europe, 20240101+[0H_96H]') or a time long_name "
            "naming the date",
        )
    if len(stamps) > 1:
        raise InputError(
            path, "the FORECAST/ANALYSIS attribute and time.long_name name different dates"
        )
    return stamps.pop()


DATASET = "cams-europe-air-quality-forecasts"
# NetCDF variable -> the ADS's name for it in a request (the same variables as VARIABLES).
REQUEST_NAMES = {
    "pm2p5_conc": "particulate_matter_2.5um",
    "pm10_conc": "particulate_matter_10um",
    "o3_conc": "ozone",
    "no2_conc": "nitrogen_dioxide",
    "so2_conc": "sulphur_dioxide",
    "co_conc": "carbon_monoxide",
    "apg_conc": "alder_pollen",
    "bpg_conc": "birch_pollen",
    "gpg_conc": "grass_pollen",
    "mpg_conc": "mugwort_pollen",
    "opg_conc": "olive_pollen",
    "rwpg_conc": "ragweed_pollen",
}
FORECAST_LEADS = tuple(range(97))
ANALYSIS_HOURS = tuple(range(24))
PREFIX = "cams-europe"


def request(day_s: int, kind: str) -> dict:
    """The ADS request for the forecast or the analysis of a day, every variable read here."""
    day = cams.iso(day_s)[:10]
    forecast = kind == cams.FORECAST
    return {
        "variable": [REQUEST_NAMES[v] for v in VARIABLES],
        "model": ["ensemble"],
        "level": [f"{SURFACE_M:g}"],
        "date": [f"{day}/{day}"],
        "type": [kind],
        # an analysis is hourly at lead 0; a forecast is the 00 UTC run's lead hours
        "time": ["00:00"] if forecast else [f"{h:02d}:00" for h in ANALYSIS_HOURS],
        "leadtime_hour": [str(h) for h in (FORECAST_LEADS if forecast else (0,))],
        "data_format": "netcdf_zip",
    }


def unit(day_s: int, kind: str, newest: bool = False) -> Unit:
    """The forecast or analysis of a day as a fetch unit."""
    hours = FORECAST_LEADS if kind == cams.FORECAST else ANALYSIS_HOURS
    name = f"{PREFIX}-{kind}-{cams_fetch.stamp(day_s)}"
    return Unit(
        f"CAMS Europe {kind} of {cams.iso(day_s)[:10]}",
        kind,
        day_s,
        (Part(name, request(day_s, kind)),),
        {v: hours for v in VARIABLES.values()},
        newest,
    )


def plan(day_s: int) -> list[Unit]:
    """Yesterday's forecast and analysis, then the day's forecast (oldest first)."""
    return [
        unit(day_s - DAY_S, cams.FORECAST),
        unit(day_s - DAY_S, cams.ANALYSIS),
        unit(day_s, cams.FORECAST, newest=True),
    ]


# This module is the reader the fetch checks deliveries with.
SOURCE = cams_fetch.CamsSource("cams-europe", DATASET, sys.modules[__name__], PREFIX, plan)
