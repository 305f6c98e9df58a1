"""The loaded forecast area: the hourly grid, the orography, the alerts and their polygons."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from contract import Forecast as F
from server.areas import forecast_kernels, forecast_series
from server.grid import PointGrid

HOUR_S = 3600


class AlertIndex:
    """Alerts with their polygons; point-in-polygon by bounding box, then even-odd rings."""

    def __init__(self, root: Path):
        table = pq.ParquetFile(root / F.ALERTS).read().to_pylist()  # read_table imports pandas
        self.items = [_alert_json(row) for row in table]
        self.expires = np.array([row["expires"] if row["expires"] is not None else math.inf
                                 for row in table], dtype=np.float64)
        self.boxes = np.load(root / F.ALERT_BOXES)
        vertices = np.load(root / F.ALERT_VERTICES)
        start = np.load(root / F.ALERT_RING_START)
        ring_part = np.load(root / F.ALERT_RING_PART)
        part_alert = np.load(root / F.ALERT_PART_ALERT)
        # alert -> its polygons, each a list of rings
        self.polygons: list[list[list[np.ndarray]]] = [[] for _ in self.items]
        rings_of_part: dict[int, list[np.ndarray]] = {}
        for ring, part in enumerate(ring_part.tolist()):
            rings_of_part.setdefault(part, []).append(vertices[start[ring]:start[ring + 1]])
        for part, alert in enumerate(part_alert.tolist()):
            self.polygons[alert].append(rings_of_part.get(part, []))

    def at(self, lat: float, lon: float, now_s: float) -> list[dict]:
        """Alerts not yet expired whose area contains the point, in onset order."""
        if not self.items:
            return []
        boxes = self.boxes
        near = (boxes[:, 0] <= lat) & (lat <= boxes[:, 2]) & (self.expires > now_s)
        if not near.any():
            return []
        found = []
        for index in np.flatnonzero(near).tolist():
            box = boxes[index]
            # Polygons may run past ±180 near the antimeridian: try the point shifted too.
            for x in (lon, lon + 360.0, lon - 360.0):
                if box[1] <= x <= box[3] and any(_inside(rings, lat, x)
                                                 for rings in self.polygons[index]):
                    found.append(self.items[index])
                    break
        return found


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
    """The response object of an alert (decisions rule 34)."""
    item = {"title": row["title"], "description": row["description"], "time": row["onset"],
            "expires": row["expires"], "severity": row["severity"]}
    if row["regions"]:
        item["regions"] = row["regions"]
    if row["uri"]:
        item["uri"] = row["uri"]
    return item


class ForecastData:
    """One published forecast version, memory-mapped; what the forecast loader returns."""

    def __init__(self, version_dir: Path, entry: dict):
        self.version = entry["version"]
        self.grid = PointGrid(version_dir, entry["grids"][F.HOURLY_GRID])
        self.static = PointGrid(version_dir, entry["grids"][F.STATIC_GRID])
        if self.grid.dt_s != HOUR_S:
            raise ValueError(f"the hourly grid has steps of {self.grid.dt_s} s")
        self.column = self.grid.column
        self.inputs = forecast_series.input_columns(self.column)
        self.first_s, self.last_s = self.grid.time0, self.grid.time_end
        self.next_version_s = int(entry["next_version_expected_s"])
        model = entry["source"]["model"]
        self.sources = [{"name": model, "run_time": run["run_time"]}
                        for run in reversed(entry["source"]["runs"])]
        self.generated = bool(entry["source"]["generated"])
        self.alerts = AlertIndex(version_dir)

    def covers(self, unix_s: float) -> bool:
        """True when the data reaches back and forward to this time."""
        return self.first_s <= unix_s <= self.last_s

    def window(self, lat: float, lon: float, first_s: float, count: int) -> np.ndarray:
        """Values (count, nvar) at first_s + k hours, bilinear in space and linear in time
        (for zones whose hours start off the UTC hour); NaN where the data has no values."""
        start = (first_s - self.first_s) / HOUR_S
        i0 = math.floor(start)
        frac = start - i0
        lo, hi = max(i0, 0), min(i0 + count + 1, self.grid.ntime)
        padded = np.full((count + 1, len(self.column)), np.nan)
        if lo < hi:
            padded[lo - i0:hi - i0] = self.grid.series(lat, lon, lo, hi)
        if frac < 1e-9:
            return padded[:count]
        return padded[:count] * (1.0 - frac) + padded[1:] * frac

    def orography_m(self, lat: float, lon: float) -> float:
        """The model's surface height at the point (NaN when the inputs had none)."""
        return float(self.static.series(lat, lon, 0, 1)[0, 0])

    def cloud_cover(self, lat: float, lon: float, unix_s: int) -> float | None:
        """Cloud cover 0-1 at a point and time (bilinear, linear in time); None outside the
        loaded time range or where the model has no value. About 10 µs."""
        if not self.covers(unix_s):
            return None
        value = float(self.window(lat, lon, unix_s, 1)[0, self.column[F.CLOUD]])
        return None if value != value else min(1.0, max(0.0, value))


def load(version_dir: Path, entry: dict) -> ForecastData:
    """Loader for the store: map the grids, read the alerts, have the kernels compiled."""
    forecast_kernels.warm_up()
    return ForecastData(version_dir, entry)
