"""The loaded webcams area of one published version."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contract import AreaEntry
from contract import Webcams as W
from server.artifacts.mapped import arrow_table
from server.webcams import kernels
from server.webcams.catalog import Catalog
from server.webcams.clusters import Clusters
from server.webcams.snapshots import Snapshots

# What a provider's terms ask to be shown with its webcams: (name, site, courtesy line).
PROVIDERS = {"windy": ("Windy.com", "https://www.windy.com/", "Webcams provided by windy.com")}


@dataclass(frozen=True)
class ProviderLink:
    """A provider's webcam: its image is the provider's link, valid until `expires`."""

    provider: str
    image_url: str | None
    player_url: str | None
    page_url: str | None
    updated: int | None
    expires: int

    def usable(self, until: int) -> bool:
        """Whether the image link is still valid at `until` (an answer's cache period end:
        no answer, fresh or cached, ever holds an expired link)."""
        return self.image_url is not None and self.expires >= until


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
    # Rows of a provider's webcams (their images are the provider's links, never ours).
    provider: dict[int, ProviderLink] = field(default_factory=dict)


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

    kernels.warm_up()  # compiled (or loaded) before the area counts as ready

    catalog = Catalog(version_dir)
    data = WebcamsData(
        version_dir,
        catalog,
        Snapshots(version_dir),
        Clusters(version_dir, catalog.lat, catalog.lon),
    )
    data.current_heads = current_heads(data)
    data.provider = provider_links(version_dir)
    return data


def provider_links(version_dir: Path) -> dict[int, ProviderLink]:
    """The provider links of the version (none when it has no provider's webcams)."""
    path = version_dir / W.PROVIDER_LINKS
    if not path.exists():
        return {}
    table = arrow_table(path).to_pydict()
    return {
        row: ProviderLink(*values)
        for row, *values in zip(*(table[c] for c in W.PROVIDER_LINK_COLUMNS))
    }
