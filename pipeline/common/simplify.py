"""Fewer vertices for polygon rings (Douglas-Peucker), for area outlines fetched at survey
resolution (NWS zones, MeteoAlarm regions) that only need to place a point in an alert."""

from __future__ import annotations

import numpy as np

MIN_RING = 4  # a closed triangle


def simplify_ring(ring: np.ndarray, tolerance: float) -> np.ndarray:
    """The ring's vertices (n, 2) that Douglas-Peucker keeps at `tolerance` (in the ring's
    units), first and last always; the ring unchanged when fewer would not be a polygon."""
    n = len(ring)
    if n <= MIN_RING or tolerance <= 0:
        return ring
    keep = np.zeros(n, dtype=bool)
    keep[0] = keep[-1] = True
    stack = [(0, n - 1)]
    while stack:
        a, b = stack.pop()
        if b - a < 2:
            continue
        chord = ring[b] - ring[a]
        points = ring[a + 1 : b] - ring[a]
        length = float(np.hypot(chord[0], chord[1]))
        if length > 0:
            distance = np.abs(chord[0] * points[:, 1] - chord[1] * points[:, 0]) / length
        else:  # a closed ring's first chord: distance from its one point
            distance = np.hypot(points[:, 0], points[:, 1])
        i = int(np.argmax(distance))
        if distance[i] > tolerance:
            k = a + 1 + i
            keep[k] = True
            stack += [(a, k), (k, b)]
    out = ring[keep]
    return out if len(out) >= MIN_RING else ring
