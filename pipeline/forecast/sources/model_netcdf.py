"""Forecast model runs in NetCDF: find the fields, their runs, valid times, units and grid.

Reads what cfgrib gives for GFS and ECMWF open data (saved with xarray) and what
`wgrib2 -netcdf` writes, through one table of names (model_fields.FIELDS). A file may hold
any subset of the fields; a run may be split over several files (by level type, variable or
step range); several runs may be present. Time is either a `step` dimension (timedelta) with
the run time in a scalar `time`, or a `time` dimension of valid times with the run time in a
coordinate whose standard_name is forecast_reference_time (else the first valid time is the
run time).
Latitude may run either way, longitude 0-360 or -180-180. Nothing assumes a grid size.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.common import grid, netcdf3
from pipeline.common.io import InputError
from pipeline.forecast import units
from pipeline.forecast.sources.model_fields import FIELDS

log = logging.getLogger("pipeline.forecast")
SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf")

NAME_TO_FIELD = {name: f for f, spec in FIELDS.items() for name in spec.netcdf}
PREFERENCE = {name: rank for spec in FIELDS.values() for rank, name in enumerate(spec.netcdf)}
WGRIB2_NAMES = {name for spec in FIELDS.values() for name in spec.netcdf if "_" in name}
LATITUDE, LONGITUDE = ("latitude", "lat"), ("longitude", "lon")
# GRIB centre (cfgrib's GRIB_centre) or words of a CF `institution` -> model
CENTRES = {"kwbc": "gfs", "ecmf": "ecmwf-ifs"}
INSTITUTIONS = {
    "ncep": "gfs",
    "national weather service": "gfs",
    "ecmwf": "ecmwf-ifs",
    "european centre": "ecmwf-ifs",
}


@dataclass
class Piece:
    """One field of one run in one file: a lazy array (time, file latitude, longitude)."""

    path: Path
    name: str
    field: str
    array: xr.DataArray
    factor: float
    offset: float
    run_s: int
    times_s: np.ndarray | None  # valid times (ascending, unique), None without time
    lat_descending: bool
    lon_order: np.ndarray
    averaged: bool = False  # values are means over the step's bucket (GFS prate)

    def read(self, row_start: int, row_stop: int) -> np.ndarray:
        """Rows [row_start, row_stop) of the ascending grid, longitudes sorted, SI units:
        shape (ntime, rows, nlon) (ntime 1 for a field without time)."""
        nlat = self.array.sizes[self.array.dims[-2]]
        if self.lat_descending:
            rows = slice(nlat - row_stop, nlat - row_start)
        else:
            rows = slice(row_start, row_stop)
        try:
            values = self.array[..., rows, :].values
        except (OSError, RuntimeError, ValueError) as exc:
            raise InputError(self.path, f"cannot read {self.name}: {exc}") from None
        if self.lat_descending:
            values = values[..., ::-1, :]
        values = np.take(values, self.lon_order, axis=-1)
        values = units.apply(values, self.factor, self.offset)
        return values.reshape((-1,) + values.shape[-2:])


@dataclass
class Run:
    """The pieces of one model run, by field, each field's pieces in time order."""

    run_s: int
    pieces: dict[str, list[Piece]] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)  # of its files (see _model)

    def times(self, name: str) -> np.ndarray:
        """Valid times of a field over all its pieces (unique, ascending)."""
        return np.unique(np.concatenate([p.times_s for p in self.pieces[name]]))

    def read(self, name: str, row_start: int, row_stop: int) -> np.ndarray:
        """A field's values at times(name) for the rows (a later file wins a repeated time)."""
        blocks = [p.read(row_start, row_stop) for p in self.pieces[name]]
        if len(blocks) == 1:
            return blocks[0]
        times = np.concatenate([p.times_s for p in self.pieces[name]])
        stacked = np.concatenate(blocks)
        order = np.argsort(times, kind="stable")[::-1]  # last occurrence first
        _, first = np.unique(times[order], return_index=True)
        return stacked[order[first]]


@dataclass
class Scan:
    """Everything found in the input files."""

    lat: np.ndarray  # ascending
    lon: np.ndarray  # sorted, in [-180, 180)
    runs: list[Run]  # oldest first
    orography: Piece | None
    centre: str
    files: list[Path]


