"""What the CAMS Europe and CAMS global readers share: runs, grid axes, fields, time decoding.

A run is one model forecast or analysis (kind, reference time) on one grid: a forecast gives the
hours ahead of its date, an analysis (CAMS Europe) the analysed hours of its date, which take
precedence over any forecast of those hours. Each field of a run is one NetCDF
variable with its own lead hours (the Atmosphere Data Store serves CAMS global surface fields
hourly and model-level fields 3-hourly), read whole, normalised to (lead, ascending latitude,
longitude in [-180, 180) ascending), NaN where missing, in the area's units (µg/m³, grains/m³
or dimensionless).
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xarray as xr

from contract import HOUR_S
from pipeline.common import grid, netcdf3
from pipeline.common.io import InputError, naming

MISSING_AT_OR_BELOW = -999.0
FORECAST, ANALYSIS = "forecast", "analysis"
SUFFIXES = (".nc", ".nc4", ".netcdf")


@dataclass(frozen=True)
class Axes:
    """A run's grid: output axes and how file rows and columns map onto them."""

    lat: np.ndarray  # ascending
    lon: np.ndarray  # ascending, in [-180, 180)
    flip_lat: bool  # the file's latitudes descend
    columns: np.ndarray  # file column of each output column

    def same_grid(self, other: Axes) -> bool:
        """True when both describe the same cells."""
        return (
            self.lat.shape == other.lat.shape
            and self.lon.shape == other.lon.shape
            and np.allclose(self.lat, other.lat, atol=1e-4)
            and np.allclose(self.lon, other.lon, atol=1e-4)
        )


@dataclass(frozen=True)
class Field:
    """Where one variable of one run is stored."""

    path: Path
    variable: str  # NetCDF variable name
    select: dict  # dimension -> index (level, reference time)
    time_dim: str  # lead-time dimension
    lead_hours: np.ndarray  # int64, ascending: the steps along time_dim
    factor: float = 1.0  # to the area's units


@dataclass
class Run:
    """One model run of one domain."""

    domain: str
    reference_time: int  # Unix seconds
    axes: Axes
    kind: str = FORECAST  # FORECAST | ANALYSIS
    fields: dict[str, Field] = field(default_factory=dict)

    def span_s(self) -> tuple[int, int]:
        """Unix seconds of the first and the last hour any field of the run has."""
        fields = self.fields.values()
        return (
            self.reference_time + HOUR_S * min(int(f.lead_hours[0]) for f in fields),
            self.reference_time + HOUR_S * max(int(f.lead_hours[-1]) for f in fields),
        )

    def add(self, name: str, where: Field) -> None:
        """Record where the run's variable `name` is; twice is an InputError naming both."""
        if name in self.fields:
            raise InputError(
                where.path,
                f"{where.variable} of the {self.kind} of "
                f"{iso(self.reference_time)} is also in "
                f"{self.fields[name].path.name}",
            )
        self.fields[name] = where


RunKey = tuple[str, int]  # (kind, reference time)


def by_precedence(runs: dict[RunKey, Run], folder: Path, required: tuple[str, ...]) -> list[Run]:
    """Runs in stitching precedence: analyses, then forecasts, each newest first; checked."""
    # Forecasts give the hours ahead, analyses where available the hours past (an analysis
    # is the better value of an hour a forecast also covers).
    ordered = [runs[k] for k in sorted(runs, key=lambda k: (k[0] != ANALYSIS, -k[1]))]
    if not ordered:
        raise InputError(folder, "no CAMS variables found")
    newest = newest_forecast(ordered, folder)
    for run in ordered:
        if not run.axes.same_grid(newest.axes):
            raise InputError(
                next(iter(run.fields.values())).path, "grid differs from the newest forecast's"
            )
    missing = [v for v in required if not any(v in r.fields for r in ordered)]
    if missing:
        raise InputError(folder, f"no run provides {', '.join(missing)}")
    return ordered


def newest_forecast(runs: list[Run], folder: Path) -> Run:
    """The newest forecast run (the first hour served is its reference time)."""
    forecasts = [r for r in runs if r.kind == FORECAST]
    if not forecasts:
        raise InputError(
            folder,
            "only ANALYSIS files: a FORECAST run is needed for the hours "
            "ahead (analyses only add the hours past)",
        )
    return max(forecasts, key=lambda r: r.reference_time)


def scan(
    folder: Path,
    scratch: Path,
    add_file,
    required: tuple[str, ...],
    decode_timedelta: bool | None = None,
) -> list[Run]:
    """Every run in the folder's files (add_file(ds, path, runs) reads one), by precedence."""
    return by_precedence(collect(folder, scratch, add_file, decode_timedelta), folder, required)


