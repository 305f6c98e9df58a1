"""The server's one bilinear read of a grid (contract.Grid) at a point, compiled: the four cells
around the point and their weights (corners), a value between them (mix: a corner whose value
is NaN drops out and the others' weights are renormalised, NaN only where all four are
unknown), and a point's series (series). PointGrid calls it from Python; air quality's answer
and the forecast's blocks call it from their own compiled code.

The pipeline regrids whole grids the same way in numpy (pipeline/common/regrid.py): it may not
import the server, its arithmetic is part of the artifacts' bytes, and a test holds the two to
each other.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit
from numba import uint64 as _u

# A grid's geometry as corners() takes it: PointGrid's attributes, as float64.
GEOMETRY = ("lat0", "dlat", "nlat", "lon0", "dlon", "nlon", "wraps")


class Corners(NamedTuple):
    """The four cells around a point: rows i0 and i1 (i1 = i0 + 1, or i0 at an edge), columns
    j0 and j1 (j1 wraps to 0 past a global grid's last column), and the weights of cells
    (i0, j0), (i0, j1), (i1, j0) and (i1, j1)."""

    i0: int
    i1: int
    j0: int
    j1: int
    w00: float
    w01: float
    w10: float
    w11: float

    @property
    def weights(self) -> tuple[float, float, float, float]:
        return self[4:]


@njit(cache=True, nogil=True)
def corners(geometry, lat, lon):
    """The Corners of a point on a grid of this geometry (GEOMETRY's values). Beyond the outer
    cell centres a point takes the edge cells; just west of a regional grid's lon0 (within half
    a cell) counts as west of its first column."""
    lat0, dlat, nlat, lon0, dlon, nlon, wraps = geometry
    y = min(max((lat - lat0) / dlat, 0.0), nlat - 1.0)
    i0 = min(int(y), int(nlat) - 2) if nlat > 1 else 0
    i1, fy = min(i0 + 1, int(nlat) - 1), y - i0
    x = ((lon - lon0) % 360.0) / dlon
    if wraps:
        j0 = int(x) % int(nlon)
        j1, fx = (j0 + 1) % int(nlon), x - math.floor(x)
    else:
        if x > nlon - 1 + (360.0 / dlon - nlon + 1) / 2:
            x -= 360.0 / dlon  # just west of lon0, within half a cell
        x = min(max(x, 0.0), nlon - 1.0)
        j0 = min(int(x), int(nlon) - 2) if nlon > 1 else 0
        j1, fx = min(j0 + 1, int(nlon) - 1), x - j0
    return Corners(i0, i1, j0, j1, (1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx)


@njit(cache=True, nogil=True, inline="always")
def mix(x0, x1, x2, x3, w0, w1, w2, w3):
    """The four corners' values x weighted by w, in float64; a NaN corner drops out and the
    others' weights are renormalised; NaN where no known corner has weight."""
    a0, a1, a2, a3 = np.float64(x0), np.float64(x1), np.float64(x2), np.float64(x3)
    value = w0 * a0 + w1 * a1 + w2 * a2 + w3 * a3
    if value == value or (a0 != a0 and a1 != a1 and a2 != a2 and a3 != a3):
        return value
    # the known corners' weighted sum over their weight, every corner a term (an unknown one
    # adds 0.0 * 0.0), as numpy sums the four (the pipeline's regridding does)
    k0, k1, k2, k3 = w0 * (a0 == a0), w1 * (a1 == a1), w2 * (a2 == a2), w3 * (a3 == a3)
    total = k0 + k1 + k2 + k3
    part = _known(a0) * k0 + _known(a1) * k1 + _known(a2) * k2 + _known(a3) * k3
    return part / total if total > 1e-12 else np.nan


@njit(cache=True, nogil=True, inline="always")
def _known(value):
    return value if value == value else 0.0


@njit(cache=True, nogil=True)
def series(cell, weights, first, stop, columns, out):
    """out[t - first, c] = column c at the point, for steps [first, stop) and c in `columns`
    (other columns untouched), from its four cells (PointGrid.block of its Corners: an array
    (2, 2, steps, nvar)) and their weights."""
    w0, w1, w2, w3 = weights
    c0, c1 = cell[0, 0], cell[0, 1]  # (steps, nvar) each
    c2, c3 = cell[1, 0], cell[1, 1]
    for t in range(first, stop):
        row = out[_u(t - first)]
        for c in columns:
            i, j = _u(t), _u(c)
            row[j] = mix(c0[i, j], c1[i, j], c2[i, j], c3[i, j], w0, w1, w2, w3)
