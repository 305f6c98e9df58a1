"""Quadtree of candidate lists for exact nearest-place lookups (contract.Geocoding.NEAREST_*).

A node is a latitude/longitude cell listing every place that can be the nearest of a point in
it. For a cell with centre c, farthest corner at angle r and nearest place at d1 from c, any
point q of the cell has a place within r + d1, so its nearest place p obeys
d(c, p) <= d(c, q) + d(q, p) <= 2r + d1: the places within 2r + d1 of the centre suffice.
Cells listing places at more than LEAF_MAX locations are split in four, each child keeping
those of its parent's places within its own (smaller) bound, so a lookup measures a handful of
distances. Places closer together than the smallest cell (GeoNames has duplicates, and places
metres apart) cannot be told apart from afar: counted as places, a few dozen of them made
every cell around them split down to MAX_DEPTH, millions of cells listing all of them (24 GB
for 42 places at one point, as for 42 places a metre apart along a line).

A tree for the nearest place within a distance R (the forecast's elevation) also bounds each
cell's places by R plus its reach: a cell farther than that from every place is an empty leaf,
so a cluster of places far from all others does not split every cell of the globe.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from contract import EARTH_RADIUS_KM
from contract import Geocoding as G
from pipeline.common.io import NpyWriter, release_c_heap, write_npy

log = logging.getLogger("pipeline.geocoding")
FILES = [G.NEAREST_A, G.NEAREST_B, G.NEAREST_ROWS]
ELEVATED_FILES = [G.NEAREST_ELEVATED_A, G.NEAREST_ELEVATED_B, G.NEAREST_ELEVATED_ROWS]
LEAF_MAX = 32
MAX_DEPTH = 10  # 1° / 2**10: cells of about 100 m
SLACK = 1e-9  # radians added to every bound, far above float rounding
# Places closer than about the last level's cell (1/1024 of a degree, ~100 m) count as one
# location: no cell can tell them apart from afar.
LOCATION_RAD = np.radians(G.NEAREST_TOP_DEG / 2**MAX_DEPTH)
_KEY_BITS = 21  # per rounded coordinate of a location key: 2**20 > 1 / LOCATION_RAD


def _unit(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], -1)


def _angle(chord: np.ndarray) -> np.ndarray:
    return 2 * np.arcsin(np.minimum(chord / 2, 1.0))


def _geometry(lat0: np.ndarray, lon0: np.ndarray, size: float) -> tuple[np.ndarray, np.ndarray]:
    """Centres (unit vectors) and reach (angle to the farthest corner) of cells."""
    centre = _unit(lat0 + size / 2, lon0 + size / 2)
    reach = np.zeros(len(lat0))
    for dy in (0, size):
        for dx in (0, size):
            corner = _unit(lat0 + dy, lon0 + dx)
            reach = np.maximum(reach, _angle(np.linalg.norm(centre - corner, axis=1)))
    return centre, reach


class _Nodes:
    """Nodes as they are decided: leaves take the next slice of the candidate rows, which go
    straight to the rows file (66 million of them for allCountries: held in memory, then
    joined, they were half a gigabyte at the build's peak)."""

    def __init__(self, count: int, rows: NpyWriter, subset: np.ndarray | None):
        # int32 as stored: write() refuses trees that would not fit.
        self.a = np.zeros(count, dtype=np.int32)
        self.b = np.zeros(count, dtype=np.int32)
        self.size = count
        self.rows, self.subset = rows, subset

    def add(self, count: int) -> int:
        """Append `count` undecided nodes; return the first one's index."""
        first, self.size = self.size, self.size + count
        if self.size > len(self.a):  # grow geometrically: splits come level by level
            grown = max(self.size, 2 * len(self.a))
            self.a = np.concatenate([self.a, np.zeros(grown - len(self.a), dtype=np.int32)])
            self.b = np.concatenate([self.b, np.zeros(grown - len(self.b), dtype=np.int32)])
        return first

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) as decided."""
        return self.a[: self.size], self.b[: self.size]

    def leaves(
        self, nodes: np.ndarray, node_of: np.ndarray, place: np.ndarray, rank: np.ndarray
    ) -> None:
        """Make `nodes` leaves holding the places paired with them (node_of[k], place[k])."""
        order = np.lexsort((place, rank[place], node_of))
        node_of, place = node_of[order], place[order]
        counts = np.bincount(np.searchsorted(nodes, node_of), minlength=len(nodes))
        ends = self.rows.written + np.cumsum(counts)
        self.a[nodes], self.b[nodes] = ends - counts, ends
        self.rows.write(place if self.subset is None else self.subset[place])


def write(
    version: Path,
    xyz: np.ndarray,
    rank: np.ndarray,
    subset: np.ndarray | None = None,
    files: list[str] = FILES,
    within_km: float = math.inf,
) -> None:
    """The quadtree's `files` (a, b, rows) over the places with unit vectors `xyz` and
    importance `rank` (lower first: it breaks ties between equally near places), or over the
    places of `subset` (ascending rows) only; the lists hold rows of all places. With
    `within_km`, for the nearest within that distance only."""
    if len(xyz) >= 2**31:
        raise ValueError("too many places for int32 node and row numbers")
    if subset is not None:
        xyz, rank = xyz[subset], rank[subset]
    with NpyWriter(version / files[2], np.int32) as rows:
        a, b = _tree(xyz, rank, within_km / EARTH_RADIUS_KM, rows, subset)
        candidates = rows.written
    if candidates >= 2**31:
        raise ValueError("too many candidates for int32 node numbers")
    for name, values in zip(files, (a, b)):
        write_npy(values, version / name)
    leaves = b >= 0
    log.info(
        "nearest-place quadtree over %d places: %d nodes, %d leaves, %d candidates "
        "(%.1f a leaf, max %d)",
        len(xyz),
        len(a),
        leaves.sum(),
        candidates,
        candidates / max(1, leaves.sum()),
        (b - a)[leaves].max(initial=0),
    )
    # The tree's many mid-sized arrays leave freed memory in the C heap that polars and Arrow,
    # with allocators of their own, cannot reuse; give it back before the build goes on.
    release_c_heap()


def _tree(
    xyz: np.ndarray,
    rank: np.ndarray,
    within: float,
    rows: NpyWriter,
    subset: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Nodes' a and b for the nearest place within the angle `within` (every leaf empty
    without places, or farther than that from them all); the leaves' candidate rows (mapped
    through `subset` when given) go to `rows`."""
    size = G.NEAREST_TOP_DEG
    rows_n, cols_n = round(180 / size), round(360 / size)
    nodes = _Nodes(rows_n * cols_n, rows, subset)
    if not len(xyz):
        return nodes.finish()
    tree = cKDTree(xyz)
    location = _shared_locations(xyz)
    for band in range(rows_n):  # one latitude band of top cells at a time bounds memory
        cells = band * cols_n + np.arange(cols_n)
        lat0, lon0 = -90 + band * size + 0 * cells, -180 + (cells % cols_n) * size
        centre, reach = _geometry(lat0.astype(float), lon0.astype(float), size)
        d1, _ = tree.query(centre, k=1)
        bound = _bound(_angle(d1), reach, within)
        found = tree.query_ball_point(centre, 2 * np.sin(np.minimum(bound, np.pi) / 2))
        node_of = np.repeat(cells, [len(f) for f in found])
        place = np.fromiter((p for f in found for p in f), dtype=np.int64, count=len(node_of))
        del found  # a Python int per pair
        _split(
            nodes,
            cells,
            lat0.astype(float),
            lon0.astype(float),
            size,
            node_of,
            place,
            xyz,
            rank,
            location,
            within,
        )
    return nodes.finish()


