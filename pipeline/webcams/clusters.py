"""Map clusters, precomputed per zoom: Web Mercator grid cells of the served webcams.

At zoom z a cell is a tile of level z + CELL_LEVEL_OFFSET (a quarter of a 256-pixel map tile
each way, so 64 pixels on screen). Cells nest: a cell of zoom z is the union of four cells of
zoom z + 1, so a lower zoom never has more clusters for the same area. Rows are sorted by their
Z-order (Morton) key at the finest level, which makes every cell of every zoom a contiguous run
of rows. For each non-empty cell the pipeline stores the run, the count, the centroid and the
members' bounding box; the server answers cells wholly inside a request's bbox from these and
looks at individual members only for cells that straddle its edge.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from contract import Webcams as W
from pipeline.common.io import write_arrow, write_bytes, write_npy

FILES = [W.CLUSTER_ROWS, W.CELLS, W.CELL_ZOOM_OFFSETS, W.CELL_JSON, W.CELL_JSON_OFFSETS]
FINEST = W.ZOOM_MAX + W.CELL_LEVEL_OFFSET  # grid level of the finest cells (20)


def tile_xy(lat: np.ndarray, lon: np.ndarray, level: int = FINEST) -> tuple[np.ndarray, ...]:
    """Web Mercator tile column and row of each point at `level` (poles clamped); the
    vectorised form of contract.Webcams.tile_xy."""
    size = 1 << level
    phi = np.radians(np.clip(lat, -W.MAX_MERCATOR_LAT, W.MAX_MERCATOR_LAT))
    x = np.floor((np.asarray(lon) + 180.0) / 360.0 * size)
    y = np.floor((1.0 - np.log(np.tan(phi) + 1.0 / np.cos(phi)) / np.pi) / 2.0 * size)
    return (np.clip(x, 0, size - 1).astype(np.int64), np.clip(y, 0, size - 1).astype(np.int64))


def morton(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Interleave the bits of x (even positions) and y (odd positions): the vectorised form of
    contract.Webcams.morton."""

    def spread(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.uint64) & np.uint64(0xFFFFFFFF)
        for shift, mask in (
            (16, 0x0000FFFF0000FFFF),
            (8, 0x00FF00FF00FF00FF),
            (4, 0x0F0F0F0F0F0F0F0F),
            (2, 0x3333333333333333),
            (1, 0x5555555555555555),
        ):
            v = (v | (v << np.uint64(shift))) & np.uint64(mask)
        return v

    return spread(x) | (spread(y) << np.uint64(1))


def write(version: Path, lat: np.ndarray, lon: np.ndarray) -> int:
    """Write the cluster files for webcams at (lat, lon) in row order; returns the cell count."""
    key = morton(*tile_xy(lat, lon))
    rows = np.lexsort((np.arange(len(key)), key)).astype(np.int32)
    key, slat, slon = key[rows], lat[rows], lon[rows]
    write_npy(rows, version / W.CLUSTER_ROWS)
    parts, zoom_offsets = [], [0]
    for zoom in range(W.ZOOM_MIN, W.ZOOM_MAX + 1):
        shift = np.uint64(2 * (FINEST - zoom - W.CELL_LEVEL_OFFSET))
        parts.append(_cells(key >> shift, slat, slon))
        zoom_offsets.append(zoom_offsets[-1] + len(parts[-1]["count"]))
    cells = {name: np.concatenate([p[name] for p in parts]) for name in W.CELL_COLUMNS}
    write_arrow(pa.table(cells), version / W.CELLS)
    write_npy(np.asarray(zoom_offsets, dtype=np.int64), version / W.CELL_ZOOM_OFFSETS)
    _write_json(version, cells)
    return zoom_offsets[-1]


def _cells(cell_key: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> dict[str, np.ndarray]:
    """Runs of equal (sorted) cell keys: member range, count, centroid, bounding box."""
    if len(cell_key) == 0:
        empty_i, empty_f = np.zeros(0, np.int32), np.zeros(0, np.float64)
        return {
            "key": np.zeros(0, np.uint64),
            "start": empty_i,
            "end": empty_i,
            "count": empty_i,
            "latitude": empty_f,
            "longitude": empty_f,
            "min_lat": empty_f,
            "max_lat": empty_f,
            "min_lon": empty_f,
            "max_lon": empty_f,
        }
    start = np.flatnonzero(np.r_[True, cell_key[1:] != cell_key[:-1]])
    end = np.r_[start[1:], len(cell_key)]
    count = end - start
    return {
        "key": cell_key[start],
        "start": start.astype(np.int32),
        "end": end.astype(np.int32),
        "count": count.astype(np.int32),
        "latitude": np.add.reduceat(lat, start) / count,
        "longitude": np.add.reduceat(lon, start) / count,
        "min_lat": np.minimum.reduceat(lat, start),
        "max_lat": np.maximum.reduceat(lat, start),
        "min_lon": np.minimum.reduceat(lon, start),
        "max_lon": np.maximum.reduceat(lon, start),
    }


def cluster_json(lat: float, lon: float, count: int) -> bytes:
    """A cell's cluster object followed by a comma, so runs of cells are one slice; a cell of
    one webcam is left open after `"webcam":` for the server to complete with the object."""
    head = b'{"latitude":%b,"longitude":%b,"count":%d' % (
        orjson.dumps(round(lat, 5)),
        orjson.dumps(round(lon, 5)),
        count,
    )
    return head + (b',"webcam":' if count == 1 else b"},")


def _write_json(version: Path, cells: dict[str, np.ndarray]) -> None:
    blobs = [
        cluster_json(la, lo, c)
        for la, lo, c in zip(
            cells["latitude"].tolist(), cells["longitude"].tolist(), cells["count"].tolist()
        )
    ]
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    write_bytes(b"".join(blobs), version / W.CELL_JSON)
    write_npy(offsets, version / W.CELL_JSON_OFFSETS)