def collect(
    folder: Path, scratch: Path, add_file, decode_timedelta: bool | None = None
) -> dict[RunKey, Run]:
    """Every run in the folder's files, unordered and not checked as a whole (the fetch
    checks one delivery, which may hold an analysis alone)."""
    runs: dict[RunKey, Run] = {}
    for path in netcdf_files(folder, scratch):
        with open_dataset(path, decode_timedelta) as ds:
            add_file(ds, path, runs)
    return runs


def known_variables(ds: xr.Dataset, variables, model: str, path: Path) -> list[str]:
    """The dataset's variables among `variables`; none at all is an InputError."""
    names = [v for v in variables if v in ds.data_vars]
    if not names:
        raise InputError(
            path, f"holds none of the {model} variables ({', '.join(sorted(variables))})"
        )
    return names


def run_of(
    runs: dict[RunKey, Run],
    domain: str,
    run_time: int,
    grid_axes: Axes,
    path: Path,
    kind: str = FORECAST,
) -> Run:
    """The run of that kind and reference time, created on first sight; one grid."""
    run = runs.setdefault((kind, run_time), Run(domain, run_time, grid_axes, kind))
    if not run.axes.same_grid(grid_axes):
        raise InputError(path, "the same run's files differ in grid")
    return run


def iso(unix_s: int) -> str:
    """A Unix time as ISO 8601 UTC."""
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def netcdf_files(folder: Path, scratch: Path) -> list[Path]:
    """The folder's NetCDF files, .zip members extracted into `scratch`; by name."""
    # The data stores deliver several files as one zip.
    files = []
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() in SUFFIXES and path.is_file():
            files.append(path)
        elif path.suffix.lower() == ".zip" and path.is_file():
            files.extend(_unzip(path, scratch))
    if not files:
        raise InputError(folder, "no NetCDF files (.nc, or .zip holding them)")
    return files


def _unzip(path: Path, scratch: Path) -> list[Path]:
    target = scratch / "unzipped" / path.stem
    out = []
    try:
        with zipfile.ZipFile(path) as archive:
            for number, member in enumerate(sorted(archive.namelist())):
                if Path(member).suffix.lower() in SUFFIXES:
                    # Member names are not trusted as paths: a plain numbered name.
                    dest = target / f"{number:03d}-{Path(member).name}"
                    _extract(archive, member, dest)
                    out.append(dest)
    except _Unreadable as exc:
        raise InputError(path, f"unreadable zip archive ({exc.__cause__})") from None
    except (zipfile.BadZipFile, EOFError) as exc:
        raise InputError(path, f"unreadable zip archive ({exc})") from None
    if not out:
        raise InputError(path, "the zip archive holds no NetCDF file")
    return out


class _Unreadable(Exception):
    """Reading the archive failed (as opposed to writing the copy, a full disk)."""


