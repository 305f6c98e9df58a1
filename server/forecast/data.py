"""The loaded forecast area: the hourly grid, the orography, the alerts and their polygons."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pyarrow.parquet as pq

from contract import HOUR_S, AreaEntry
from contract import Forecast as F
from server.artifacts.grid import PointGrid
from server.forecast import blocks, kernels, render
from server.forecast import series as forecast_series
from server.kernels.bilinear import Corners


class AlertIndex:
    """Alerts with their polygons and their JSON; point-in-polygon by a 1° index of bounding
    boxes, then the box, then even-odd rings."""

    def __init__(self, root: Path):
        table = pq.ParquetFile(root / F.ALERTS).read().to_pylist()  # read_table imports pandas
        self.items = [_alert_json(row) for row in table]
        self.expires = np.array(
            [row["expires"] if row["expires"] is not None else math.inf for row in table],
            dtype=np.float64,
        )
        self.boxes = np.load(root / F.ALERT_BOXES)
        vertices = np.load(root / F.ALERT_VERTICES)
        start = np.load(root / F.ALERT_RING_START)
        ring_part = np.load(root / F.ALERT_RING_PART)
        part_alert = np.load(root / F.ALERT_PART_ALERT)
        # alert -> its polygons, each a list of rings
        self.polygons: list[list[list[np.ndarray]]] = [[] for _ in self.items]
        rings_of_part: dict[int, list[np.ndarray]] = {}
        for ring, part in enumerate(ring_part.tolist()):
            rings_of_part.setdefault(part, []).append(vertices[start[ring] : start[ring + 1]])
        for part, alert in enumerate(part_alert.tolist()):
            self.polygons[alert].append(rings_of_part.get(part, []))
        self.json = [orjson.dumps(item) for item in self.items]
        # 1° cell -> alerts whose box reaches into it (in any of its ±360° copies)
        self.cells: dict[tuple[int, int], list[int]] = {}
        for index, (south, west, north, east) in enumerate(self.boxes.tolist()):
            for y in range(math.floor(south), math.floor(north) + 1):
                for x in range(math.floor(west), min(math.floor(east), math.floor(west) + 359) + 1):
                    self.cells.setdefault((y, _wrap(x)), []).append(index)

    def json_at(self, lat: float, lon: float, now_s: float) -> bytes:
        """JSON array of the alerts not yet expired whose area contains the point, in onset
        order."""
        near = self.cells.get((math.floor(lat), _wrap(math.floor(lon))))
        if not near:
            return b"[]"
        found = []
        for index in near:
            if self.expires[index] <= now_s:
                continue
            box = self.boxes[index]
            if not box[0] <= lat <= box[2]:
                continue
            # Polygons may run past ±180 near the antimeridian: try the point shifted too.
            for x in (lon, lon + 360.0, lon - 360.0):
                if box[1] <= x <= box[3] and any(
                    _inside(rings, lat, x) for rings in self.polygons[index]
                ):
                    found.append(self.json[index])
                    break
        return b"[" + b",".join(found) + b"]"


def _wrap(cell: int) -> int:
    """A longitude cell folded into [-180, 180)."""
    return (cell + 180) % 360 - 180


def _inside(rings: list[np.ndarray], lat: float, lon: float) -> bool:
    """Even-odd rule over a polygon's rings (outer ring and holes), vertices (lat, lon)."""
    crossings = 0
    for ring in rings:
        y0, y1 = ring[:-1, 0], ring[1:, 0]
        x0, x1 = ring[:-1, 1], ring[1:, 1]
        straddle = (y0 > lat) != (y1 > lat)
        if not straddle.any():
            continue
        y0, y1, x0, x1 = y0[straddle], y1[straddle], x0[straddle], x1[straddle]
        crossings += int(np.count_nonzero(lon < x0 + (lat - y0) * (x1 - x0) / (y1 - y0)))
    return crossings % 2 == 1


def _alert_json(row: dict) -> dict:
    """The response object of an alert (docs/api/forecast.md#alerts)."""
    item = {
        "title": row["title"],
        "description": row["description"],
        "time": row["onset"],
        "expires": row["expires"],
        "severity": row["severity"],
    }
    if row["regions"]:
        item["regions"] = row["regions"]
    if row["uri"]:
        item["uri"] = row["uri"]
    return item


