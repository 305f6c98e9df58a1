"""Small forecast inputs in the real formats, written with xarray as cfgrib users save them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import xarray as xr

HOUR = 3600
# cfgrib names and GRIB-style units of the fields tests write, and constant values in them.
UNITS = {
    "t2m": "K",
    "d2m": "K",
    "r2": "%",
    "u10": "m s**-1",
    "v10": "m s**-1",
    "prmsl": "Pa",
    "msl": "Pa",
    "tcc": "%",
    "prate": "kg m**-2 s**-1",
    "tp": "kg m**-2",
    "vis": "m",
    "gust": "m s**-1",
    "orog": "m",
    "crain": "Code table 4.222",
    "csnow": "Code table 4.222",
    "cfrzr": "Code table 4.222",
    "cicep": "Code table 4.222",
    "ptype": "Code table 4.201",
    "cape": "J kg**-1",
}
# 20 °C, dewpoint 10 °C, wind u=3 v=4 m/s, 50 % cloud, no rain, 1013.25 hPa, 20 km visibility.
KNOWN = {
    "t2m": 293.15,
    "d2m": 283.15,
    "u10": 3.0,
    "v10": 4.0,
    "prmsl": 101325.0,
    "tcc": 50.0,
    "prate": 0.0,
    "vis": 20000.0,
    "gust": 8.0,
    "orog": 400.0,
    "crain": 0.0,
    "csnow": 0.0,
    "cfrzr": 0.0,
    "cicep": 0.0,
}


def last_run(now_s: float | None = None, cycle_h: int = 6) -> int:
    """The last 00/06/12/18 UTC run time at or before now."""
    now_s = time.time() if now_s is None else now_s
    return int(now_s // (cycle_h * HOUR) * cycle_h * HOUR)


def global_axes(
    step_deg: float, descending: bool = True, lon_0_360: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """GFS-style axes (latitude 90 -> -90, longitude 0 -> 360) or their alternatives."""
    lat = np.linspace(90, -90, int(round(180 / step_deg)) + 1)
    lon = np.arange(int(round(360 / step_deg))) * step_deg
    if not lon_0_360:
        lon = lon - 180.0
    return (lat if descending else lat[::-1]), lon


def field(value, valid_s: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """A (time, lat, lon) float32 array: a constant, or value(valid_s, lat2d, lon2d) per step."""
    if callable(value):
        la, lo = np.meshgrid(lat, lon, indexing="ij")
        return np.stack([value(int(t), la, lo) for t in valid_s]).astype(np.float32)
    return np.full((len(valid_s), len(lat), len(lon)), value, dtype=np.float32)


def write_step_file(
    path: Path,
    run_s: int,
    steps_h,
    lat,
    lon,
    fields: dict,
    units: dict | None = None,
    attrs: dict | None = None,
    step_types: dict | None = None,
) -> Path:
    """cfgrib's layout: step (timedelta) x latitude x longitude, the run time in `time`;
    step_types gives a field's GRIB_stepType (e.g. avg) where it is not instant."""
    steps_h = np.asarray(steps_h)
    valid = run_s + steps_h * HOUR
    units = {**UNITS, **(units or {})}
    data = {
        name: (
            ("step", "latitude", "longitude"),
            field(value, valid, lat, lon),
            {
                "units": units[name],
                "GRIB_shortName": name,
                "GRIB_stepType": (step_types or {}).get(name, "instant"),
            },
        )
        for name, value in fields.items()
    }
    ds = xr.Dataset(
        data,
        coords={
            "time": np.datetime64(run_s, "s").astype("datetime64[ns]"),
            "step": (steps_h * HOUR * 1_000_000_000).astype("timedelta64[ns]"),
            "latitude": ("latitude", lat, {"units": "degrees_north"}),
            "longitude": ("longitude", lon, {"units": "degrees_east"}),
            "valid_time": ("step", (valid * 1_000_000_000).astype("datetime64[ns]")),
        },
        attrs={"GRIB_centre": "kwbc", "Conventions": "CF-1.7", **(attrs or {})},
    )
    ds["time"].attrs.update(standard_name="forecast_reference_time")
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path)
    return path


