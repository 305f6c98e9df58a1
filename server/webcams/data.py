"""The loaded webcams area of one published version."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contract import AreaEntry
from server.webcams import kernels
from server.webcams.catalog import Catalog
from server.webcams.clusters import Clusters
from server.webcams.snapshots import Snapshots


@dataclass
class WebcamsData:
    """Catalog, snapshots and clusters, all memory-mapped from the version directory."""

    root: Path
    catalog: Catalog
    snapshots: Snapshots
    clusters: Clusters
    # link key -> row -> JSON: list items and details, rendered once per webcam and link key
    # (their links change only with the period, the signing key and the link bases).
    items: dict[tuple, dict[int, bytes]] = field(default_factory=dict)
    details: dict[tuple, dict[int, bytes]] = field(default_factory=dict)
    # Per row, the newest snapshot's image link up to its signature (None: no snapshot).
    current_heads: list[str | None] = field(default_factory=list)


def bucket(store: dict[tuple, dict[int, bytes]], key: tuple) -> dict[int, bytes]:
    """The renderings cached for one link key (older keys are dropped after a few)."""
    found = store.get(key)
    if found is None:
        if len(store) >= 4:
            store.clear()
        found = store[key] = {}
    return found


def load(version_dir: Path, entry: AreaEntry) -> WebcamsData:
    """Loader for the store."""
    from server.webcams.links import current_heads

    kernels.warm_up()        # compiled (or loaded) before the area counts as ready

    catalog = Catalog(version_dir)
    data = WebcamsData(version_dir, catalog, Snapshots(version_dir),
                       Clusters(version_dir, catalog.lat, catalog.lon))
    data.current_heads = current_heads(data)
    return data
