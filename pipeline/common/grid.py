"""Point-major grid writer (contract.Grid): model fields in, one memory-mappable series file out."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import contract
from pipeline.common import bands
from pipeline.common.io import InputError, naming

# Read the source in bands of latitude rows so memory stays bounded for global 0.25° runs:
# a band's computation peaks at about 4 times its bytes (python -m bench.dask_ingest).
BAND_BYTES = 128 * 1024 * 1024


def lon_order(lon_deg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitudes folded into [-180, 180) and the column order that sorts them ascending."""
    folded = ((np.asarray(lon_deg, dtype=np.float64) + 180.0) % 360.0) - 180.0
    order = np.argsort(folded, kind="stable")
    return folded[order], order


def pole_column(lon_deg: np.ndarray) -> int:
    """The column nearest contract.Grid.POLE_LON (longitudes in degrees, any convention)."""
    east = (np.asarray(lon_deg, dtype=np.float64) - contract.Grid.POLE_LON) % 360.0
    return int(np.argmin(np.minimum(east, 360.0 - east)))


def one_point_poles(band: np.ndarray, lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    """`band` (..., rows, nlon) with each pole row (latitude ±90) set in place to its value
    at POLE_LON in every column: a pole is one point, whatever a model wrote along its row
    (winds there are then given in the axes of the POLE_LON meridian, as the server reads a
    pole), so answers near a pole converge to the pole's own."""
    rows = np.flatnonzero(np.abs(np.abs(np.asarray(lat_deg, dtype=np.float64)) - 90.0) < 1e-6)
    if len(rows):
        j = pole_column(lon_deg)
        band[..., rows, :] = band[..., rows, j : j + 1]
    return band


# Coordinates stored as float32 (as CAMS does) are off by up to ~3e-5 degrees; a grid's origin
# and ends are snapped to 1e-4 degrees when that close, so the step comes out exact (0.1, not
# 0.099998, whose error grows to a cell's width across the domain).
SNAP_DEG, SNAP_TOLERANCE_DEG = 4, 5e-5


def _snapped(value: float) -> float:
    nearest = round(value, SNAP_DEG)
    return nearest if abs(value - nearest) <= SNAP_TOLERANCE_DEG else value


def check_finite(path: Path | str, **axes: np.ndarray) -> None:
    """InputError naming the first axis (by keyword) holding NaN or infinity."""
    # NaN compares unequal to itself, so a later "same grid" check would blame the wrong thing.
    for name, values in axes.items():
        if not np.isfinite(np.asarray(values, dtype=np.float64)).all():
            raise InputError(
                path, f"{name} coordinates are not all finite numbers (NaN or infinity)"
            )


def regular_axis(values: np.ndarray, name: str, path: Path | str) -> tuple[float, float]:
    """(first, step) of an ascending, evenly spaced axis; raises InputError otherwise."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        raise InputError(path, f"{name} needs at least two values, got {values.size}")
    steps = np.diff(values)
    first, last = _snapped(float(values[0])), _snapped(float(values[-1]))
    step = (last - first) / (values.size - 1)
    if step <= 0 or not np.allclose(steps, step, rtol=0, atol=abs(step) * 1e-3):
        raise InputError(path, f"{name} is not a regular ascending grid axis")
    return first, round(step, 9)


def spec(
    file: str,
    lat: np.ndarray,
    lon: np.ndarray,
    time0: int,
    dt_s: int,
    ntime: int,
    variables: list[str],
    path: Path | str = "",
) -> dict:
    """The manifest spec of a grid with ascending `lat` and `lon` (lon in [-180, 180))."""
    lat0, dlat = regular_axis(lat, "latitude", path)
    lon0, dlon = regular_axis(lon, "longitude", path)
    wraps = bool(abs(len(lon) * dlon - 360.0) < dlon * 1e-3)
    return {
        "file": file,
        "lat0": round(lat0, 6),
        "dlat": round(dlat, 6),
        "nlat": len(lat),
        "lon0": round(lon0, 6),
        "dlon": round(dlon, 6),
        "nlon": len(lon),
        "wraps": wraps,
        "time0": int(time0),
        "dt_s": int(dt_s),
        "ntime": int(ntime),
        "variables": list(variables),
        "dtype": "float32",
    }


def band_rows(row_bytes: int, band_bytes: int | None = None) -> int:
    """Rows a band of rows of `row_bytes` each: the build's setting (pipeline.common.bands),
    else as many as fit in `band_bytes` (default: the setting's, else BAND_BYTES)."""
    settings = bands.current()
    band_bytes = band_bytes or settings.band_bytes or BAND_BYTES
    return settings.band_rows or max(1, band_bytes // max(1, row_bytes))


def write(
    version: Path,
    grid: dict,
    read_band: Callable[[int, int], Any],
    band_bytes: int | None = None,
) -> list[Any]:
    """Write grid["file"] under `version` band by band; the facts of each band, in order.

    read_band(row_start, row_stop) returns float values of shape
    (nvar, ntime, row_stop - row_start, nlon) for those ascending latitude rows (any float
    dtype, NaN for unknown), or (values, facts); they are stored transposed to
    (rows, nlon, ntime, nvar). The bands are computed where pipeline.common.bands says (in
    this process unless a build runs on dask), so read_band must then be picklable.
    """
    assert set(contract.Grid.SPEC_KEYS) <= set(grid), "incomplete grid spec"
    nlat, nlon, ntime, nvar = grid["nlat"], grid["nlon"], grid["ntime"], len(grid["variables"])
    path = version / grid["file"]
    path.parent.mkdir(parents=True, exist_ok=True)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header,
        {
            "descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
            "fortran_order": False,
            "shape": (nlat, nlon, ntime, nvar),
        },
    )
    rows_per_band = band_rows(nlon * ntime * nvar * 4, band_bytes)
    ranges = [(a, min(nlat, a + rows_per_band)) for a in range(0, nlat, rows_per_band)]
    facts = []
    with naming(path), open(path, "wb") as handle:
        handle.write(header.getvalue())
        for (start, stop), result in zip(ranges, bands.compute(read_band, ranges)):
            values, fact = result if isinstance(result, tuple) else (result, None)
            band = np.asarray(values)
            expected = (nvar, ntime, stop - start, nlon)
            if band.shape != expected:
                raise ValueError(f"read_band({start}, {stop}) gave {band.shape}, not {expected}")
            block = np.ascontiguousarray(band.transpose(2, 3, 1, 0), dtype=np.float32)
            handle.write(memoryview(block).cast("B"))  # written as it is, no copy to bytes
            facts.append(fact)
            del values, band, result, block  # before the next band arrives
    return facts
