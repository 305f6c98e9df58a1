"""Points on the sphere: unit vectors, whose chords order points as great circles do."""

from __future__ import annotations

import numpy as np

EARTH_RADIUS_KM = 6371.0088     # mean radius (docs/api/geocoding.md#reverse)


def unit_vectors(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    """(N, 3) unit vectors: the chord between two is monotonic in their great-circle
    distance, so a KD-tree over these finds exact nearest points."""
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    return np.column_stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


def chord_of_km(distance_km: float) -> float:
    """The chord (on the unit sphere) of a great-circle distance."""
    return float(2.0 * np.sin(distance_km / EARTH_RADIUS_KM / 2.0))