def find_files(folder: Path) -> list[Path]:
    """NetCDF files under the folder, in path order."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)


def scan(files: list[Path], stack: contextlib.ExitStack) -> Scan:
    """Open every file (kept open on `stack`) and sort its fields into runs."""
    if not files:
        raise InputError("forecast/", "no NetCDF files (*.nc) found")
    runs: dict[int, Run] = {}
    orography: Piece | None = None
    axes: tuple[np.ndarray, np.ndarray, Path] | None = None
    for path in files:
        ds = _open(path, stack)
        model = _model(ds)
        for name in ds.data_vars:
            if name not in NAME_TO_FIELD:
                continue
            for piece in _pieces(path, ds, str(name)):
                lat, lon = _axes(ds, path)
                if axes is None:
                    axes = (lat, lon, path)
                elif (
                    lat.shape != axes[0].shape
                    or lon.shape != axes[1].shape
                    or not (np.allclose(lat, axes[0]) and np.allclose(lon, axes[1]))
                ):
                    raise InputError(
                        path,
                        f"{name} is on another grid than {axes[2].name}; "
                        "all fields must share one grid",
                    )
                if piece.field == "orog":  # static, or the same height repeated at each step
                    if orography is None or PREFERENCE[name] < PREFERENCE[orography.name]:
                        orography = piece
                    continue
                if piece.times_s is None:
                    raise InputError(
                        path,
                        f"{name} has no time dimension (only the "
                        "orography may be time-independent)",
                    )
                run = runs.setdefault(piece.run_s, Run(piece.run_s))
                run.pieces.setdefault(piece.field, []).append(piece)
                run.models.add(model)
    if axes is None or not runs:
        raise InputError(
            files[0].parent,
            "no forecast fields (t2m, u10, ...) in the NetCDF "
            "files; see pipeline/forecast/sources/model_fields.py",
        )
    for run in runs.values():
        for name, pieces in run.pieces.items():
            run.pieces[name] = _merge_order(pieces)
    return Scan(
        lat=axes[0],
        lon=axes[1],
        runs=[runs[k] for k in sorted(runs)],
        orography=orography,
        centre="+".join(sorted(set().union(*(r.models for r in runs.values())))),
        files=files,
    )


def _merge_order(pieces: list[Piece]) -> list[Piece]:
    """A field's pieces of one run in merge order (Run.read: the last wins a repeated time):
    less preferred names first (FIELDS: prmsl before mslet), so the preferred one wins every
    time it has and the other fills only the times it lacks; by time and path within a name."""
    return sorted(pieces, key=lambda p: (-PREFERENCE[p.name], int(p.times_s[0]), str(p.path)))


def _model(ds: xr.Dataset) -> str:
    """The model of a file: its GRIB centre (cfgrib), else its CF institution, else GFS for
    wgrib2's names (wgrib2 -netcdf writes no centre; the names are NCEP's), else 'model'."""
    centre = str(ds.attrs.get("GRIB_centre", "")).strip().lower()
    if centre:
        return CENTRES.get(centre, centre)
    institution = str(ds.attrs.get("institution", "")).strip()
    if institution:
        return next(
            (m for words, m in INSTITUTIONS.items() if words in institution.lower()), institution
        )
    return "gfs" if any(name in WGRIB2_NAMES for name in ds.data_vars) else "model"


def _open(path: Path, stack: contextlib.ExitStack) -> xr.Dataset:
    netcdf3.check_complete(path)
    try:
        ds = xr.open_dataset(
            path, decode_times=True, decode_timedelta=True, cache=False, mask_and_scale=True
        )
    except Exception as exc:  # noqa: BLE001 (netCDF4, h5py, xarray: many types for a bad file)
        raise InputError(path, f"not a readable NetCDF file ({type(exc).__name__})") from None
    stack.callback(ds.close)
    return ds


def _axes(ds: xr.Dataset, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The ascending latitudes and the sorted longitudes in [-180, 180)."""
    lat_name = next((n for n in LATITUDE if n in ds.coords or n in ds.variables), None)
    lon_name = next((n for n in LONGITUDE if n in ds.coords or n in ds.variables), None)
    if lat_name is None or lon_name is None:
        raise InputError(path, "no latitude/longitude coordinates")
    lat = np.asarray(ds[lat_name].values, dtype=np.float64)
    lon, _ = grid.lon_order(ds[lon_name].values)
    if lat.ndim != 1 or lon.ndim != 1:
        raise InputError(path, "latitude and longitude must be 1-D (a regular grid)")
    grid.check_finite(path, latitude=lat, longitude=lon)
    return np.sort(lat), lon


def _pieces(path: Path, ds: xr.Dataset, name: str) -> list[Piece]:
    """The variable split by run: its dims become (time, latitude, longitude)."""
    da = ds[name]
    fld = NAME_TO_FIELD[name]
    quantity = FIELDS[fld].quantity
    raw_unit = str(da.attrs.get("units", ""))
    if quantity == "fraction" and not raw_unit.strip():
        raise InputError(
            path,
            f"{name} has no units attribute: say whether it is in percent "
            "('%') or a fraction 0-1 ('1')",
        )
    conversion = units.converter(quantity, raw_unit)
    if conversion is None:
        raise InputError(
            path,
            f"{name}: unit {raw_unit!r} is not one of "
            f"{', '.join(repr(u) for u in units.CONVERSIONS[quantity])}",
        )
    lat_dim = next((d for d in da.dims if d in LATITUDE), None)
    lon_dim = next((d for d in da.dims if d in LONGITUDE), None)
    if lat_dim is None or lon_dim is None:
        raise InputError(path, f"{name} has no latitude/longitude dimensions")
    extra = [d for d in da.dims if d not in (lat_dim, lon_dim, "step", "time")]
    for dim in extra:
        if da.sizes[dim] != 1:
            log.info(
                "%s: skipping %s (dimension %s of size %d)", path.name, name, dim, da.sizes[dim]
            )
            return []
    da = da.isel({d: 0 for d in extra})
    lat = np.asarray(ds[lat_dim].values, dtype=np.float64)
    _, lon_order = grid.lon_order(ds[lon_dim].values)
    common = dict(
        path=path,
        name=name,
        field=fld,
        factor=conversion[0],
        offset=conversion[1],
        lat_descending=bool(lat.size > 1 and lat[0] > lat[-1]),
        lon_order=lon_order,
        averaged=_averaged(da),
    )
    if "step" in da.dims:
        return _step_pieces(path, ds, da, lat_dim, lon_dim, common)
    if "time" in da.dims:
        return _time_pieces(path, ds, da, lat_dim, lon_dim, common)
    return [Piece(array=da.transpose(lat_dim, lon_dim), run_s=0, times_s=None, **common)]


