"""Offline default: CAMS Europe and CAMS global runs written in exactly the real formats.

Yesterday's and today's 00 UTC runs of both, on reduced grids (Europe 0.5°, global 2°; the
same domain edges and conventions as the real 0.1° and 0.4° grids), with the synthetic fields
of cams_synthetic. The pipeline then reads them with the real readers, so the default build
exercises the production path. The writers also produce real-size files (bench/air_quality.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import netCDF4
import numpy as np

from contract import DAY_S, HOUR_S
from pipeline.air_quality.sources import cams_europe, cams_global
from pipeline.air_quality.sources import synthetic as cams_synthetic
from pipeline.common.io import netcdf_writer

MISSING = -999.0
GENERATED_NOTE = "Generated offline default: synthetic fields in the CAMS format, not CAMS data"
EUROPE_LEADS = np.arange(0, 97)
# As the ADS serves CAMS global: surface fields hourly, model-level fields 3-hourly, to 120 h.
GLOBAL_SURFACE_LEADS = np.arange(0, 121)
GLOBAL_MODEL_LEVEL_LEADS = np.arange(0, 121, 3)


@dataclass(frozen=True)
class GridDef:
    """Cell centres as the real files store them: latitudes descending, longitudes 0-360."""

    lat: np.ndarray
    lon: np.ndarray
    step: float


def europe_grid(step: float = 0.5) -> GridDef:
    """The CAMS Europe domain (lon -25..45, lat 30..72) at `step` degrees (real: 0.1)."""
    nlat, nlon = round(42 / step), round(70 / step)
    lat = 72.0 - step / 2 - step * np.arange(nlat)
    lon = (-25.0 + step / 2 + step * np.arange(nlon)) % 360.0
    return GridDef(np.round(lat, 6), np.round(lon, 6), step)


def global_grid(step: float = 2.0) -> GridDef:
    """The CAMS global grid (poles included) at `step` degrees (real: 0.4)."""
    nlat, nlon = round(180 / step) + 1, round(360 / step)
    return GridDef(
        np.round(90.0 - step * np.arange(nlat), 6), np.round(step * np.arange(nlon), 6), step
    )


def stamp(unix_s: int) -> str:
    """YYYYMMDD of a Unix time."""
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y%m%d")


def write_default(
    folder: Path,
    today_s: int,
    domains=("europe", "global"),
    europe_step: float = 0.5,
    global_step: float = 2.0,
) -> None:
    """Yesterday's and today's 00 UTC runs into folder/europe and folder/global."""
    for run in (today_s - DAY_S, today_s):
        if "europe" in domains:
            write_europe_run(
                folder / "europe" / f"cams-europe-{stamp(run)}.nc", run, europe_grid(europe_step)
            )
        if "global" in domains:
            write_global_run(
                folder / "global" / f"cams-global-{stamp(run)}", run, global_grid(global_step)
            )


def synthetic(run_s: int, step: float):
    """A field function over cams_synthetic for one run."""

    def compute(names, times_s, lat, lon):
        return cams_synthetic.fields(names, times_s, lat, lon, run_s, step)

    return compute


def write_europe_run(
    path: Path,
    run_s: int,
    grid: GridDef,
    compute=None,
    leads: np.ndarray = EUROPE_LEADS,
    hours_per_chunk: int = 8,
    kind: str = "FORECAST",
) -> Path:
    """One CAMS Europe FORECAST (or ANALYSIS) file, NetCDF3 64-bit offset as the ADS has it."""
    # compute(names, unix_times, lat, lon) -> {name: (time, lat, lon) array} gives the values
    # (µg/m³, grains/m³; NaN written as -999); by default the synthetic fields.
    compute = compute or synthetic(run_s, grid.step)
    names = {
        "pm2p5_conc": "pm25_ugm3",
        "pm10_conc": "pm10_ugm3",
        "o3_conc": "o3_ugm3",
        "no2_conc": "no2_ugm3",
        "so2_conc": "so2_ugm3",
        "co_conc": "co_ugm3",
        "dust": "dust_ugm3",
        **{k: v for k, v in cams_europe.POLLEN.items()},
    }
    day = stamp(run_s)
    path.parent.mkdir(parents=True, exist_ok=True)
    with netcdf_writer(path, "NETCDF3_64BIT_OFFSET") as ds:
        for dim, size in (
            ("longitude", len(grid.lon)),
            ("latitude", len(grid.lat)),
            ("level", 1),
            ("time", len(leads)),
        ):
            ds.createDimension(dim, size)
        _coord(ds, "longitude", grid.lon, "f4", long_name="longitude", units="degrees_east")
        _coord(ds, "latitude", grid.lat, "f4", long_name="latitude", units="degrees_north")
        _coord(ds, "level", [0.0], "f4", long_name="level", units="m")
        _coord(ds, "time", leads, "f4", long_name=f"{kind} time from {day}", units="hours")
        for var in names:
            _europe_variable(ds, var)
        span = f"{day}+[{int(leads[0])}H_{int(leads[-1])}H]"
        ds.setncatts(
            {
                "title": f"Air quality {kind} at the Surface",
                "institution": "Data produced by Meteo France",
                "source": "Data from ENSEMBLE model",
                "history": f"Model ENSEMBLE {kind}",
                kind: f"Europe, {span}",
                "summary": f"ENSEMBLE model hourly {kind} at the Surface from {span} on Europe",
                "project": "MACC-RAQ (http://macc-raq.gmes-atmosphere.eu)",
                "comment": GENERATED_NOTE,
            }
        )
        for start in range(0, len(leads), hours_per_chunk):
            chunk = leads[start : start + hours_per_chunk]
            values = compute(
                list(names.values()),
                run_s + chunk * HOUR_S,
                _ascending(grid.lat),
                _folded(grid.lon),
            )
            for var, name in names.items():
                ds[var][start : start + len(chunk), 0] = _to_file(values[name], grid)
    return path


SPECIES = {
    "pm2p5_conc": "PM2.5 Aerosol",
    "pm10_conc": "PM10 Aerosol",
    "o3_conc": "Ozone",
    "no2_conc": "Nitrogen Dioxide",
    "so2_conc": "Sulphur Dioxide",
    "co_conc": "Carbon Monoxide",
    "dust": "Dust",
    "apg_conc": "Alder Pollen Grain",
    "bpg_conc": "Birch Pollen Grain",
    "gpg_conc": "Grass Pollen Grain",
    "mpg_conc": "Mugwort Pollen Grain",
    "opg_conc": "Olive Pollen Grain",
    "rwpg_conc": "Ragweed Pollen Grain",
}


def _europe_variable(ds: netCDF4.Dataset, var: str) -> None:
    out = ds.createVariable(
        var, "f4", ("time", "level", "latitude", "longitude"), fill_value=np.float32(MISSING)
    )
    out.setncatts(
        {
            "species": SPECIES[var],
            "units": "grains/m3" if var in cams_europe.POLLEN else "µg/m3",
            "value": "hourly values",
            "missing_value": np.float32(MISSING),
        }
    )


def write_global_run(
    stem: Path,
    run_s: int,
    grid: GridDef,
    compute=None,
    surface_leads: np.ndarray = GLOBAL_SURFACE_LEADS,
    model_leads: np.ndarray = GLOBAL_MODEL_LEVEL_LEADS,
) -> tuple[Path, Path]:
    """One CAMS global run as the ADS delivers it: `<stem>-sfc.nc` and `<stem>-ml.nc`."""
    # Surface: pm2p5, pm10, duaod550 at surface_leads; model level 137: go3, no2, so2, co at
    # model_leads; NetCDF4.
    compute = compute or synthetic(run_s, grid.step)
    units_per_ug = 1.0 / cams_global.KG_TO_UG
    mixing = 1.0 / (cams_global.AIR_DENSITY_KG_M3 * cams_global.KG_TO_UG)
    surface = {
        "pm2p5": ("pm25_ugm3", units_per_ug, "kg m**-3", 210073, "Particulate matter d < 2.5 um"),
        "pm10": ("pm10_ugm3", units_per_ug, "kg m**-3", 210074, "Particulate matter d < 10 um"),
        "duaod550": ("dust_aod", 1.0, "~", 210209, "Dust aerosol optical depth at 550 nm"),
    }
    model = {
        "go3": ("o3_ugm3", mixing, "kg kg**-1", 210203, "GEMS Ozone"),
        "no2": ("no2_ugm3", mixing, "kg kg**-1", 210121, "Nitrogen dioxide"),
        "so2": ("so2_ugm3", mixing, "kg kg**-1", 210122, "Sulphur dioxide"),
        "co": ("co_ugm3", mixing, "kg kg**-1", 210123, "Carbon monoxide"),
    }
    paths = (stem.with_name(stem.name + "-sfc.nc"), stem.with_name(stem.name + "-ml.nc"))
    for path, variables, leads, levels in (
        (paths[0], surface, surface_leads, False),
        (paths[1], model, model_leads, True),
    ):
        values = compute(
            [v[0] for v in variables.values()],
            run_s + leads * HOUR_S,
            _ascending(grid.lat),
            _folded(grid.lon),
        )
        _global_file(path, run_s, grid, leads, variables, values, levels)
    return paths


def _global_file(
    path: Path,
    run_s: int,
    grid: GridDef,
    leads: np.ndarray,
    variables: dict,
    values: dict,
    model_level: bool,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with netcdf_writer(path, "NETCDF4") as ds:
        dims = [("forecast_period", len(leads)), ("forecast_reference_time", 1)]
        dims += [("model_level", 1)] if model_level else []
        for dim, size in dims + [("latitude", len(grid.lat)), ("longitude", len(grid.lon))]:
            ds.createDimension(dim, size)
        _coord(
            ds,
            "forecast_period",
            leads,
            "i8",
            long_name="time since forecast_reference_time",
            standard_name="forecast_period",
            units="hours",
        )
        _coord(
            ds,
            "forecast_reference_time",
            [run_s],
            "i8",
            long_name="initial time of forecast",
            standard_name="forecast_reference_time",
            units="seconds since 1970-01-01",
            calendar="proleptic_gregorian",
        )
        if model_level:
            _coord(
                ds,
                "model_level",
                [137],
                "i8",
                long_name="model_level",
                standard_name="model_level_number",
                units="1",
                positive="down",
            )
        _coord(
            ds,
            "latitude",
            grid.lat,
            "f8",
            units="degrees_north",
            standard_name="latitude",
            long_name="latitude",
            stored_direction="decreasing",
        )
        _coord(
            ds,
            "longitude",
            grid.lon,
            "f8",
            units="degrees_east",
            standard_name="longitude",
            long_name="longitude",
        )
        valid = ds.createVariable(
            "valid_time", "i8", ("forecast_reference_time", "forecast_period")
        )
        valid.setncatts(
            {
                "long_name": "time",
                "standard_name": "time",
                "units": "seconds since 1970-01-01",
                "calendar": "proleptic_gregorian",
            }
        )
        valid[:] = (run_s + leads * HOUR_S)[None, :]
        shape = ("forecast_period", "forecast_reference_time")
        shape += ("model_level",) if model_level else ()
        for var, (name, factor, units, param, long_name) in variables.items():
            out = ds.createVariable(
                var,
                "f4",
                shape + ("latitude", "longitude"),
                zlib=True,
                complevel=1,
                fill_value=np.float32(np.nan),
            )
            out.setncatts(
                {
                    "GRIB_paramId": param,
                    "GRIB_dataType": "fc",
                    "GRIB_units": units,
                    "GRIB_name": long_name,
                    "long_name": long_name,
                    "units": units,
                    "standard_name": "unknown",
                    "coordinates": "valid_time",
                }
            )
            data = _to_file(values[name] * np.float32(factor), grid, missing=np.nan)
            out[:] = data[:, None, None] if model_level else data[:, None]
        ds.setncatts(
            {
                "GRIB_centre": "ecmf",
                "GRIB_centreDescription": "European Centre for Medium-Range Weather Forecasts",
                "GRIB_subCentre": 0,
                "Conventions": "CF-1.7",
                "institution": "European Centre for Medium-Range Weather Forecasts",
                "comment": GENERATED_NOTE,
            }
        )


def _coord(ds: netCDF4.Dataset, name: str, values, dtype: str, **attrs) -> None:
    var = ds.createVariable(name, dtype, (name,) if name in ds.dimensions else ())
    var.setncatts(attrs)
    var[:] = np.asarray(values)


def _ascending(lat_desc: np.ndarray) -> np.ndarray:
    return lat_desc[::-1]


def _folded(lon_0360: np.ndarray) -> np.ndarray:
    return (lon_0360 + 180.0) % 360.0 - 180.0


def _to_file(values: np.ndarray, grid: GridDef, missing: float = MISSING) -> np.ndarray:
    """(time, ascending lat, file-order lon) values as the file stores them."""
    # Latitudes descending, unknown values as `missing`.
    data = np.asarray(values, dtype=np.float32)[:, ::-1]
    return np.where(np.isnan(data), np.float32(missing), data)
