"""Offline default alerts: derived from the generated run's fields, written as NWS GeoJSON.

While the generated run is written, the collector keeps, for each cell, the extremes over the
first ALERT_HOURS hours and when each hazard starts and ends. Connected areas past a threshold
become alerts whose polygon is the convex hull of their cells; the largest few of each kind
are written, marked as generated, as an NWS-style FeatureCollection for the real reader.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scipy import ndimage
from scipy.spatial import ConvexHull, QhullError

from contract import HOUR_S
from pipeline.common.io import write_bytes
from pipeline.forecast.sources.generated_model import Grid

ALERT_HOURS = 48
PER_HAZARD = 3
EXPIRES_AFTER_S = 3 * HOUR_S
# (event, severity, field, threshold, above?, unit description)
HAZARDS = (
    ("High Wind Warning", "Severe", "gust", 26.0, True, "gusts to {value:.0f} m/s"),
    ("Heavy Rain Warning", "Moderate", "rate", 4.0, True, "rain rates up to {value:.1f} mm/h"),
    ("Excessive Heat Warning", "Severe", "t_max", 38.0, True, "temperatures up to {value:.0f} °C"),
    (
        "Extreme Cold Warning",
        "Severe",
        "t_min",
        -35.0,
        False,
        "temperatures down to {value:.0f} °C",
    ),
)


class AlertCollector:
    """Called with every written step; turns the first ALERT_HOURS hours into alerts."""

    def __init__(self, grid: Grid, run_s: int):
        self.grid, self.run_s = grid, run_s
        shape = (len(grid.lat), len(grid.lon))
        self.extreme = {
            "gust": np.full(shape, -np.inf),
            "rate": np.full(shape, -np.inf),
            "t_max": np.full(shape, -np.inf),
            "t_min": np.full(shape, np.inf),
        }
        self.first = {k: np.full(shape, np.iinfo(np.int64).max) for k in self.extreme}
        self.last = {k: np.full(shape, np.iinfo(np.int64).min) for k in self.extreme}

    def __call__(self, valid_s: int, fields: dict[str, np.ndarray]) -> None:
        if valid_s > self.run_s + ALERT_HOURS * HOUR_S:
            return
        now = {
            "gust": fields["gust"],
            "rate": fields["prate"] * 3600.0,
            "t_max": fields["t2m"] - 273.15,
            "t_min": fields["t2m"] - 273.15,
        }
        for _event, _, name, threshold, above, _ in HAZARDS:
            value = now[name]
            if above:
                np.maximum(self.extreme[name], value, out=self.extreme[name])
                hit = value >= threshold
            else:
                np.minimum(self.extreme[name], value, out=self.extreme[name])
                hit = value <= threshold
            self.first[name][hit] = np.minimum(self.first[name][hit], valid_s)
            self.last[name][hit] = np.maximum(self.last[name][hit], valid_s)

    def write(self, path: Path) -> Path:
        """The alerts as one GeoJSON FeatureCollection."""
        features = []
        for event, severity, name, threshold, above, wording in HAZARDS:
            hit = (self.extreme[name] >= threshold) if above else (self.extreme[name] <= threshold)
            features += self._features(event, severity, name, hit, wording, above)
        write_bytes(
            (
                json.dumps(
                    {
                        "type": "FeatureCollection",
                        "title": "Generated alerts (offline default; derived from the generated run)",
                        "features": features,
                    },
                    indent=1,
                    sort_keys=True,
                )
                + "\n"
            ).encode(),
            path,
        )
        return path

    def _features(self, event, severity, name, hit, wording, above) -> list[dict]:
        # Columns reordered to -180..180, so areas are split at the antimeridian, not at 0°.
        lon = ((self.grid.lon + 180.0) % 360.0) - 180.0
        order = np.argsort(lon, kind="stable")
        labels, count = ndimage.label(hit[:, order])
        if count == 0:
            return []
        sizes = ndimage.sum_labels(np.ones_like(labels), labels, index=np.arange(1, count + 1))
        biggest = np.argsort(-sizes, kind="stable")[:PER_HAZARD] + 1
        out = []
        for n, label in enumerate(biggest):
            rows, cols = np.nonzero(labels == label)
            cells = (rows, order[cols])
            ring = self._hull(self.grid.lat[rows], lon[order][cols])
            if ring is None:
                continue
            value = self.extreme[name][cells].max() if above else self.extreme[name][cells].min()
            onset, ends = int(self.first[name][cells].min()), int(self.last[name][cells].max())
            lat_c, lon_c = float(self.grid.lat[rows].mean()), float(lon[order][cols].mean())
            where = (
                f"{abs(lat_c):.1f}°{'N' if lat_c >= 0 else 'S'} "
                f"{abs(lon_c):.1f}°{'E' if lon_c >= 0 else 'W'}"
            )
            area = f"Around {where}"
            ident = f"generated-{self.run_s}-{name}-{n}"
            out.append(
                {
                    "type": "Feature",
                    "id": ident,
                    "geometry": {
                        "type": "Polygon",
                        "coordinates": [[[round(x, 4), round(y, 4)] for y, x in ring]],
                    },
                    "properties": {
                        "id": ident,
                        "areaDesc": area,
                        "event": event,
                        "severity": severity,
                        "status": "Actual",
                        "messageType": "Alert",
                        "category": "Met",
                        "certainty": "Likely",
                        "urgency": "Expected",
                        "sent": _iso(self.run_s),
                        "effective": _iso(self.run_s),
                        "onset": _iso(onset),
                        "ends": _iso(ends + EXPIRES_AFTER_S),
                        "expires": _iso(ends + EXPIRES_AFTER_S),
                        "senderName": "Offline default (generated, not a real warning)",
                        "headline": f"{event} (generated) around {where}",
                        "description": f"GENERATED EXAMPLE, NOT A REAL WARNING. The generated "
                        f"forecast run shows {wording.format(value=value)} "
                        f"around {where}.",
                    },
                }
            )
        return out

    def _hull(self, lat: np.ndarray, lon: np.ndarray) -> list[tuple[float, float]] | None:
        """Convex hull of the cells (each widened to its corners), closed, counter-clockwise."""
        half = self.grid.step_deg / 2
        corners = np.concatenate(
            [np.column_stack([lat + dy, lon + dx]) for dy in (-half, half) for dx in (-half, half)]
        )
        corners[:, 0] = np.clip(corners[:, 0], -90, 90)
        try:
            hull = ConvexHull(corners)
        except QhullError:
            return None
        ring = [tuple(map(float, corners[i])) for i in hull.vertices]
        return ring + ring[:1]


def _iso(unix_s: int) -> str:
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