def _extract(archive: zipfile.ZipFile, member: str, dest: Path) -> None:
    """Copy one member to `dest`: a failed read blames the archive, a failed write the copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(member) as src, naming(dest), open(dest, "wb") as dst:
        while True:
            try:
                block = src.read(1 << 20)
            except (OSError, zlib.error) as exc:
                raise _Unreadable() from exc
            if not block:
                return
            dst.write(block)


def open_dataset(path: Path, decode_timedelta: bool | None = None) -> xr.Dataset:
    """Open lazily (values are read on access); unreadable files raise InputError."""
    netcdf3.check_complete(path)
    try:
        return xr.open_dataset(path, decode_timedelta=decode_timedelta, cache=False)
    except (OSError, ValueError, RuntimeError, TypeError) as exc:
        raise InputError(path, f"not a readable NetCDF file ({type(exc).__name__})") from None


def axes(ds: xr.Dataset, path: Path) -> Axes:
    """The grid of a dataset with 1-D latitude and longitude coordinates in any order."""
    for name in ("latitude", "longitude"):
        if name not in ds.variables or ds[name].ndim != 1:
            raise InputError(path, f"needs a 1-D {name} coordinate")
    lat = np.asarray(ds["latitude"].values, dtype=np.float64)
    grid.check_finite(path, latitude=lat, longitude=ds["longitude"].values)
    flip = bool(lat.size > 1 and lat[0] > lat[-1])
    lat = lat[::-1] if flip else lat
    grid.regular_axis(lat, "latitude", path)
    lon, columns = grid.lon_order(np.asarray(ds["longitude"].values, dtype=np.float64))
    grid.regular_axis(lon, "longitude", path)
    return Axes(lat, lon, flip, columns)


def lead_hours(values: np.ndarray, path: Path, what: str) -> np.ndarray:
    """Lead times as whole hours, from numbers of hours or decoded timedeltas."""
    values = np.asarray(values)
    if np.issubdtype(values.dtype, np.timedelta64):
        hours = values / np.timedelta64(1, "h")
    elif np.issubdtype(values.dtype, np.number):
        hours = values.astype(np.float64)
    else:
        raise InputError(path, f"{what} is neither hours nor a time difference")
    if hours.size == 0 or np.any(~np.isfinite(hours)) or np.any(hours != np.round(hours)):
        raise InputError(path, f"{what} must be whole hours")
    hours = hours.astype(np.int64)
    if np.any(np.diff(hours) <= 0):
        raise InputError(path, f"{what} must increase")
    return hours


def unix_seconds(value: np.datetime64) -> int:
    """A datetime64 as Unix seconds."""
    return int(np.datetime64(value, "s").astype(np.int64))


def date_stamp(text: str) -> int | None:
    """Unix seconds of the first YYYYMMDD in `text` (00 UTC), or None."""
    match = re.search(r"(?<!\d)(\d{8})(?!\d)", text or "")
    if not match:
        return None
    try:
        day = datetime.strptime(match.group(1), "%Y%m%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return int(day.timestamp())


def level_selection(ds: xr.Dataset, variable: str, dim: str, wanted: float, path: Path) -> dict:
    """{dim: index of the level `wanted`} when the variable has that dimension, else {}."""
    if dim not in ds[variable].dims:
        return {}
    levels = np.asarray(ds[dim].values if dim in ds.variables else np.arange(ds.sizes[dim]))
    hits = np.flatnonzero(np.isclose(levels.astype(np.float64), wanted))
    if not len(hits):
        raise InputError(path, f"{variable}: no {dim} {wanted:g} (has {levels.tolist()[:8]})")
    return {dim: int(hits[0])}


def check_dims(ds: xr.Dataset, variable: str, expected: set[str], path: Path) -> None:
    """The variable has exactly the expected dimensions (in any order)."""
    dims = set(ds[variable].dims)
    if dims != expected:
        raise InputError(
            path, f"{variable} has dimensions {sorted(dims)}, expected {sorted(expected)}"
        )


def read_field(
    run: Run,
    name: str,
    decode_timedelta: bool | None = None,
    rows: tuple[int, int] | None = None,
) -> np.ndarray:
    """One field of a run, (lead, lat, lon) float32, normalised, or only its output `rows`
    [a, b) (ascending latitudes). Whether a required field has a value anywhere is the
    caller's to check, over all its rows (missing_values words the error)."""
    # Values at or below -999 (and fill values) are NaN; small negative model values are 0.
    where = run.fields[name]
    nlat = len(run.axes.lat)
    a, b = rows if rows is not None else (0, nlat)
    # The file's rows of output rows [a, b): counted from the other end when it descends.
    file_rows = slice(nlat - b, nlat - a) if run.axes.flip_lat else slice(a, b)
    with open_dataset(where.path, decode_timedelta) as ds:
        var = ds[where.variable].isel(where.select).isel(latitude=file_rows)
        var = var.transpose(where.time_dim, "latitude", "longitude")
        try:
            data = np.asarray(var.values, dtype=np.float32)
        except (OSError, RuntimeError, ValueError) as exc:
            raise InputError(where.path, f"{where.variable}: unreadable ({exc})") from None
    data[data <= MISSING_AT_OR_BELOW] = np.nan
    if run.axes.flip_lat:
        data = data[:, ::-1]
    if not np.array_equal(run.axes.columns, np.arange(data.shape[2])):
        data = data[:, :, run.axes.columns]
    data = np.ascontiguousarray(data)
    if where.factor != 1.0:
        data *= np.float32(where.factor)
    np.maximum(data, 0.0, out=data)  # NaN stays NaN
    return data


def missing_values(run: Run, name: str) -> InputError:
    """The error of a required field with no value anywhere."""
    where = run.fields[name]
    return InputError(
        where.path,
        f"{where.variable} of the {run.kind} of "
        f"{iso(run.reference_time)} has no values (every value "
        "is missing)",
    )


def check_units(ds: xr.Dataset, variable: str, mass: str, path: Path) -> None:
    """Refuse a units string that plainly says another quantity ("kg" or "µg")."""
    units = str(ds[variable].attrs.get("units", "")).strip()
    says_kg = "kg" in units
    if units and (says_kg if mass == "ug" else not says_kg):
        expected = "µg/m³" if mass == "ug" else "kg m**-3 or kg kg**-1"
        raise InputError(path, f"{variable} has units {units!r}, expected {expected}")
