"""Offline default forecast: a generated GFS run written exactly as cfgrib + xarray write one.

The files have GFS's cfgrib names, GRIB-style units and layout (one file per level type,
dimensions step x latitude x longitude, latitude 90 -> -90, longitude 0 -> 360, the run time in
a scalar `time`, hourly steps to 120 h then 3-hourly), so the real reader ingests them. The
weather is synthetic but physically plausible: temperature by latitude, season, local solar
time and elevation; pressure systems that live for days and drift with the westerlies (a low
in the mid-latitudes, a high in the subtropics) with geostrophic wind, cloud and rain around
them; an ITCZ rain band following the sun with afternoon convection; snow when cold. Systems
depend on absolute time, so successive runs agree. Written step by step (bounded memory at any
resolution). Deterministic for a given run time and grid.
"""

from __future__ import annotations

import contextlib
import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import netCDF4
import numpy as np
from scipy.spatial import cKDTree

from contract import DAY_S, EARTH_RADIUS_KM, HOUR_S
from pipeline.common.grid import one_point_poles
from pipeline.common.io import NETCDF_WRITE_ERRORS, naming, netcdf_writer
from pipeline.common.sphere import chord_of_km, unit_vectors
from pipeline.forecast.precipitation import RAIN_ALL_C, SNOW_ALL_C

HOURLY_TO_H, THREE_HOURLY_TO_H = 120, 240
WEATHER_STEP_DEG = 1.0
EARTH_RADIUS_M = EARTH_RADIUS_KM * 1000.0
OMEGA = 7.2921e-5
SYSTEM_EVERY_S = 4 * HOUR_S  # a new pressure system is born every 4 hours somewhere
SYSTEM_LIFE_S = (3 * DAY_S, 7 * DAY_S)
# The history names this module by its path before the reorganisation: the text is part of the
# generated files' bytes, hence of the forecast's data version, which a rename must not change.
CENTRE = {
    "GRIB_centre": "kwbc",
    "GRIB_centreDescription": "US National Weather Service - NCEP",
    "GRIB_edition": 2,
    "GRIB_subCentre": 0,
    "Conventions": "CF-1.7",
    "institution": "US National Weather Service - NCEP",
    "history": "generated offline default in cfgrib layout by "
    "pipeline/sources/generated_model.py (synthetic weather, not a real run)",
}
# cfgrib short name -> (file level type, level value, units, long name, step type)
VARIABLES = {
    "t2m": ("heightAboveGround", 2.0, "K", "2 metre temperature", "instant"),
    "d2m": ("heightAboveGround", 2.0, "K", "2 metre dewpoint temperature", "instant"),
    "u10": ("heightAboveGround", 10.0, "m s**-1", "10 metre U wind component", "instant"),
    "v10": ("heightAboveGround", 10.0, "m s**-1", "10 metre V wind component", "instant"),
    "prmsl": ("meanSea", 0.0, "Pa", "Pressure reduced to MSL", "instant"),
    "tcc": ("atmosphere", 0.0, "%", "Total Cloud Cover", "instant"),
    "prate": ("surface", 0.0, "kg m**-2 s**-1", "Precipitation rate", "avg"),
    "vis": ("surface", 0.0, "m", "Visibility", "instant"),
    "gust": ("surface", 0.0, "m s**-1", "Wind speed (gust)", "instant"),
    "crain": ("surface", 0.0, "Code table 4.222", "Categorical rain", "avg"),
    "csnow": ("surface", 0.0, "Code table 4.222", "Categorical snow", "avg"),
    "cfrzr": ("surface", 0.0, "Code table 4.222", "Categorical freezing rain", "avg"),
    "cicep": ("surface", 0.0, "Code table 4.222", "Categorical ice pellets", "avg"),
    "cape": ("surface", 0.0, "J kg**-1", "Convective available potential energy", "instant"),
    "orog": ("surface", 0.0, "m", "Orography", "instant"),
}
# Orography: the mean elevation of the airfields this near a grid point (about a 1° cell's
# half-diagonal), else the bumps of MOUNTAINS.
AIRPORT_KM, AIRPORT_NEIGHBOURS = 80.0, 16
FEET_TO_M = 0.3048
_ICE_SHEET_M = 2600.0
# Mountains: (lat, lon, height m, lat sigma deg, lon sigma deg)
MOUNTAINS = (
    (32.0, 85.0, 4800, 5.0, 11.0),
    (46.3, 9.0, 1800, 1.0, 2.5),
    (40.0, -108.0, 2200, 9.0, 5.0),
    (55.0, -125.0, 1500, 6.0, 4.0),
    (-15.0, -70.0, 3800, 10.0, 2.5),
    (-35.0, -70.0, 2800, 8.0, 1.8),
    (72.0, -40.0, 2400, 7.0, 12.0),
    (8.0, 38.5, 2200, 4.0, 3.0),
    (-1.0, 36.5, 1600, 4.0, 3.0),
    (43.0, 43.0, 1800, 1.2, 4.0),
    (-24.0, 18.0, 1200, 6.0, 8.0),
    (62.0, 9.0, 1000, 3.0, 3.0),
    (37.0, 140.0, 900, 3.0, 2.0),
    (-43.5, 170.5, 1500, 1.5, 1.5),
)


