"""Alerts as artifacts: the alerts table and the point-in-polygon index the server maps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from contract import Forecast as F
from pipeline.common.io import write_npy, write_parquet
from pipeline.forecast.sources.alerts import Alert

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("title", pa.string()),
        ("description", pa.string()),
        ("severity", pa.string()),
        ("onset", pa.int64()),
        ("expires", pa.int64()),
        ("regions", pa.list_(pa.string())),
        ("uri", pa.string()),
        ("source", pa.string()),
    ]
)
FILES = [
    F.ALERTS,
    F.ALERT_BOXES,
    F.ALERT_VERTICES,
    F.ALERT_RING_START,
    F.ALERT_RING_PART,
    F.ALERT_PART_ALERT,
]


def write(version, alerts: list[Alert]) -> int:
    """Write the table (alerts in the given order) and the polygon index; returns the rows."""
    table = pa.table(
        {name: [getattr(a, name) for a in alerts] for name in F.ALERT_COLUMNS}, schema=SCHEMA
    )
    write_parquet(table, version / F.ALERTS)
    boxes, vertices, ring_start, ring_part, part_alert = [], [], [0], [], []
    for index, alert in enumerate(alerts):
        rings = [ring for polygon in alert.polygons for ring in polygon]
        points = np.concatenate(rings)
        boxes.append(
            [points[:, 0].min(), points[:, 1].min(), points[:, 0].max(), points[:, 1].max()]
        )
        for polygon in alert.polygons:
            for ring in polygon:
                vertices.append(ring)
                ring_start.append(ring_start[-1] + len(ring))
                ring_part.append(len(part_alert))
            part_alert.append(index)
    write_npy(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), version / F.ALERT_BOXES)
    write_npy(
        np.concatenate(vertices).astype(np.float64) if vertices else np.zeros((0, 2)),
        version / F.ALERT_VERTICES,
    )
    write_npy(np.asarray(ring_start, dtype=np.int64), version / F.ALERT_RING_START)
    write_npy(np.asarray(ring_part, dtype=np.int32), version / F.ALERT_RING_PART)
    write_npy(np.asarray(part_alert, dtype=np.int32), version / F.ALERT_PART_ALERT)
    return len(alerts)
