"""Exact nearest place for one point, from the pipeline's quadtree of candidate lists.

See pipeline/geocoding/nearest.py for why each leaf's list is complete. A lookup descends
a few levels and measures a few dozen distances, in two compiled calls of about a microsecond
around one pread of the leaf's list (a KD-tree query costs some 30 us, the same walk in Python
some 12 us). The lists (60 MB for every GeoNames place) are read, not mapped: see ByteFile.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from numba import njit

from contract import EARTH_RADIUS_KM
from contract import Geocoding as G
from server.artifacts.mapped import NpyFile
from server.artifacts.mapped import npy as _npy


def chord_km(chord: float) -> float:
    """Great-circle distance of a chord of the unit sphere, in km."""
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, chord / 2))


def unit_vector(lat: float, lon: float) -> tuple[float, float, float]:
    """The point on the unit sphere."""
    la, lo = math.radians(lat), math.radians(lon)
    return math.cos(la) * math.cos(lo), math.cos(la) * math.sin(lo), math.sin(la)


class NearestIndex:
    """The quadtree (memory-mapped), its leaves' lists (read) and the places' unit vectors."""

    def __init__(
        self,
        root: Path,
        xyz: np.ndarray,
        files: tuple[str, str, str] = (G.NEAREST_A, G.NEAREST_B, G.NEAREST_ROWS),
    ):
        self.xyz = xyz
        self.a, self.b = _npy(root / files[0]), _npy(root / files[1])
        self.rows = NpyFile(root / files[2])
        self.top_rows = round(180 / G.NEAREST_TOP_DEG)
        self.top_cols = round(360 / G.NEAREST_TOP_DEG)
        if len(xyz):  # compile (or load the compiled kernel) before the area counts as ready
            self.nearest(0.0, 0.0)

    def nearest(self, lat: float, lon: float) -> tuple[int, float]:
        """(row, distance in km) of the nearest place; of equally near ones, the best ranked;
        (-1, inf) when the tree holds no place. A tree built for the nearest within a distance
        answers beyond it with some farther place, or (-1, inf)."""
        start, end = _leaf(
            self.a, self.b, self.top_rows, self.top_cols, G.NEAREST_TOP_DEG, lat, lon
        )
        if start == end:  # an empty tree, or no place within the tree's distance
            return -1, math.inf
        found, chord = _closest(self.rows.read(start, end), self.xyz, lat, lon)
        return found, chord_km(chord)


@njit(cache=True, nogil=True)
def _leaf(a, b, top_rows, top_cols, top_deg, lat, lon):
    """(start, end) in the rows file of the list of the leaf holding the point."""
    y, x = (lat + 90.0) / top_deg, (lon + 180.0) / top_deg
    row, col = min(int(y), top_rows - 1), int(x)
    node = row * top_cols + col % top_cols
    end = b[node]
    y, x = y - row, x - col  # position inside the cell, 0 to 1
    while end < 0:  # descend: children are south-west, south-east, north-west, north-east
        y, x = 2.0 * y, 2.0 * x
        north, east = y >= 1.0, x >= 1.0
        y, x = y - north, x - east
        node = a[node] + 2 * north + east
        end = b[node]
    return a[node], end


@njit(cache=True, nogil=True)
def _closest(rows, xyz, lat, lon):
    """(row, chord) of the place of `rows` nearest the point."""
    la, lo = math.radians(lat), math.radians(lon)
    px, py, pz = math.cos(la) * math.cos(lo), math.cos(la) * math.sin(lo), math.sin(la)
    # The largest cosine is the nearest place; the first of equals has the best rank.
    found, best = -1, -2.0
    for r in rows:
        cosine = xyz[r, 0] * px + xyz[r, 1] * py + xyz[r, 2] * pz
        if cosine > best:
            found, best = r, cosine
    dx, dy, dz = xyz[found, 0] - px, xyz[found, 1] - py, xyz[found, 2] - pz
    return found, math.sqrt(dx * dx + dy * dy + dz * dz)
