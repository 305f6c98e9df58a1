"""Point reads from a point-major grid file (contract.Grid): bilinear, NaN-aware
(server.kernels.bilinear)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

import contract
from server.artifacts.mapped import ByteFile, npy_layout
from server.kernels import bilinear
from server.kernels.bilinear import Corners

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
        self.geometry = np.array(
            [getattr(self, name) for name in bilinear.GEOMETRY], dtype=np.float64
        )

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

    def corners(self, lat: float, lon: float) -> Corners:
        """The four cells around the point and their bilinear weights."""
        return bilinear.corners(self.geometry, lat, lon)

    def block(
        self, i0: int, i1: int, j0: int, j1: int, start: int = 0, stop: int | None = None
    ) -> np.ndarray:
        """Cells (i0, j0), (i0, j1), (i1, j0), (i1, j1) over time steps [start, stop), read:
        a read-only array (2, 2, steps, nvar), the type the compiled kernels take."""
        stop = self.ntime if stop is None else min(stop, self.ntime)
        start = min(max(start, 0), stop)
        size = (stop - start) * self.step_bytes
        at = [
            (i * self.nlon + j) * self.cell_bytes + start * self.step_bytes
            for i, j in ((i0, j0), (i0, j1), (i1, j0), (i1, j1))
        ]
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

    def series(
        self,
        lat: float,
        lon: float,
        start: int = 0,
        stop: int | None = None,
        column: int | None = None,
    ) -> np.ndarray:
        """Bilinear values at the point for time steps [start, stop): shape (steps, nvar), or
        (steps,) of one variable when `column` is given.

        A corner whose value is NaN drops out and the others' weights are renormalised, so a
        coast or domain edge still answers; NaN only where all four corners are unknown."""
        c = self.corners(lat, lon)
        cells = self.block(c.i0, c.i1, c.j0, c.j1, start, stop)
        steps, nvar = cells.shape[2], cells.shape[3]
        out = np.empty((steps, nvar))
        if column is None:
            columns = np.arange(nvar)
        else:  # the compiled read checks no index
            column = range(nvar)[column]  # IndexError beyond, negative from the end
            columns = np.array([column])
        bilinear.series(cells, c.weights, 0, steps, columns, out)
        return out if column is None else out[:, column]

    def time_index(self, unix_s: float) -> float:
        """Fractional time step of a Unix time (may lie outside [0, ntime - 1])."""
        return (unix_s - self.time0) / self.dt_s

    def times(self) -> np.ndarray:
        """Unix seconds of every time step."""
        return self.time0 + self.dt_s * np.arange(self.ntime, dtype=np.int64)
