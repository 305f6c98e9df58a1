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
from server.mapped import arrow_table, bytes_map, column, npy


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
            setattr(self, name, column(cells, name).to_numpy(zero_copy_only=True))
        self.zoom_offsets = npy(root / W.CELL_ZOOM_OFFSETS)
        self.json_blob = bytes_map(root / W.CELL_JSON)
        self.json_offsets = npy(root / W.CELL_JSON_OFFSETS)
        self.lat, self.lon = lat, lon

    def classify(self, query: ClusterQuery) -> tuple[np.ndarray, np.ndarray]:
        """(cells wholly inside, cells straddling the edge) of the query's zoom."""
        a = int(self.zoom_offsets[query.zoom - W.ZOOM_MIN])
        b = int(self.zoom_offsets[query.zoom - W.ZOOM_MIN + 1])
        box = query.bbox
        min_lat, max_lat = self.min_lat[a:b], self.max_lat[a:b]
        min_lon, max_lon = self.min_lon[a:b], self.max_lon[a:b]
        lat_in = (min_lat >= box.min_lat) & (max_lat <= box.max_lat)
        lat_out = (max_lat < box.min_lat) | (min_lat > box.max_lat)
        if box.min_lon <= box.max_lon:
            lon_in = (min_lon >= box.min_lon) & (max_lon <= box.max_lon)
            lon_out = (max_lon < box.min_lon) | (min_lon > box.max_lon)
        else:   # across the antimeridian: inside is lon >= min_lon or lon <= max_lon
            lon_in = (min_lon >= box.min_lon) | (max_lon <= box.max_lon)
            lon_out = (min_lon > box.max_lon) & (max_lon < box.min_lon)
        inside = lat_in & lon_in
        edge = ~inside & ~(lat_out | lon_out)
        return np.flatnonzero(inside) + a, np.flatnonzero(edge) + a

    def answer(self, query: ClusterQuery, cells: tuple[np.ndarray, np.ndarray],
               webcam: Callable[[int], bytes]) -> bytes:
        """The response body over classify()'s cells; `webcam(row)` renders the object of a
        cluster of one."""
        inside, edge = cells
        parts: list[bytes] = []
        several = inside[self.count[inside] > 1]
        if len(several):
            # Consecutive cells' JSON is contiguous: one slice per run.
            breaks = np.flatnonzero(np.diff(several) != 1)
            firsts = np.r_[several[0], several[breaks + 1]]
            lasts = np.r_[several[breaks], several[-1]]
            offsets = self.json_offsets
            parts.extend(self.json_blob[int(offsets[f]):int(offsets[e + 1])]
                         for f, e in zip(firsts.tolist(), lasts.tolist()))
        clusters = len(several)
        for cell in inside[self.count[inside] == 1].tolist():
            head = self.json_blob[int(self.json_offsets[cell]):int(self.json_offsets[cell + 1])]
            parts.append(head + webcam(int(self.rows[self.start[cell]])) + b"},")
            clusters += 1
        for cell in edge.tolist():
            members = self.rows[self.start[cell]:self.end[cell]]
            lat, lon = self.lat[members], self.lon[members]
            members = members[query.bbox.contains(lat, lon)]
            if len(members):
                parts.append(self._partial(members, webcam))
                clusters += 1
        body = b"".join(parts)[:-1]   # drop the last separator
        return b'{"clusters":[%b],"count":%d}' % (body, clusters)

    def _partial(self, members: np.ndarray, webcam: Callable[[int], bytes]) -> bytes:
        """A cluster of the members of an edge cell that lie inside the bbox."""
        lat, lon = float(self.lat[members].mean()), float(self.lon[members].mean())
        head = b'{"latitude":%b,"longitude":%b,"count":%d' % (
            orjson.dumps(round(lat, 5)), orjson.dumps(round(lon, 5)), len(members))
        if len(members) == 1:
            return head + b',"webcam":' + webcam(int(members[0])) + b"},"
        return head + b"},"
