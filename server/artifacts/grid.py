"""Point reads from a point-major grid file (contract.Grid): bilinear, NaN-aware."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

import contract
from server.artifacts.mapped import ByteFile, npy_layout


# Float rounding of lat0 + n * dlat must not put a domain's own edge (72°N for CAMS Europe)
# outside it.
EDGE_DEG = 1e-9
# Every longitude of a pole names one point: a pole is read (and located) at this longitude,
# so that its answer does not depend on the longitude asked for (a model's pole row, and the
# timezone polygons, need not agree along it).
POLE_LON = contract.Grid.POLE_LON


def point_lon(lat: float, lon: float) -> float:
    """The longitude a point's values and timezone are taken at: POLE_LON at a pole, 180 for
    -180 (one meridian: the nautical zones either side of it are a day apart)."""
    if abs(lat) >= 90.0:
        return POLE_LON
    return 180.0 if lon == -180.0 else lon


class PointGrid:
    """One grid of an area: values (nlat, nlon, ntime, nvar) in a .npy file. A point's four
    cells are read, not mapped: each cell's series is contiguous, and a mapping would keep
    every cell ever asked for resident in each worker (see ByteFile)."""

    def __init__(self, version_dir: Path, spec: dict):
        self.spec = spec
        path = version_dir / spec["file"]
        shape, self.dtype, offset = npy_layout(path)
        expected = (spec["nlat"], spec["nlon"], spec["ntime"], len(spec["variables"]))
        if shape != expected:
            raise ValueError(f"{spec['file']}: shape {shape}, manifest says {expected}")
        self.step_bytes = len(spec["variables"]) * self.dtype.itemsize
        self.cell_bytes = spec["ntime"] * self.step_bytes
        if os.path.getsize(path) < offset + math.prod(shape) * self.dtype.itemsize:
            raise ValueError(f"{spec['file']}: shorter than its shape {shape}")
        self.file = ByteFile(path, offset)
        self.variables = tuple(spec["variables"])
        self.column = {name: i for i, name in enumerate(self.variables)}
        self.lat0, self.dlat, self.nlat = spec["lat0"], spec["dlat"], spec["nlat"]
        self.lon0, self.dlon, self.nlon = spec["lon0"], spec["dlon"], spec["nlon"]
        self.wraps = bool(spec["wraps"])
        self.time0, self.dt_s, self.ntime = spec["time0"], spec["dt_s"], spec["ntime"]
        self.time_end = self.time0 + (self.ntime - 1) * self.dt_s

    def contains(self, lat: float, lon: float) -> bool:
        """True when the point lies within the grid's cells (half a cell beyond the outer
        centres counts: those points take the edge values)."""
        half_lat, half_lon = self.dlat / 2 + EDGE_DEG, self.dlon / 2 + EDGE_DEG
        if not self.lat0 - half_lat <= lat <= self.lat0 + (self.nlat - 1) * self.dlat + half_lat:
            return False
        if self.wraps:
            return True
        x = (lon - self.lon0) % 360.0
        return x <= (self.nlon - 1) * self.dlon + half_lon or x >= 360.0 - half_lon

    def corners(self, lat: float, lon: float) -> tuple[list[int], list[int], np.ndarray]:
        """Rows, columns and bilinear weights of the four cells around the point."""
        y = min(max((lat - self.lat0) / self.dlat, 0.0), self.nlat - 1.0)
        i0 = min(int(y), self.nlat - 2) if self.nlat > 1 else 0
        i1, fy = min(i0 + 1, self.nlat - 1), y - i0
        x = ((lon - self.lon0) % 360.0) / self.dlon
        if self.wraps:
            j0 = int(x) % self.nlon
            j1, fx = (j0 + 1) % self.nlon, x - math.floor(x)
        else:
            if x > self.nlon - 1 + (360.0 / self.dlon - self.nlon + 1) / 2:
                x -= 360.0 / self.dlon  # just west of lon0, within half a cell
            x = min(max(x, 0.0), self.nlon - 1.0)
            j0 = min(int(x), self.nlon - 2) if self.nlon > 1 else 0
            j1, fx = min(j0 + 1, self.nlon - 1), x - j0
        weights = np.array([(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx])
        return [i0, i0, i1, i1], [j0, j1, j0, j1], weights

    def block(self, i0: int, i1: int, j0: int, j1: int, start: int = 0,
              stop: int | None = None) -> np.ndarray:
        """Cells (i0, j0), (i0, j1), (i1, j0), (i1, j1) over time steps [start, stop), read:
        a read-only array (2, 2, steps, nvar), the type the compiled kernels take."""
        stop = self.ntime if stop is None else min(stop, self.ntime)
        start = min(max(start, 0), stop)
        size = (stop - start) * self.step_bytes
        at = [(i * self.nlon + j) * self.cell_bytes + start * self.step_bytes
              for i, j in ((i0, j0), (i0, j1), (i1, j0), (i1, j1))]
        read = self.file.read_bytes
        if j1 == j0 + 1 and size == self.cell_bytes:  # a row's two cells are adjacent
            data = read(at[0], at[0] + 2 * size) + read(at[2], at[2] + 2 * size)
        else:
            data = b"".join([read(a, a + size) for a in at])
        return np.frombuffer(data, self.dtype).reshape(2, 2, stop - start, -1)

    def load(self) -> np.ndarray:
        """The whole grid, read into memory: a read-only array (nlat, nlon, ntime, nvar)."""
        data = self.file.read_bytes(0, self.nlat * self.nlon * self.cell_bytes)
        return np.frombuffer(data, self.dtype).reshape(self.nlat, self.nlon, self.ntime, -1)

    def series(self, lat: float, lon: float, start: int = 0, stop: int | None = None,
               column: int | None = None) -> np.ndarray:
        """Bilinear values at the point for time steps [start, stop): shape (steps, nvar), or
        (steps,) of one variable when `column` is given.

        A corner whose value is NaN drops out and the others' weights are renormalised, so a
        coast or domain edge still answers; NaN only where all four corners are unknown."""
        rows, cols, weights = self.corners(lat, lon)
        cells = self.block(rows[0], rows[2], cols[0], cols[1], start, stop)
        block = cells.reshape(4, *cells.shape[2:])      # (4, steps, nvar)
        if column is not None:
            block = block[..., column]                  # (4, steps)
        flat = block.reshape(4, -1)
        out = weights @ flat                  # float64; NaN wherever a corner is unknown
        if np.isnan(out).any():
            unknown = np.isnan(flat).sum(axis=0)
            partly = np.flatnonzero((unknown > 0) & (unknown < 4))
            if len(partly):                   # only these need the renormalised sum
                part = flat[:, partly].astype(np.float64)
                known = ~np.isnan(part)
                w = weights[:, None] * known
                total = w.sum(axis=0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    fixed = (np.where(known, part, 0.0) * w).sum(axis=0) / total
                fixed[total <= 1e-12] = np.nan
                out[partly] = fixed
        return out.reshape(block.shape[1:])

    def time_index(self, unix_s: float) -> float:
        """Fractional time step of a Unix time (may lie outside [0, ntime - 1])."""
        return (unix_s - self.time0) / self.dt_s

    def times(self) -> np.ndarray:
        """Unix seconds of every time step."""
        return self.time0 + self.dt_s * np.arange(self.ntime, dtype=np.int64)