@dataclass(frozen=True)
class Grid:
    """A global regular grid as GFS stores it (latitude descending, longitude 0-360)."""

    step_deg: float

    @property
    def lat(self) -> np.ndarray:
        n = int(round(180 / self.step_deg)) + 1
        return np.linspace(90.0, -90.0, n)

    @property
    def lon(self) -> np.ndarray:
        return np.arange(int(round(360 / self.step_deg))) * self.step_deg


def steps_h(horizon_h: int = THREE_HOURLY_TO_H) -> np.ndarray:
    """GFS lead times: hourly to 120 h, then 3-hourly."""
    hourly = np.arange(0, min(horizon_h, HOURLY_TO_H) + 1)
    later = np.arange(HOURLY_TO_H + 3, horizon_h + 1, 3)
    return np.concatenate([hourly, later]).astype(np.int64)


def write_run(
    folder: Path,
    run_s: int,
    grid: Grid,
    steps: np.ndarray,
    collect=None,
    variables: tuple[str, ...] | None = None,
) -> list[Path]:
    """Write one run's files into `folder` (all VARIABLES, or the named ones);
    `collect(valid_s, fields)` sees every step."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = np.datetime64(run_s, "s").astype(object)
    resolution = f"{grid.step_deg:.2f}".replace(".", "p")
    prefix = f"gfs.{stamp:%Y%m%d}.t{stamp:%H}z.pgrb2.{resolution}"
    levels = {}
    for name, (level, value, *_rest) in VARIABLES.items():
        if variables is None or name in variables:
            levels.setdefault((level, value), []).append(name)
    files, handles = [], {}
    with contextlib.ExitStack() as stack:
        for (level, value), names in levels.items():
            suffix = f"{level}{int(value)}" if level == "heightAboveGround" else level
            path = folder / f"{prefix}.{suffix}.nc"
            ds = handles[(level, value)] = stack.enter_context(netcdf_writer(path, "NETCDF4"))
            with naming(path, NETCDF_WRITE_ERRORS):
                _define(ds, run_s, grid, steps, level, value, names)
            files.append(path)
        weather = Weather(grid)
        bucket = _Bucket()
        for k, step in enumerate(steps):
            valid_s = run_s + int(step) * HOUR_S
            fields = weather.fields(valid_s)
            written = {**fields, "prate": bucket.mean(int(step), fields["prate"])}
            for (level, value), names in levels.items():
                ds = handles[(level, value)]
                with naming(ds.filepath(), NETCDF_WRITE_ERRORS):
                    for name in names:
                        ds[name][k] = written[name]
            if collect is not None:
                collect(valid_s, fields)
    return files


class _Bucket:
    """prate as GFS writes it (GRIB_stepType avg): the mean rate since the start of the
    step's 6-hour bucket, from the instantaneous rates at the steps (trapezoids); NaN at
    step 0, which has no interval."""

    def __init__(self):
        self.step_h, self.rate, self.amount = 0, None, None

    def mean(self, step_h: int, rate: np.ndarray) -> np.ndarray:
        if self.rate is None or step_h <= 0:
            self.step_h, self.rate, self.amount = step_h, rate, np.zeros_like(rate)
            return np.full_like(rate, np.nan)
        start = (step_h - 1) // 6 * 6
        if self.step_h <= start:  # the previous step closed a bucket
            self.amount = np.zeros_like(rate)
        self.amount = self.amount + (self.rate + rate) * np.float32((step_h - self.step_h) / 2)
        self.step_h, self.rate = step_h, rate
        return (self.amount / np.float32(step_h - start)).astype(np.float32)


def _define(
    ds: netCDF4.Dataset,
    run_s: int,
    grid: Grid,
    steps: np.ndarray,
    level: str,
    value: float,
    names: list[str],
) -> None:
    ds.setncatts(CENTRE)
    ds.createDimension("step", len(steps))
    ds.createDimension("latitude", len(grid.lat))
    ds.createDimension("longitude", len(grid.lon))
    time = ds.createVariable("time", "i8", ())
    time.setncatts(
        {
            "long_name": "initial time of forecast",
            "standard_name": "forecast_reference_time",
            "units": "seconds since 1970-01-01",
            "calendar": "proleptic_gregorian",
        }
    )
    time.assignValue(run_s)
    step = ds.createVariable("step", "f8", ("step",))
    step.setncatts(
        {
            "long_name": "time since forecast_reference_time",
            "standard_name": "forecast_period",
            "units": "hours",
        }
    )
    step[:] = steps.astype(np.float64)
    lvl = ds.createVariable(level, "f8", ())
    lvl.setncatts(
        {
            "long_name": {
                "heightAboveGround": "height above the surface",
                "meanSea": "mean sea level",
                "surface": "original GRIB coordinate for key: level(surface)",
                "atmosphere": "original GRIB coordinate for key: level(atmosphere)",
            }[level],
            "units": "m" if value else "1",
        }
    )
    lvl.assignValue(value)
    lat = ds.createVariable("latitude", "f8", ("latitude",))
    lat.setncatts(
        {
            "units": "degrees_north",
            "standard_name": "latitude",
            "long_name": "latitude",
            "stored_direction": "decreasing",
        }
    )
    lat[:] = grid.lat
    lon = ds.createVariable("longitude", "f8", ("longitude",))
    lon.setncatts({"units": "degrees_east", "standard_name": "longitude", "long_name": "longitude"})
    lon[:] = grid.lon
    valid = ds.createVariable("valid_time", "i8", ("step",))
    valid.setncatts(
        {
            "standard_name": "time",
            "long_name": "time",
            "units": "seconds since 1970-01-01",
            "calendar": "proleptic_gregorian",
        }
    )
    valid[:] = run_s + steps * HOUR_S
    for name in names:
        _, _, units, long_name, step_type = VARIABLES[name]
        var = ds.createVariable(
            name, "f4", ("step", "latitude", "longitude"), fill_value=np.float32(np.nan)
        )
        var.setncatts(
            {
                "GRIB_shortName": name,
                "GRIB_units": units,
                "GRIB_name": long_name,
                "GRIB_typeOfLevel": level,
                "GRIB_stepType": step_type,
                "GRIB_stepUnits": 1,
                "GRIB_dataType": "fc",
                "GRIB_gridType": "regular_ll",
                "GRIB_Nx": len(grid.lon),
                "GRIB_Ny": len(grid.lat),
                "GRIB_iDirectionIncrementInDegrees": grid.step_deg,
                "GRIB_jDirectionIncrementInDegrees": grid.step_deg,
                "GRIB_latitudeOfFirstGridPointInDegrees": 90.0,
                "GRIB_longitudeOfFirstGridPointInDegrees": 0.0,
                "long_name": long_name,
                "units": units,
                "coordinates": f"time step {level} latitude longitude valid_time",
            }
        )


class Weather:
    """Synthetic fields at any valid time on one grid; computed on a grid of at most
    WEATHER_STEP_DEG resolution and interpolated to finer ones (the systems are large)."""

    def __init__(self, grid: Grid):
        self.target = grid
        if grid.step_deg < WEATHER_STEP_DEG:
            self.upsample = _Upsampler(Grid(WEATHER_STEP_DEG), grid)
            grid = Grid(WEATHER_STEP_DEG)
        else:
            self.upsample = None
        self.lat = grid.lat[:, None] * np.ones((1, len(grid.lon)))
        self.lon = np.ones((len(grid.lat), 1)) * grid.lon[None, :]
        self.step = grid.step_deg
        self.phi = np.radians(self.lat)
        lam = np.radians(self.lon)
        self.xyz = tuple(
            a.astype(np.float32)
            for a in (
                np.cos(self.phi) * np.cos(lam),
                np.cos(self.phi) * np.sin(lam),
                np.sin(self.phi),
            )
        )
        self.orog = orography(self.lat, self.lon)
        f = (
            2
            * OMEGA
            * np.sin(
                np.radians(
                    np.where(np.abs(self.lat) < 12, np.where(self.lat < 0, -12, 12), self.lat)
                )
            )
        )
        self.f = f
        self.annual_c = 27.0 - 45.0 * (np.abs(self.lat) / 90.0) ** 1.6
        self.season_amp = 14.0 * (np.abs(self.lat) / 90.0) * np.sign(self.lat)

    def fields(self, valid_s: int) -> dict[str, np.ndarray]:
        """Every variable of VARIABLES at one valid time, in GRIB units, float32; a pole's
        row holds one value, as GFS writes it (the pole is one point)."""
        fields = self._fields(valid_s)
        if self.upsample is not None:
            fields = {
                name: self.upsample(value)
                for name, value in fields.items()
                if name not in _FLAG_NAMES
            }
            temp_c = fields["t2m"] - 273.15
            fields.update(
                {
                    k: v.astype(np.float32)
                    for k, v in _phase_flags(temp_c, fields["prate"] * 3600.0).items()
                }
            )
        # The formulas see a pole's columns as different places (local solar time, the
        # pressure gradient towards the next row): the pole takes its POLE_LON column's
        # weather, its wind in that meridian's axes.
        for value in fields.values():
            one_point_poles(value, self.target.lat, self.target.lon)
        return fields

    def _fields(self, valid_s: int) -> dict[str, np.ndarray]:
        lows, highs = self._systems(valid_s)
        day = valid_s / 86400.0
        itcz_lat = 8.0 * math.sin(2 * math.pi * (day - 80.0) / 365.25)
        solar_h = (valid_s / 3600.0 + self.lon / 15.0) % 24.0
        afternoon = np.clip(np.cos(2 * np.pi * (solar_h - 15.0) / 24.0), 0, 1)
        itcz = np.exp(-(((self.lat - itcz_lat) / 6.0) ** 2))
        pressure = (
            1013.0
            + 7.0 * np.exp(-(((np.abs(self.lat) - 32) / 10) ** 2))
            - 9.0 * np.exp(-(((np.abs(self.lat) - 62) / 8) ** 2))
            - 3.0 * itcz
            + lows["p"]
            + highs["p"]
        )
        u, v = self._wind(pressure * 100.0)
        speed = np.hypot(u, v)
        convection = itcz * (0.3 + 0.7 * afternoon) * self._patches(day)
        wet = np.clip(lows["core"] * 1.1 + convection, 0, 1)
        cloud = np.clip(
            25 + 75 * np.clip(lows["cloud"] + 0.8 * itcz, 0, 1) - 35 * highs["core"], 0, 100
        )
        rate_mmh = np.clip(6.0 * wet**2 - 0.3, 0, None) * (cloud > 60)
        season = np.cos(2 * np.pi * (day - 201.0) / 365.25)
        diurnal = (6.0 - 3.5 * cloud / 100) * np.cos(2 * np.pi * (solar_h - 15.0) / 24.0)
        temp_c = (
            self.annual_c
            + self.season_amp * season
            + diurnal
            - 6.5e-3 * self.orog
            - 2.0 * lows["core"]
            + 1.5 * highs["core"]
        )
        spread = np.clip(12.0 * (1 - cloud / 100) * (1 - 0.5 * itcz) - 4.0 * wet, 0.3, None)
        dew_c = temp_c - spread
        fog = (spread < 1.2) & (speed < 3.0) & (rate_mmh == 0)
        vis = np.where(fog, 400 + 1500 * spread, 24000 * (1 - 0.85 * np.clip(rate_mmh / 6, 0, 1)))
        flags = _phase_flags(temp_c, rate_mmh)
        return {
            name: np.asarray(value, dtype=np.float32)
            for name, value in {
                "t2m": temp_c + 273.15,
                "d2m": dew_c + 273.15,
                "u10": u,
                "v10": v,
                "prmsl": pressure * 100.0,
                "tcc": cloud,
                "prate": rate_mmh / 3600.0,
                "vis": vis,
                "gust": speed * 1.45 + 1.5 + 8.0 * np.clip(rate_mmh / 8, 0, 1),
                **flags,
                "cape": np.clip(
                    3200 * itcz * afternoon * np.clip((temp_c - 18) / 10, 0, 1)
                    + 800 * wet * (temp_c > 15),
                    0,
                    None,
                ),
                "orog": self.orog,
            }.items()
        }

    def _patches(self, day: float) -> np.ndarray:
        """Slowly changing convective patchiness, 0-1."""
        return 0.5 + 0.5 * np.sin(np.radians(self.lon) * 7 + day * 1.3) * np.cos(
            np.radians(self.lat) * 11 - day * 0.9
        )

    def _systems(self, valid_s: int) -> tuple[dict, dict]:
        """Pressure anomaly (hPa), cloud and core masks of the live lows and highs."""
        shape = self.lat.shape
        lows = {k: np.zeros(shape, dtype=np.float32) for k in ("p", "cloud", "core")}
        highs = {k: np.zeros(shape, dtype=np.float32) for k in ("p", "core")}
        first = (valid_s - SYSTEM_LIFE_S[1]) // SYSTEM_EVERY_S
        for k in range(first, valid_s // SYSTEM_EVERY_S + 1):
            system = _system(k)
            age = valid_s - system["born_s"]
            if not 0 <= age < system["life_s"]:
                continue
            strength = math.sin(math.pi * age / system["life_s"]) ** 1.5
            lat = system["lat"] + system["dlat_per_day"] * age / DAY_S
            lon = system["lon"] + system["dlon_per_day"] * age / DAY_S
            d2 = self._distance2_km2(lat, lon)
            sigma = system["sigma_km"]
            shape_p = np.exp(d2 * np.float32(-1 / (2 * sigma**2)))
            if system["low"]:
                lows["p"] -= system["depth_hpa"] * strength * shape_p
                lows["cloud"] += strength * np.exp(d2 * np.float32(-1 / (2 * (1.3 * sigma) ** 2)))
                lows["core"] += strength * np.exp(d2 * np.float32(-1 / (2 * (0.55 * sigma) ** 2)))
            else:
                highs["p"] += system["depth_hpa"] * strength * shape_p
                highs["core"] += strength * shape_p
        return lows, highs

    def _distance2_km2(self, lat: float, lon: float) -> np.ndarray:
        """Squared chord distance to a point, in km² (the great-circle distance to within
        a few percent at the sizes of weather systems, and much cheaper)."""
        p, q = math.radians(lat), math.radians(lon)
        x, y, z = self.xyz
        dot = (
            x * np.float32(math.cos(p) * math.cos(q))
            + y * np.float32(math.cos(p) * math.sin(q))
            + z * np.float32(math.sin(p))
        )
        return np.float32(2.0 * 6371.0**2) * (np.float32(1.0) - dot)

    def _wind(self, pressure_pa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Geostrophic wind from the pressure field, slowed and turned 25° towards low pressure
        by surface friction, plus the trades."""
        dy = EARTH_RADIUS_M * np.radians(self.step)
        dx = dy * np.maximum(np.cos(self.phi), 0.05)
        dp_dy = -np.gradient(pressure_pa, axis=0) / dy  # rows run north to south
        dp_dx = (np.roll(pressure_pa, -1, axis=1) - np.roll(pressure_pa, 1, axis=1)) / (2 * dx)
        rho = 1.225
        ug, vg = -dp_dy / (rho * self.f), dp_dx / (rho * self.f)
        turn = np.radians(25.0) * np.sign(self.lat + 1e-9)
        u = 0.6 * (ug * np.cos(turn) - vg * np.sin(turn))
        v = 0.6 * (ug * np.sin(turn) + vg * np.cos(turn))
        trades = -6.0 * np.exp(-(((np.abs(self.lat) - 15) / 9) ** 2))
        u, v = (
            u + trades,
            v - 2.0 * np.sign(self.lat) * np.exp(-(((np.abs(self.lat) - 15) / 9) ** 2)),
        )
        speed = np.hypot(u, v)
        scale = np.where(speed > 35.0, 35.0 / np.maximum(speed, 1e-9), 1.0)
        return u * scale, v * scale