def _averaged(da: xr.DataArray) -> bool:
    """True for a time mean: cfgrib's GRIB_stepType avg, or CF cell_methods 'time: mean'."""
    methods = str(da.attrs.get("cell_methods", "")).replace(" ", "")
    return str(da.attrs.get("GRIB_stepType", "")).lower() == "avg" or "time:mean" in methods


def _seconds(values, path: Path, what: str) -> np.ndarray:
    array = np.asarray(values)
    if np.issubdtype(array.dtype, np.datetime64) or np.issubdtype(array.dtype, np.timedelta64):
        missing = np.flatnonzero(np.isnat(array))
        if missing.size:  # NaT would become -2**63 s and shift or blank the whole series
            raise InputError(
                path,
                f"{what} has {missing.size} missing value(s) (NaT), the "
                f"first at index {missing[0]}",
            )
        unit = "datetime64[s]" if np.issubdtype(array.dtype, np.datetime64) else "timedelta64[s]"
        return array.astype(unit).astype(np.int64)
    raise InputError(
        path,
        f"{what} is not a decodable time (units such as 'hours' or "
        "'seconds since 1970-01-01' are needed)",
    )


def _last_of_each(times: np.ndarray) -> np.ndarray:
    """Indices of the times in ascending order, a repeated time by its last occurrence (as a
    later file wins a repeated time, so does a later entry of one file)."""
    _, first_reversed = np.unique(times[::-1], return_index=True)
    return len(times) - 1 - first_reversed


def _take(da: xr.DataArray, dim: str, index: np.ndarray) -> xr.DataArray:
    """da at the indices of dim, lazily; da itself when they are all of them in order (the
    usual case: its reads stay contiguous)."""
    if np.array_equal(index, np.arange(da.sizes[dim])):
        return da
    return da.isel({dim: index})


def _step_pieces(path, ds, da, lat_dim, lon_dim, common) -> list[Piece]:
    """cfgrib layout: step (lead time) with the run time in `time` (a scalar, or a dimension
    when the file holds several runs)."""
    if "time" not in ds.variables:
        raise InputError(
            path, f"{common['name']} has a step dimension but no run time variable `time`"
        )
    steps = _seconds(ds["step"].values, path, "step")
    runs = np.atleast_1d(_seconds(ds["time"].values, path, "time"))
    order = _last_of_each(steps)
    da = _take(da, "step", order)
    pieces = []
    for i, run_s in enumerate(runs):
        array = da.isel(time=i) if "time" in da.dims else da
        pieces.append(
            Piece(
                array=array.transpose("step", lat_dim, lon_dim),
                run_s=int(run_s),
                times_s=int(run_s) + steps[order],
                **common,
            )
        )
    return pieces


def _time_pieces(path, ds, da, lat_dim, lon_dim, common) -> list[Piece]:
    """A `time` dimension of valid times; the run time from a forecast_reference_time
    coordinate (per time when several runs are concatenated), else the first valid time."""
    valid = _seconds(ds["time"].values, path, "time")
    run_of = _reference_times(path, ds, valid)
    pieces = []
    for run_s in np.unique(run_of):
        index = np.flatnonzero(run_of == run_s)
        order = index[_last_of_each(valid[index])]
        array = _take(da, "time", order).transpose("time", lat_dim, lon_dim)
        pieces.append(Piece(array=array, run_s=int(run_s), times_s=valid[order], **common))
    return pieces


def _reference_times(path: Path, ds: xr.Dataset, valid: np.ndarray) -> np.ndarray:
    """The run time of each valid time: the forecast_reference_time coordinate (a scalar, one
    per time, or one value on another dimension), else the first valid time."""
    name, reference = next(
        (
            (n, v)
            for n, v in ds.variables.items()
            if v.attrs.get("standard_name") == "forecast_reference_time" and n != "time"
        ),
        (None, None),
    )
    if reference is None:
        return np.full(valid.shape, valid.min())
    runs = _seconds(reference.values, path, "forecast_reference_time")
    if reference.dims == ("time",):
        return runs
    if np.unique(runs).size != 1:  # which valid time belongs to which run is not said
        raise InputError(
            path,
            f"forecast_reference_time {name} has {runs.size} different "
            f"values along {', '.join(map(str, reference.dims))}, not along "
            "time: give one run time, or one per valid time",
        )
    return np.full(valid.shape, runs.flat[0])
