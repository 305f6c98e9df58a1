"""Point reads from a memory-mapped point-major grid (contract.Grid): bilinear, NaN-aware."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


# Float rounding of lat0 + n * dlat must not put a domain's own edge (72°N for CAMS Europe)
# outside it.
EDGE_DEG = 1e-9


class PointGrid:
    """One grid of an area: values (nlat, nlon, ntime, nvar) mapped read-only, shared by workers."""

    def __init__(self, version_dir: Path, spec: dict):
        self.spec = spec
        self.values = np.asarray(np.load(version_dir / spec["file"], mmap_mode="r"))
        expected = (spec["nlat"], spec["nlon"], spec["ntime"], len(spec["variables"]))
        if self.values.shape != expected:
            raise ValueError(f"{spec['file']}: shape {self.values.shape}, manifest says {expected}")
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

    def series(self, lat: float, lon: float, start: int = 0, stop: int | None = None,
               column: int | None = None) -> np.ndarray:
        """Bilinear values at the point for time steps [start, stop): shape (steps, nvar), or
        (steps,) of one variable when `column` is given.

        A corner whose value is NaN drops out and the others' weights are renormalised, so a
        coast or domain edge still answers; NaN only where all four corners are unknown."""
        rows, cols, weights = self.corners(lat, lon)
        block = (self.values[rows, cols, start:stop] if column is None
                 else self.values[rows, cols, start:stop, column])   # (4, steps[, nvar])
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
