"""The loaded webcams area of one published version."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from server.areas.webcams_catalog import Catalog
from server.areas.webcams_clusters import Clusters
from server.areas.webcams_snapshots import Snapshots


@dataclass
class WebcamsData:
    """Catalog, snapshots and clusters, all memory-mapped from the version directory."""

    root: Path
    catalog: Catalog
    snapshots: Snapshots
    clusters: Clusters
    # row -> (link key, JSON): list items and details, rendered once per webcam and period
    # (their links change only with the period, the signing key and the link bases).
    items: dict[int, tuple[tuple, bytes]] = field(default_factory=dict)
    details: dict[int, tuple[tuple, bytes]] = field(default_factory=dict)


def load(version_dir: Path, entry: dict) -> WebcamsData:
    """Loader for the store."""
    catalog = Catalog(version_dir)
    return WebcamsData(version_dir, catalog, Snapshots(version_dir),
                       Clusters(version_dir, catalog.lat, catalog.lon))