class _Upsampler:
    """Bilinear interpolation from a coarse global grid to a finer one (longitude wraps)."""

    def __init__(self, coarse: Grid, fine: Grid):
        rows = (90.0 - fine.lat) / coarse.step_deg
        cols = fine.lon / coarse.step_deg
        self.r0 = np.minimum(np.floor(rows).astype(np.int64), len(coarse.lat) - 2)[:, None]
        self.fr = (rows[:, None] - self.r0).astype(np.float32)
        self.c0 = np.floor(cols).astype(np.int64)[None, :] % len(coarse.lon)
        self.c1 = (self.c0 + 1) % len(coarse.lon)
        self.fc = (cols[None, :] - np.floor(cols)[None, :]).astype(np.float32)

    def __call__(self, field: np.ndarray) -> np.ndarray:
        top = field[self.r0, self.c0] * (1 - self.fc) + field[self.r0, self.c1] * self.fc
        bottom = field[self.r0 + 1, self.c0] * (1 - self.fc) + field[self.r0 + 1, self.c1] * self.fc
        return (top * (1 - self.fr) + bottom * self.fr).astype(np.float32)


@lru_cache(maxsize=512)
def _system(k: int) -> dict:
    """The k-th pressure system (born at k * SYSTEM_EVERY_S): its track, size and depth."""
    rng = np.random.default_rng(np.uint64(k & 0xFFFFFFFF) + np.uint64(7_919))
    low = bool(rng.random() < 0.6)
    hemisphere = 1 if rng.random() < 0.55 else -1
    lat = hemisphere * (rng.uniform(35, 62) if low else rng.uniform(22, 40))
    return {
        "low": low,
        "born_s": k * SYSTEM_EVERY_S,
        "life_s": float(rng.uniform(*SYSTEM_LIFE_S)),
        "lat": lat,
        "lon": float(rng.uniform(0, 360)),
        "dlon_per_day": float(rng.uniform(6, 14) if low else rng.uniform(-2, 5)),
        "dlat_per_day": float(hemisphere * rng.uniform(0, 2.0)),
        "sigma_km": float(rng.uniform(500, 950) if low else rng.uniform(1200, 1900)),
        "depth_hpa": float(rng.uniform(12, 34) if low else rng.uniform(8, 16)),
    }


