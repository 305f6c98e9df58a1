"""Snapshot history from memory-mapped arrays: windows are slices, never Python objects per
snapshot (interface 4.12, decisions rule 39)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from contract import Webcams as W
from server.mapped import arrow_table, npy

DAY_S = 86_400
RANGES = ("24h", "30d")
DAYS_30 = 30
RENDERED_EXT = ".svg"


@dataclass(frozen=True)
class Image:
    """Where one snapshot's image lives: rendered on demand, a copied file, or a CDN key."""

    kind: str                  # rendered | file | key
    ext: str                   # file name extension with the dot
    media_type: str
    ref: str | None = None     # object key (key) or artifact-relative file (file)


RENDERED = Image("rendered", RENDERED_EXT, "image/svg+xml")


class Snapshots:
    """The snapshot arrays of one published version."""

    def __init__(self, root: Path):
        self.root = root
        self.times = npy(root / W.SNAP_TIMES)
        self.offsets = npy(root / W.SNAP_OFFSETS)
        self.last = npy(root / W.LAST_TIME)
        self.daily_offsets = npy(root / W.DAILY_OFFSETS)
        self.daily_day = npy(root / W.DAILY_DAY)
        self.daily_index = npy(root / W.DAILY_INDEX)
        images_path = root / W.SNAP_IMAGES
        self.image_ids = npy(images_path) if images_path.exists() else None
        images = arrow_table(root / W.IMAGES_ARROW)
        self._kind = images.column("kind").to_pylist()
        self._file = images.column("file").to_pylist()
        self._ref = images.column("ref").to_pylist()
        self._media = images.column("media_type").to_pylist()

    @property
    def rendered(self) -> bool:
        """True when every image is rendered on demand (the generated catalog)."""
        return self.image_ids is None

    def last_time(self, row: int) -> int | None:
        """Capture time of the row's newest snapshot, or None when it has none."""
        t = int(self.last[row])
        return t if self.offsets[row + 1] > self.offsets[row] else None

    def last_index(self, row: int) -> int | None:
        """Index of the row's newest snapshot."""
        end = int(self.offsets[row + 1])
        return end - 1 if end > self.offsets[row] else None

    def window(self, row: int, range_: str, now: int, timezone: str) -> np.ndarray:
        """Indices of the row's snapshots in `range_` ending at `now`, oldest first: 24h every
        snapshot captured in [now - 24 h, now]; 30d for each of the 30 local calendar days up
        to today (the webcam's timezone), the snapshot closest to 12:00 local time."""
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        if range_ == "24h":
            times = self.times[a:b]
            lo = int(np.searchsorted(times, now - DAY_S, side="left"))
            hi = int(np.searchsorted(times, now, side="right"))
            return np.arange(a + lo, a + max(lo, hi), dtype=np.int64)
        today = local_day(now, timezone)
        da, db = int(self.daily_offsets[row]), int(self.daily_offsets[row + 1])
        days = self.daily_day[da:db]
        lo = int(np.searchsorted(days, today - (DAYS_30 - 1), side="left"))
        hi = int(np.searchsorted(days, today, side="right"))
        picks = self.daily_index[da + lo:da + hi]
        return picks[self.times[picks] <= now]

    def find(self, row: int, unix_s: int) -> int | None:
        """Index of the row's snapshot captured at exactly `unix_s`, or None."""
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        i = a + int(np.searchsorted(self.times[a:b], unix_s))
        return i if i < b and int(self.times[i]) == unix_s else None

    def image(self, index: int) -> Image:
        """The image of one snapshot."""
        if self.image_ids is None:
            return RENDERED
        image_id = int(self.image_ids[index])
        kind, media = self._kind[image_id], self._media[image_id] or "application/octet-stream"
        if kind == "file":
            file = self._file[image_id]
            return Image("file", Path(file).suffix, media, file)
        ref = self._ref[image_id]
        return Image("key", Path(ref).suffix, media, ref)

    def iso(self, indices: np.ndarray) -> list[str]:
        """Capture times as ISO 8601 UTC strings without the trailing Z."""
        stamps = self.times[indices].astype("datetime64[s]")
        return np.datetime_as_string(stamps, unit="s").tolist()


def local_day(unix_s: int, timezone: str) -> int:
    """Days since 1970-01-01 of the local calendar date at `unix_s` in `timezone`."""
    local = dt.datetime.fromtimestamp(unix_s, ZoneInfo(timezone))
    return local.date().toordinal() - dt.date(1970, 1, 1).toordinal()
