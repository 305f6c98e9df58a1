"""The normalised webcam catalog every webcam source returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

# Columns of WebcamCatalog.webcams (location_name is added by the area from the gazetteer;
# location_public_id and timezone may be null there and are filled by the area).
SOURCE_SCHEMA = {
    "public_id": pl.String,
    "name": pl.String,
    "latitude": pl.Float64,
    "longitude": pl.Float64,
    "country_code": pl.String,
    "views": pl.Int64,
    "location_public_id": pl.String,
    "timezone": pl.String,
    "status": pl.String,
}
ACTIVE, INACTIVE = "active", "inactive"
# Coordinates as the API shows them (docs/api/conventions.md#numbers): stored so, every filter,
# cluster and nearest place uses the values a client sees (a bbox of a shown position finds the
# webcam).
COORDINATE_DECIMALS = 5
# Image kinds: a file copied into the artifact, or an object key on the configured CDN.
FILE, KEY = "file", "key"
# ref: the input's image reference (path under images/ or object key); source: the local file.
IMAGES_SCHEMA = {
    "image_id": pl.Int32,
    "kind": pl.String,
    "ref": pl.String,
    "media_type": pl.String,
    "source": pl.String,
}


@dataclass(frozen=True)
class SnapshotSeries:
    """Snapshots of the served webcams, in the area's row order, each webcam's in time order.

    `block(a, b)` returns rows a..b-1's capture times (unix seconds, uint32, concatenated) and
    their image ids (int32 into `images`), or None for ids when every image is rendered on
    demand. Blocks keep memory bounded at tens of millions of snapshots.
    """

    counts: np.ndarray  # snapshots per row, int64
    block: Callable[[int, int], tuple[np.ndarray, np.ndarray | None]]
    span: tuple[int, int]  # earliest and latest capture time (0, 0 if none)
    images: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=IMAGES_SCHEMA))
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows left out

    @property
    def rendered(self) -> bool:
        """True when images are rendered on demand by the server (no image ids)."""
        return self.images.height == 0


@dataclass(frozen=True)
class WebcamCatalog:
    """Webcams (SOURCE_SCHEMA, public ids unique) and their snapshots."""

    webcams: pl.DataFrame
    # Snapshots for the served (active) webcams, given their public ids in row order.
    snapshots: Callable[[pl.Series], SnapshotSeries]
    inputs: list[Path]
    kind: str  # "real" (DIR/webcams/) or "generated" (the offline default)
    notes: str
    details: dict = field(default_factory=dict)  # further manifest facts of the source


def series_from_sorted(
    times: np.ndarray,
    rows: np.ndarray,
    n_rows: int,
    image_ids: np.ndarray | None,
    images: pl.DataFrame,
    dropped: dict[str, int],
) -> SnapshotSeries:
    """A SnapshotSeries over in-memory arrays already sorted by (row, time)."""
    counts = np.bincount(rows, minlength=n_rows).astype(np.int64)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])

    def block(a: int, b: int) -> tuple[np.ndarray, np.ndarray | None]:
        lo, hi = offsets[a], offsets[b]
        return times[lo:hi], None if image_ids is None else image_ids[lo:hi]

    span = (int(times.min()), int(times.max())) if len(times) else (0, 0)
    return SnapshotSeries(counts, block, span, images, dropped)


def shown_coordinates(webcams: pl.DataFrame) -> pl.DataFrame:
    """The webcams with latitude and longitude rounded to COORDINATE_DECIMALS, as Python's
    round() (the one the served JSON used) does."""
    return webcams.with_columns(
        pl.Series(
            name, [round(v, COORDINATE_DECIMALS) for v in webcams[name].to_list()], dtype=pl.Float64
        )
        for name in ("latitude", "longitude")
    )
