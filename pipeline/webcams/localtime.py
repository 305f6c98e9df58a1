"""Local calendar days and "closest to local noon" picks for many timestamps, vectorised.

Converting tens of millions of timestamps one by one (or with one timezone per column, as
polars and Arrow do) is slow, so each timezone's UTC offset is tabulated once as a step
function over the time span of the data: sampled every few hours and refined by bisection
where it changes. All times are integer unix seconds.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from zoneinfo import ZoneInfo

import numpy as np

from contract import DAY_S, HOUR_S

NOON_S = 43_200
SAMPLE_S = 12 * HOUR_S  # no timezone changes its offset twice within twelve hours
_POSITION_BITS = 32  # pick key: distance from noon above, position in the block below


def utc_offset_s(zone: ZoneInfo, unix_s: int) -> int:
    """The zone's UTC offset in seconds at one instant."""
    instant = dt.datetime.fromtimestamp(unix_s, dt.timezone.utc)
    return int(instant.astimezone(zone).utcoffset().total_seconds())


@lru_cache(maxsize=4096)
def offset_steps(timezone: str, start_s: int, end_s: int) -> tuple[np.ndarray, np.ndarray]:
    """(since, offset_s): offset_s[i] is the zone's UTC offset from since[i] on (since[0] is
    the start of the span); covers [start_s, end_s]."""
    zone = ZoneInfo(timezone)
    samples = list(range(start_s, end_s + SAMPLE_S, SAMPLE_S))
    since, offsets = [start_s], [utc_offset_s(zone, start_s)]
    for before, after in zip(samples, samples[1:]):
        if utc_offset_s(zone, after) == offsets[-1]:
            continue
        low, high = before, after  # offset at low is the current one, at high the next
        while high - low > 1:
            middle = (low + high) // 2
            if utc_offset_s(zone, middle) == offsets[-1]:
                low = middle
            else:
                high = middle
        since.append(high)
        offsets.append(utc_offset_s(zone, high))
    return np.asarray(since, dtype=np.int64), np.asarray(offsets, dtype=np.int64)


def local_seconds(times: np.ndarray, steps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Local wall-clock time of each instant as seconds since 1970-01-01 00:00 local, given
    the zone's offset_steps over a span that covers the instants."""
    times = np.asarray(times, dtype=np.int64)
    since, offsets = steps
    if len(offsets) == 1:
        return times + offsets[0]
    return times + offsets[np.maximum(np.searchsorted(since, times, side="right") - 1, 0)]


def noon_picks(local_s: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each (group, local day), the position of the instant closest to 12:00 local time
    (ties: the earlier position). `local_s` from local_seconds; `group` (non-negative, below
    2**20) tells series apart, e.g. one camera each; positions ascend in time within a group.

    Returns (positions, days) ordered by group, then day."""
    local_s = np.asarray(local_s, dtype=np.int64)
    if len(local_s) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if len(local_s) >= 1 << _POSITION_BITS:
        raise ValueError("too many instants for one call; pass smaller blocks")
    day = np.floor_divide(local_s, DAY_S)
    distance = np.abs(local_s - day * DAY_S - NOON_S)
    key = np.asarray(group, dtype=np.int64) << 32 | (day - day.min())
    position = np.arange(len(key), dtype=np.int64)
    if np.any(key[1:] < key[:-1]):
        # A local day can repeat after a DST change at midnight: sort, keeping time order.
        order = np.argsort(key, kind="stable")
        key, distance, position = key[order], distance[order], position[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    best = np.minimum.reduceat(distance << _POSITION_BITS | position, starts)
    picks = best & ((1 << _POSITION_BITS) - 1)
    return picks, day[picks]