def _bound(d1: np.ndarray, reach: np.ndarray, within: float) -> np.ndarray:
    """Angle from a cell's centre within which lie all the places that can be the nearest of
    a point of the cell (see the module's docstring), and lie within `within` of it: a point
    is at most `reach` from the centre."""
    return np.minimum(d1 + 2 * reach, reach + within) + SLACK


def _shared_locations(xyz: np.ndarray) -> np.ndarray:
    """Per place, the id of its location when other places share it (within LOCATION_RAD),
    else -1."""
    # One integer key per location, its three rounded coordinates (each within +-1/LOCATION_RAD,
    # about 58,700) side by side: sorts in the order of the rows they stand for, so the ids are
    # those np.unique(axis=0) gives, in a tenth of its memory (it sorted 4.9 million rows).
    key = np.zeros(len(xyz), dtype=np.int64)
    for axis in range(3):
        key <<= _KEY_BITS
        key |= np.round(xyz[:, axis] / LOCATION_RAD).astype(np.int64) + (1 << (_KEY_BITS - 1))
    _, location, sharing = np.unique(key, return_inverse=True, return_counts=True)
    del key
    return np.where(sharing[location] > 1, location, -1)


def _locations(position: np.ndarray, shared: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Distinct locations per cell, given each pair's cell position and shared location id
    (-1 when its place is alone at its location): few places share one, so only theirs are
    sorted."""
    mine = shared >= 0
    if not mine.any():
        return counts
    span = np.int64(shared.max() + 1)
    distinct = np.unique(position[mine] * span + shared[mine]) // span
    return (
        counts
        - np.bincount(position[mine], minlength=len(counts))
        + np.bincount(distinct, minlength=len(counts))
    )


def _split(
    nodes: _Nodes,
    cells: np.ndarray,
    lat0: np.ndarray,
    lon0: np.ndarray,
    size: float,
    node_of: np.ndarray,
    place: np.ndarray,
    xyz: np.ndarray,
    rank: np.ndarray,
    location: np.ndarray,
    within: float,
) -> None:
    """Decide `cells` (sorted node ids, with corners lat0/lon0) given their candidate pairs:
    those with few locations become leaves, the others are split into four, level by level
    (a loop, not recursion: each level's pairs are freed once the next one's are made)."""
    level: tuple | None = (cells, lat0, lon0, node_of, place)
    depth = 0
    while level is not None:
        level = _split_level(nodes, *level, size, xyz, rank, location, within, depth)
        size, depth = size / 2, depth + 1


def _split_level(
    nodes: _Nodes,
    cells: np.ndarray,
    lat0: np.ndarray,
    lon0: np.ndarray,
    node_of: np.ndarray,
    place: np.ndarray,
    size: float,
    xyz: np.ndarray,
    rank: np.ndarray,
    location: np.ndarray,
    within: float,
    depth: int,
) -> tuple | None:
    """One level of _split: leaves made, the children's (cells, lat0, lon0, node_of, place)
    returned, or None when no cell splits."""
    position = np.searchsorted(cells, node_of)
    counts = np.bincount(position, minlength=len(cells))
    split = (_locations(position, location[place], counts) > LEAF_MAX) & (depth < MAX_DEPTH)
    pair_split = np.repeat(split, counts)
    nodes.leaves(cells[~split], node_of[~pair_split], place[~pair_split], rank)
    if not split.any():
        return None
    parents = cells[split]
    node_of, place = node_of[pair_split], place[pair_split]
    first = nodes.add(4 * len(parents))
    nodes.a[parents] = first + 4 * np.arange(len(parents))
    nodes.b[parents] = -1
    half = size / 2
    parent_pos = np.searchsorted(parents, node_of)
    child_ids, child_lat, child_lon, pair_nodes, pair_places = [], [], [], [], []
    for north in (0, 1):
        for east in (0, 1):
            clat, clon = lat0[split] + north * half, lon0[split] + east * half
            centre, reach = _geometry(clat, clon, half)
            # Each child keeps those of its parent's places within its own bound; its nearest
            # place is among them, since its centre lies in the parent (or, with `within`, is
            # farther: a larger d1, a larger bound, still all of those the child needs).
            angle = _angle(np.linalg.norm(xyz[place] - centre[parent_pos], axis=1))
            d1 = np.full(len(parents), np.inf)
            np.minimum.at(d1, parent_pos, angle)
            keep = angle <= _bound(d1, reach, within)[parent_pos]
            ids = nodes.a[parents] + 2 * north + east
            child_ids.append(ids)
            child_lat.append(clat)
            child_lon.append(clon)
            pair_nodes.append(ids[parent_pos[keep]])
            pair_places.append(place[keep])
    ids = np.concatenate(child_ids)
    order = np.argsort(ids)
    pair_nodes, pair_places = np.concatenate(pair_nodes), np.concatenate(pair_places)
    pair_order = np.argsort(pair_nodes, kind="stable")
    return (
        ids[order],
        np.concatenate(child_lat)[order],
        np.concatenate(child_lon)[order],
        pair_nodes[pair_order],
        pair_places[pair_order],
    )