class ForecastData:
    """One published forecast version; what the forecast loader returns."""

    def __init__(self, version_dir: Path, entry: AreaEntry):
        self.version = entry["version"]
        self.grid = PointGrid(version_dir, entry["grids"][F.HOURLY_GRID])
        self.static = PointGrid(version_dir, entry["grids"][F.STATIC_GRID])
        self.orography = self.static.load()  # one value per cell: small, and read everywhere
        if self.grid.dt_s != HOUR_S:
            raise ValueError(f"the hourly grid has steps of {self.grid.dt_s} s")
        self.column = self.grid.column
        self.inputs = forecast_series.input_columns(self.column)
        self.first_s, self.last_s = self.grid.time0, self.grid.time_end
        self.next_version_s = int(entry["next_version_expected_s"])
        model = entry["source"]["model"]
        self.sources = [
            {"name": run.get("model", model), "run_time": run["run_time"]}
            for run in reversed(entry["source"]["runs"])
        ]
        self.generated = bool(entry["source"]["generated"])
        self.alerts = AlertIndex(version_dir)
        self.domain = _domain(self.grid)
        self.same_cells = bool((self.grid.geometry == self.static.geometry).all())
        self.sun_t0, self.suns = render.sun_table(self.first_s, self.last_s)
        self._flags: dict[str, bytes] = {}

    def point(self, lat: float, lon: float) -> blocks.Point:
        """What an answer reads at the point: the hourly grid's four cells around it (read:
        PointGrid.block), the whole static grid, and the point's Corners in each."""
        c = self.grid.corners(lat, lon)
        hourly = self.grid.block(c.i0, c.i1, c.j0, c.j1)
        static = c if self.same_cells else self.static.corners(lat, lon)
        # in the block, the cells are its own rows and columns
        return blocks.Point(hourly, self.orography, Corners(0, 1, 0, 1, *c.weights), static)

    def flags_json(self, units: str) -> bytes:
        """The flags object of answers in a unit system (docs/api/forecast.md#flags)."""
        found = self._flags.get(units)
        if found is None:
            found = self._flags[units] = orjson.dumps(
                {"units": units, "sources": self.sources, "version": self.version}
            )
        return found

    def covers(self, unix_s: float) -> bool:
        """True when the data reaches back and forward to this time."""
        return self.first_s <= unix_s <= self.last_s

    def window(self, lat: float, lon: float, first_s: float, count: int) -> np.ndarray:
        """Values (count, nvar) at first_s + k hours, bilinear in space and linear in time
        (for zones whose hours start off the UTC hour); NaN where the data has no values."""
        start = (first_s - self.first_s) / HOUR_S
        i0 = math.floor(start)
        lo, hi = max(i0, 0), min(i0 + count + 1, self.grid.ntime)
        out = np.full((count + 1, len(self.column)), np.nan)  # kernels.window's last row: room
        if lo < hi:  # the hours [lo, hi) are read, start - lo is exact
            c = self.grid.corners(lat, lon)
            cells = self.grid.block(c.i0, c.i1, c.j0, c.j1, lo, hi)
            kernels.window(cells, np.array((0, 1, 0, 1, *c.weights)), start - lo, out)
        return out[:count]

    def cloud_cover(self, lat: float, lon: float, unix_s: int) -> float | None:
        """Cloud cover 0-1 at a point and time (bilinear, linear in time); None outside the
        loaded time range or where the model has no value. About 20 µs."""
        if not self.covers(unix_s):
            return None
        value = float(self.window(lat, lon, unix_s, 1)[0, self.column[F.CLOUD]])
        return None if value != value else min(1.0, max(0.0, value))


def _domain(grid: PointGrid) -> str:
    """The grid's extent in words (for the answer to a point outside it)."""
    if grid.wraps:
        lon = "every longitude"
    else:
        east = (grid.lon0 + (grid.nlon - 1) * grid.dlon + 180.0) % 360.0 - 180.0
        lon = f"longitude {grid.lon0:g} to {east:g}"
    north = grid.lat0 + (grid.nlat - 1) * grid.dlat
    return f"latitude {grid.lat0:g} to {north:g}, {lon}"


def load(version_dir: Path, entry: AreaEntry) -> ForecastData:
    """Loader for the store: map the grids, read the alerts, have the compiled code ready."""
    data = ForecastData(version_dir, entry)
    blocks.warm_up(data)
    data.cloud_cover(0.0, 0.0, data.first_s)  # the webcams' images read it (compiled too)
    return data