def write_time_file(
    path: Path,
    run_s: int | None,
    valid_s,
    lat,
    lon,
    fields: dict,
    units: dict | None = None,
    attrs: dict | None = None,
) -> Path:
    """A `time` dimension of valid times; the run time (when given) in a
    forecast_reference_time coordinate. wgrib2 -netcdf names work here too."""
    valid_s = np.asarray(valid_s)
    units = {**UNITS, **(units or {})}
    data = {
        name: (
            ("time", "latitude", "longitude"),
            field(value, valid_s, lat, lon),
            {"units": units.get(name, "")},
        )
        for name, value in fields.items()
    }
    coords = {
        "time": ("time", (valid_s * 1_000_000_000).astype("datetime64[ns]")),
        "latitude": ("latitude", lat),
        "longitude": ("longitude", lon),
    }
    if run_s is not None:
        coords["reference_time"] = (
            (),
            np.datetime64(run_s, "s").astype("datetime64[ns]"),
            {"standard_name": "forecast_reference_time"},
        )
    ds = xr.Dataset(data, coords=coords, attrs=attrs or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.to_netcdf(path)
    return path


def gfs_steps(horizon_h: int) -> list[int]:
    """Hourly to 120 h, then 3-hourly."""
    return list(range(0, min(horizon_h, 120) + 1)) + list(range(123, horizon_h + 1, 3))


# The step files cfgrib writes for a GFS run, one per kind of level, and their fields.
GFS_FILES = {
    "heightAboveGround2": ("t2m", "d2m"),
    "heightAboveGround10": ("u10", "v10"),
    "meanSea": ("prmsl",),
    "atmosphere": ("tcc",),
    "surface": ("prate", "vis", "gust", "orog", "crain", "csnow", "cfrzr", "cicep", "cape"),
}


def write_gfs_run(
    folder: Path, run_s: int, horizon_h: int, fields: dict, step_deg: float = 10.0
) -> Path:
    """A GFS run on a global grid as cfgrib writes it (gfs.<level>.nc step files) with the
    given fields (values or functions of time, lat, lon); FOLDER."""
    lat, lon = global_axes(step_deg)
    for level, names in GFS_FILES.items():
        write_step_file(
            folder / f"gfs.{level}.nc",
            run_s,
            gfs_steps(horizon_h),
            lat,
            lon,
            {n: fields[n] for n in names if n in fields},
        )
    return folder


def nws_alert(
    ident: str,
    event: str,
    ring_lonlat: list,
    onset: str,
    ends: str | None,
    severity: str = "Severe",
    area: str = "Test County; Other County",
) -> dict:
    """One NWS-style GeoJSON feature."""
    return {
        "id": f"https://api.weather.gov/alerts/{ident}",
        "type": "Feature",
        "geometry": {"type": "Polygon", "coordinates": [ring_lonlat]},
        "properties": {
            "@id": f"https://api.weather.gov/alerts/{ident}",
            "id": ident,
            "areaDesc": area,
            "onset": onset,
            "ends": ends,
            "expires": ends,
            "status": "Actual",
            "messageType": "Alert",
            "severity": severity,
            "event": event,
            "headline": f"{event} issued",
            "description": f"{event} description.",
            "instruction": "Take care.",
        },
    }


def write_nws(path: Path, features: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return path


CAP = """<?xml version="1.0" encoding="UTF-8"?>
<alert xmlns="urn:oasis:names:tc:emergency:cap:1.2">
  <identifier>{ident}</identifier><sender>test@example.org</sender><sent>{sent}</sent>
  <status>Actual</status><msgType>Alert</msgType><scope>Public</scope>
  <info>
    <language>de-CH</language><category>Met</category><event>Sturm</event>
    <urgency>Expected</urgency><severity>Moderate</severity><certainty>Likely</certainty>
    <onset>{onset}</onset><expires>{expires}</expires><headline>Sturmwarnung</headline>
    <description>Starker Wind.</description>
    <area><areaDesc>Kreis</areaDesc><circle>{circle}</circle></area>
  </info>
  <info>
    <language>en-GB</language><category>Met</category><event>Gale warning</event>
    <urgency>Expected</urgency><severity>Moderate</severity><certainty>Likely</certainty>
    <onset>{onset}</onset><expires>{expires}</expires><headline>Gale</headline>
    <description>Strong wind.</description><web>https://example.org/gale</web>
    <area><areaDesc>Circle around the lake</areaDesc><circle>{circle}</circle></area>
    <area><areaDesc>Polygon area</areaDesc><polygon>{polygon}</polygon></area>
  </info>
</alert>
"""


def write_cap(path: Path, circle: str, polygon: str) -> Path:
    """The CAP alert cap-1 (2030-01-01, a day long) with a circle and a polygon area."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        CAP.format(
            ident="cap-1",
            sent="2030-01-01T00:00:00+00:00",
            onset="2030-01-01T00:00:00+00:00",
            expires="2030-01-02T00:00:00+00:00",
            circle=circle,
            polygon=polygon,
        )
    )
    return path
