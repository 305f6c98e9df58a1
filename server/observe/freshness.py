"""When each area's data was made, for its age in /metrics: the forecast's and air quality's
newest model run (from the manifest), the webcams' newest snapshot (from the loaded data).
Geocoding has no such time (a gazetteer is not a series), so it has no age."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np


def _unix(iso: str) -> float:
    """Unix seconds of an ISO 8601 time such as 2026-11-29T00:00:00Z."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _forecast(entry: dict, data: Any) -> float | None:
    runs = entry.get("run_times") or []
    return max(map(_unix, runs)) if runs else None


def _air_quality(entry: dict, data: Any) -> float | None:
    domains = entry.get("source", {}).get("domains", {}).values()
    runs = [run for domain in domains for run in domain.get("runs", ())]
    return max(map(_unix, runs)) if runs else None


def _webcams(entry: dict, data: Any) -> float | None:
    snapshots = getattr(data, "snapshots", None)
    if snapshots is None:
        return None
    offsets = np.asarray(snapshots.offsets)
    held = offsets[1:] > offsets[:-1]  # rows with at least one snapshot
    return float(np.asarray(snapshots.last)[held].max()) if held.any() else None


DATA_TIME: dict[str, Callable[[dict, Any], float | None]] = {
    "forecast": _forecast,
    "air_quality": _air_quality,
    "webcams": _webcams,
}


def data_time(area: str, entry: dict, data: Any) -> float | None:
    """Unix time the area's data describes up to (its newest run or snapshot), or None."""
    how = DATA_TIME.get(area)
    try:
        return how(entry, data) if how else None
    except (ValueError, TypeError, AttributeError):  # an unexpected manifest: no age
        return None
