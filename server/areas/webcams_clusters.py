"""Map clusters from the pipeline's per-zoom grid cells (interface 4.11, decisions rule 40).

A cell whose members' bounding box lies inside the request's bbox is answered from its
precomputed count and centroid (pre-rendered JSON; consecutive such cells are one slice of
it); a cell wholly outside is skipped; only cells straddling the bbox edge look at their
members. So every cluster counts exactly the webcams inside the bbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import orjson

from contract import Webcams as W
from server.areas.webcams_catalog import BBox
from server.mapped import arrow_table, bytes_map, column, npy, numbers

ALL_TRUE = np.frombuffer(b"\x01\x01\x01\x01", dtype=np.uint32)[0]


@dataclass(frozen=True)
class ClusterQuery:
    """GET /webcams/clusters, parsed."""

    bbox: BBox
    zoom: int


class Clusters:
    """Grid cells of every zoom."""

    def __init__(self, root: Path, lat: np.ndarray, lon: np.ndarray):
        self.rows = npy(root / W.CLUSTER_ROWS)
        cells = arrow_table(root / W.CELLS)
        for name in W.CELL_COLUMNS:
            setattr(self, name, numbers(cells, name))
        self.zoom_offsets = npy(root / W.CELL_ZOOM_OFFSETS)
        self.json_blob = bytes_map(root / W.CELL_JSON)
        self.json_offsets = npy(root / W.CELL_JSON_OFFSETS)
        self.lat, self.lon = lat, lon
        # Each cell's bounds as (n, 4) rows, so that "wholly inside" and "wholly outside" are
        # one comparison each against a box's (min_lat, -max_lat, min_lon, -max_lon).
        self.bounds_low = np.column_stack([self.min_lat, -self.max_lat, self.min_lon,
                                           -self.max_lon])
        self.bounds_high = np.column_stack([self.max_lat, -self.min_lat, self.max_lon,
                                            -self.min_lon])
        # Per cell: a cluster of one, and that webcam's row (one gather per request, not two).
        self.single = self.count == 1
        self.first_row = self.rows[self.start].astype(np.int64)

    def candidates(self, query: ClusterQuery) -> tuple[int, int]:
        """The zoom's cells that can touch the bbox: cells are in Z-order, and every cell
        inside the box's tile rectangle has a key between its corners' keys (one cell of
        margin each way absorbs rounding at the edges)."""
        a = int(self.zoom_offsets[query.zoom - W.ZOOM_MIN])
        b = int(self.zoom_offsets[query.zoom - W.ZOOM_MIN + 1])
        box = query.bbox
        if box.min_lon > box.max_lon or (box.min_lon <= -180 and box.max_lon >= 180):
            return a, b             # across the antimeridian (no single range), or every cell
        level = query.zoom + W.CELL_LEVEL_OFFSET
        last = (1 << level) - 1
        x0, y0 = W.tile_xy(box.max_lat, box.min_lon, level)
        x1, y1 = W.tile_xy(box.min_lat, box.max_lon, level)
        low = W.morton(max(0, x0 - 1), max(0, y0 - 1))
        high = W.morton(min(last, x1 + 1), min(last, y1 + 1))
        keys = self.key[a:b]
        return (a + int(np.searchsorted(keys, np.uint64(low), side="left")),
                a + int(np.searchsorted(keys, np.uint64(high), side="right")))

    def classify(self, query: ClusterQuery) -> tuple[np.ndarray, np.ndarray]:
        """(cells wholly inside, cells straddling the edge) of the query's zoom."""
        a, b = self.candidates(query)
        box = query.bbox
        if box.min_lat <= -90 and box.max_lat >= 90 and box.min_lon <= -180 \
                and box.max_lon >= 180:         # the whole world (a common first map view)
            return np.arange(a, b), np.zeros(0, dtype=np.int64)
        if box.min_lon <= box.max_lon:
            limits = np.array([box.min_lat, -box.max_lat, box.min_lon, -box.max_lon])
            # Four comparisons per cell, read as one uint32 each: all four true is 0x01010101
            # (much cheaper than .all(axis=1) on a few hundred rows). Inside implies touching.
            inside = (self.bounds_low[a:b] >= limits).view(np.uint32).ravel() == ALL_TRUE
            touching = (self.bounds_high[a:b] >= limits).view(np.uint32).ravel() == ALL_TRUE
            return np.flatnonzero(inside) + a, np.flatnonzero(touching ^ inside) + a
        min_lat, max_lat = self.min_lat[a:b], self.max_lat[a:b]
        min_lon, max_lon = self.min_lon[a:b], self.max_lon[a:b]
        lat_in = (min_lat >= box.min_lat) & (max_lat <= box.max_lat)
        lat_out = (max_lat < box.min_lat) | (min_lat > box.max_lat)
        # Across the antimeridian: inside is lon >= min_lon or lon <= max_lon.
        lon_in = (min_lon >= box.min_lon) | (max_lon <= box.max_lon)
        lon_out = (min_lon > box.max_lon) & (max_lon < box.min_lon)
        inside = lat_in & lon_in
        edge = ~inside & ~(lat_out | lon_out)
        return np.flatnonzero(inside) + a, np.flatnonzero(edge) + a

    def answer(self, query: ClusterQuery, cells: tuple[np.ndarray, np.ndarray],
               webcam: Callable[[int], bytes]) -> bytes:
        """The response body over classify()'s cells; `webcam(row)` renders the object of a
        cluster of one. Clusters: runs of whole cells, then whole cells of one webcam, then
        the parts of edge cells inside the bbox."""
        inside, edge = cells
        blob, offsets = self.json_blob, self.json_offsets
        is_single = self.single[inside]
        several = inside[~is_single]
        parts: list[bytes] = []
        if len(several):
            # Consecutive cells' JSON is contiguous: one slice per run of them.
            breaks = np.flatnonzero(np.diff(several) != 1)
            firsts = np.concatenate((several[:1], several[breaks + 1]))
            lasts = np.concatenate((several[breaks], several[-1:]))
            parts = [blob[f:e] for f, e in zip(offsets[firsts].tolist(),
                                                 offsets[lasts + 1].tolist())]
        single = inside[is_single]
        if len(single):
            parts += [blob[f:e] + webcam(row) + b"}," for f, e, row in zip(
                offsets[single].tolist(), offsets[single + 1].tolist(),
                self.first_row[single].tolist())]
        clusters = len(inside)
        if len(edge):
            edge_parts = self._edges(query, edge, webcam)
            parts.extend(edge_parts)
            clusters += len(edge_parts)
        body = memoryview(b"".join(parts))[:-1]   # drop the last separator, without a copy
        return b'{"clusters":[%b],"count":%d}' % (body, clusters)

    def _edges(self, query: ClusterQuery, edge: np.ndarray,
               webcam: Callable[[int], bytes]) -> list[bytes]:
        """Clusters of the members of edge cells that lie inside the bbox, all cells at once."""
        starts, ends = self.start[edge].astype(np.int64), self.end[edge].astype(np.int64)
        lengths = ends - starts
        first = np.cumsum(lengths) - lengths
        members = self.rows[np.arange(int(lengths.sum())) - np.repeat(first - starts, lengths)]
        lat, lon = self.lat[members], self.lon[members]
        keep = query.bbox.contains(lat, lon)
        counts = np.add.reduceat(keep.astype(np.int64), first)
        lat_mean = np.add.reduceat(np.where(keep, lat, 0.0), first) / np.maximum(counts, 1)
        lon_mean = np.add.reduceat(np.where(keep, lon, 0.0), first) / np.maximum(counts, 1)
        kept_rows = members[keep].tolist()
        kept_first = (np.cumsum(counts) - counts).tolist()
        out = []
        for i, (n, la, lo) in enumerate(zip(counts.tolist(), lat_mean.tolist(),
                                            lon_mean.tolist())):
            if n == 0:
                continue
            head = b'{"latitude":%b,"longitude":%b,"count":%d' % (
                orjson.dumps(round(la, 5)), orjson.dumps(round(lo, 5)), n)
            if n == 1:
                out.append(head + b',"webcam":' + webcam(kept_rows[kept_first[i]]) + b"},")
            else:
                out.append(head + b"},")
        return out
