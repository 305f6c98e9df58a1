"""Map clusters from the pipeline's per-zoom grid cells (docs/api/webcams.md#clusters).

A cell whose members' bounding box lies inside the request's bbox is answered from its
precomputed count and centroid (pre-rendered JSON; consecutive such cells are one slice of
it); a cell wholly outside is skipped; only cells straddling the bbox edge look at their
members. So every cluster counts exactly the webcams inside the bbox. The pass over a zoom's
cells is one compiled loop (kernels.clusters): as numpy it was a few dozen small array
operations, whose fixed costs were most of a request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from contract import Webcams as W
from server.artifacts.mapped import arrow_table, bytes_map, npy, numbers
from server.webcams import kernels
from server.webcams.catalog import BBox


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
        self.zoom_offsets: list[int] = npy(root / W.CELL_ZOOM_OFFSETS).tolist()
        self.json_blob = bytes_map(root / W.CELL_JSON)
        self.json_offsets = npy(root / W.CELL_JSON_OFFSETS)
        self.lat, self.lon = lat, lon
        self.bounds = (self.min_lat, self.max_lat, self.min_lon, self.max_lon)
        # Compile (or load the compiled kernel) before the area counts as ready.
        self.classify(ClusterQuery(BBox(0.0, 0.0, 1.0, 1.0), W.ZOOM_MIN))

    def classify(self, query: ClusterQuery) -> Cells:
        """The query's cells: wholly inside the bbox (runs of them, and those of one webcam),
        and the parts inside it of cells straddling its edge."""
        zoom, box = query.zoom - W.ZOOM_MIN, query.bbox
        world = (
            box.min_lat <= -90 and box.max_lat >= 90 and box.min_lon <= -180 and box.max_lon >= 180
        )  # the whole world (a common first map view)
        return Cells(
            *kernels.clusters(
                self.key,
                self.zoom_offsets[zoom],
                self.zoom_offsets[zoom + 1],
                query.zoom + W.CELL_LEVEL_OFFSET,
                self.bounds,
                self.count,
                self.start,
                self.end,
                self.json_offsets,
                self.rows,
                self.lat,
                self.lon,
                (box.min_lat, box.min_lon, box.max_lat, box.max_lon),
                world,
            )
        )

    def answer(self, query: ClusterQuery, cells: Cells, webcam: Callable[[int], bytes]) -> bytes:
        """The response body over classify()'s cells; `webcam(row)` renders the object of a
        cluster of one. Clusters: runs of whole cells, then whole cells of one webcam, then
        the parts of edge cells inside the bbox."""
        blob = self.json_blob
        runs, singles = cells.runs.tolist(), cells.singles.tolist()
        parts = [blob[runs[i] : runs[i + 1]] for i in range(0, len(runs), 2)]
        for i in range(0, len(singles), 3):
            parts += (blob[singles[i] : singles[i + 1]], webcam(singles[i + 2]), b"},")
        edges, centroids = cells.edges.tolist(), cells.centroids.tolist()
        for i in range(0, len(edges), 2):
            parts.append(
                b'{"latitude":%b,"longitude":%b,"count":%d'
                % (
                    orjson.dumps(round(centroids[i], 5)),
                    orjson.dumps(round(centroids[i + 1], 5)),
                    edges[i],
                )
            )
            parts += (b',"webcam":', webcam(edges[i + 1]), b"},") if edges[i] == 1 else (b"},",)
        body = memoryview(b"".join(parts))[:-1]  # drop the last separator, without a copy
        return b'{"clusters":[%b],"count":%d}' % (body, cells.count)


@dataclass(frozen=True)
class Cells:
    """kernels.clusters() of a query, flat: (first, end) byte ranges of runs of whole
    cells, (first, end, row) of whole cells of one webcam, (count, first row) and (latitude,
    longitude) of the clusters in edge cells."""

    runs: np.ndarray
    singles: np.ndarray
    edges: np.ndarray
    centroids: np.ndarray
    whole: int  # cells wholly inside

    @property
    def count(self) -> int:
        """Clusters in the answer."""
        return self.whole + len(self.edges) // 2

    @property
    def rendered(self) -> int:
        """Clusters the answer renders one by one (whole cells of one webcam, edge cells)."""
        return len(self.singles) // 3 + len(self.edges) // 2
