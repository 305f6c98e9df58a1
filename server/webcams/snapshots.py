"""Snapshot history from memory-mapped arrays: windows are slices, never Python objects per
snapshot (docs/api/webcams.md#snapshots)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from contract import DAY_S
from contract import Webcams as W
from server.artifacts.mapped import NpyFile, arrow_table, npy

RANGES = ("24h", "30d")
DAYS_30 = 30
RENDERED_EXT = ".svg"
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


@dataclass(frozen=True)
class Image:
    """Where one snapshot's image lives: rendered on demand, a copied file, or a CDN key."""

    kind: str  # rendered | file | key
    ext: str  # file name extension with the dot
    media_type: str
    ref: str | None = None  # object key (key) or artifact-relative file (file)


RENDERED = Image("rendered", RENDERED_EXT, "image/svg+xml")


class Snapshots:
    """The snapshot arrays of one published version."""

    def __init__(self, root: Path):
        self.root = root
        self.times = NpyFile(root / W.SNAP_TIMES)
        self.sparse = npy(root / W.SNAP_SPARSE)
        self.offsets = npy(root / W.SNAP_OFFSETS)
        self.last = npy(root / W.LAST_TIME)
        self.daily_offsets = npy(root / W.DAILY_OFFSETS)
        self.daily_day = npy(root / W.DAILY_DAY)
        self.daily_index = npy(root / W.DAILY_INDEX)
        self.daily_time = npy(root / W.DAILY_TIME)
        images_path = root / W.SNAP_IMAGES
        self.image_ids = NpyFile(images_path) if images_path.exists() else None
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

    def window(
        self, row: int, range_: str, now: int, timezone: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(indices, capture times) of the row's snapshots in `range_` ending at `now`, oldest
        first: 24h every snapshot captured in [now - 24 h, now]; 30d for each of the last 30
        local calendar days (the webcam's timezone) whose pick is final, the snapshot closest to
        12:00 local time (one captured after now is left out: a feed's clock may run ahead):
        up to today once today's pick is final (_final), else up to yesterday."""
        if range_ == "24h":
            a, b = int(self.offsets[row]), int(self.offsets[row + 1])
            lo = self.search(a, b, now - DAY_S, "left")
            # Usually nothing is newer than now: no second search.
            hi = (
                b
                if b == a or int(self.last[row]) <= now
                else max(lo, self.search(lo, b, now, "right"))
            )
            return np.arange(lo, hi, dtype=np.int64), self.times.read(lo, hi)
        today, noon = local_day_noon(now, timezone)
        da, db = int(self.daily_offsets[row]), int(self.daily_offsets[row + 1])
        days = self.daily_day[da:db]
        # A day more than 30: the first is in only while today is not (not final yet).
        lo = da + int(np.searchsorted(days, today - DAYS_30, side="left"))
        hi = da + int(np.searchsorted(days, today, side="right"))
        times, days = self.daily_time[lo:hi], days[lo - da : hi - da]
        keep = times <= now
        indices, times, days = self.daily_index[lo:hi][keep], times[keep], days[keep]
        has_today = bool(len(times)) and int(days[-1]) == today
        final = has_today and self._final(row, int(indices[-1]), int(times[-1]), noon, now)
        if has_today and not final:  # today's pick may still change
            indices, times, days = indices[:-1], times[:-1], days[:-1]
        first = today - (DAYS_30 - 1 if final else DAYS_30)
        start = int(np.searchsorted(days, first, side="left"))
        return indices[start:], times[start:]

    def _final(self, row: int, index: int, pick: int, noon: int, now: int) -> bool:
        """Today's pick (captured at `pick` <= now) can no longer change: a snapshot captured
        at or after today's local noon, by now, exists (snapshots arrive in time order, so any
        later one is further from noon). Before local noon today is left out, as it is while
        the data stops short of noon (an artifact built in the morning): its pick would be a
        morning or night frame. In data captured before the server's clock the answer changes
        only at local noon, a multiple of five minutes in every zone, so at a link period's
        end (PERIOD_S): a 30d answer cached with the period's ETag and max-age stays right."""
        if pick >= noon:
            return True
        following = index + 1
        return (
            following < int(self.offsets[row + 1])
            and noon <= int(self.times.read(following, following + 1)[0]) <= now
        )

    def search(self, a: int, b: int, value: int, side: str) -> int:
        """np.searchsorted over SNAP_TIMES[a:b] (sorted), as an index into SNAP_TIMES: the
        sparse index narrows it to one block, the only part read."""
        stride = W.SNAP_STRIDE
        k0, k1 = -(-a // stride), -(-b // stride)  # sparse entries at positions in [a, b)
        j = int(self.sparse[k0:k1].searchsorted(value, side=side))
        start = a if j == 0 else (k0 + j - 1) * stride + 1
        end = b if k0 + j >= k1 else (k0 + j) * stride
        return start + int(self.times.read(start, end).searchsorted(value, side=side))

    def find(self, row: int, unix_s: int) -> int | None:
        """Index of the row's snapshot captured at exactly `unix_s`, or None."""
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        i = self.search(a, b, unix_s, "left")
        return i if i < b and int(self.times.read(i, i + 1)[0]) == unix_s else None

    def images(self, indices: np.ndarray) -> list[Image]:
        """The images of snapshots (indices ascending)."""
        if self.image_ids is None:
            return [RENDERED] * len(indices)
        return [self._image(int(i)) for i in self.image_ids.take(indices).tolist()]

    def image(self, index: int) -> Image:
        """The image of one snapshot."""
        if self.image_ids is None:
            return RENDERED
        return self._image(int(self.image_ids.read(index, index + 1)[0]))

    def _image(self, image_id: int) -> Image:
        kind, media = self._kind[image_id], self._media[image_id] or "application/octet-stream"
        if kind == "file":
            file = self._file[image_id]
            return Image("file", Path(file).suffix, media, file)
        ref = self._ref[image_id]
        return Image("key", Path(ref).suffix, media, ref)


_HOURS_MINUTES = [f"{h:02d}:{m:02d}" for h in range(24) for m in range(60)]
_SECONDS = [f"{s:02d}" for s in range(60)]


@lru_cache(maxsize=4096)
def _date(day: int) -> str:
    return (dt.date(1970, 1, 1) + dt.timedelta(days=day)).isoformat()


def iso_parts(times: np.ndarray) -> list[tuple[str, str, str]]:
    """(date, hours:minutes, seconds) of each time, UTC: tables for the time of day and a
    cache of dates, faster than datetime or numpy formatting."""
    days, seconds = np.divmod(np.asarray(times, dtype=np.int64), DAY_S)
    minutes, seconds = np.divmod(seconds, 60)
    day_list = days.tolist()
    dates = {d: _date(d) for d in set(day_list)}  # a window spans a few days at most
    hours_minutes, secs = _HOURS_MINUTES, _SECONDS
    return [
        (dates[d], hours_minutes[m], secs[s])
        for d, m, s in zip(day_list, minutes.tolist(), seconds.tolist())
    ]


def iso(times: np.ndarray) -> list[str]:
    """Capture times as ISO 8601 UTC strings without the trailing Z."""
    return [f"{d}T{hm}:{s}" for d, hm, s in iso_parts(times)]


# ZoneInfo keeps only its last few zones strongly: webcams span hundreds, and re-reading a zone
# file cost some 80 µs a request.
zone = lru_cache(maxsize=1024)(ZoneInfo)


def local_day_noon(unix_s: int, timezone: str) -> tuple[int, int]:
    """(days since 1970-01-01 of the local calendar date at `unix_s` in `timezone`, the unix
    time of 12:00 local on that date)."""
    local = dt.datetime.fromtimestamp(unix_s, zone(timezone))
    noon = local.replace(hour=12, minute=0, second=0, microsecond=0, fold=0)
    return local.date().toordinal() - _EPOCH_ORDINAL, int(noon.timestamp())