def orography(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Surface height (m): the mean elevation of the airports within AIRPORT_KM (airportsdata:
    some 28,000 airfields, wherever people live), else the main mountain ranges and ice sheets
    as smooth bumps (Greenland's and Antarctica's interiors have no airfields)."""
    height = _ranges(lat, lon)
    near = _airport_mean_m(lat, lon)
    height = np.where(np.isnan(near), height, near)
    return np.maximum(height, _ice_sheet_m(lat))


def _airport_mean_m(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Mean elevation (m) of the AIRPORT_NEIGHBOURS nearest airports within AIRPORT_KM of each
    point, NaN where there is none."""
    tree, elevation_m = _airports()
    distance, index = tree.query(
        unit_vectors(lat.ravel(), lon.ravel()),
        k=AIRPORT_NEIGHBOURS,
        distance_upper_bound=chord_of_km(AIRPORT_KM),
    )
    found = np.isfinite(distance)
    heights = np.where(found, np.append(elevation_m, 0.0)[index], 0.0)
    with np.errstate(invalid="ignore"):  # no airport near: NaN, on purpose
        mean = heights.sum(axis=1) / found.sum(axis=1)
    return mean.reshape(lat.shape)


@lru_cache(maxsize=1)
def _airports() -> tuple[cKDTree, np.ndarray]:
    """A KD-tree over airportsdata's airports (unit vectors) and their elevations (m)."""
    with (files("airportsdata") / "airports.csv").open(encoding="utf-8") as handle:
        rows = [
            (float(r["lat"]), float(r["lon"]), float(r["elevation"]) * FEET_TO_M)
            for r in csv.DictReader(handle)
            if r["elevation"] not in ("", None)
        ]
    table = np.array(rows)
    return cKDTree(unit_vectors(table[:, 0], table[:, 1])), table[:, 2]


def _ranges(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """The main mountain ranges and ice sheets as smooth bumps (m)."""
    lon180 = ((lon + 180.0) % 360.0) - 180.0
    height = np.zeros_like(lat, dtype=np.float64)
    for la, lo, h, s_lat, s_lon in MOUNTAINS:
        dlon = ((lon180 - lo + 180.0) % 360.0) - 180.0
        height += h * np.exp(-(((lat - la) / s_lat) ** 2) / 2 - (dlon / s_lon) ** 2 / 2)
    return height + _ice_sheet_m(lat)


def _ice_sheet_m(lat: np.ndarray) -> np.ndarray:
    """The Antarctic ice sheet's height (m), rising from 66°S to its plateau at 78°S."""
    return _ICE_SHEET_M * np.clip((-lat - 66.0) / 12.0, 0, 1)


_FLAG_NAMES = ("crain", "csnow", "cfrzr", "cicep")


def _phase_flags(temp_c: np.ndarray, rate_mmh: np.ndarray) -> dict[str, np.ndarray]:
    """GFS categorical flags (0/1) where precipitation falls: snow when cold, rain when warm,
    freezing rain or ice pellets in between."""
    falling = rate_mmh >= 0.05
    snow = falling & (temp_c <= SNOW_ALL_C)
    rain = falling & (temp_c >= RAIN_ALL_C)
    between = falling & ~snow & ~rain
    return {
        "crain": rain | (between & (temp_c > 0.5)),
        "csnow": snow | (between & (temp_c < -0.5)),
        "cfrzr": between & (temp_c <= 0.5) & (temp_c >= -0.5),
        "cicep": np.zeros_like(falling),
    }
