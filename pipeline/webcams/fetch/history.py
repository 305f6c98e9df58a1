"""Which of an owned camera's stored images the history window keeps.

The server shows every snapshot of the last 24 hours and, for 30 days, one per local day: the
one closest to 12:00 local time (ties: the earlier). So every image of the last KEEP_ALL_S is
kept, and before that, to KEEP_DAYS days, each local day's image closest to noon (removing the
others never changes which one that is); older ones go.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from zoneinfo import ZoneInfo

KEEP_ALL_S = 25 * 3600  # the 24-hour history, and an hour for clocks and schedules
KEEP_DAYS = 31  # the 30-day history, and the day it starts in


@lru_cache(maxsize=1024)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def kept(times: list[int], timezone: str, now: int) -> set[int]:
    """The capture times (unix seconds) of one camera's images to keep."""
    zone = _zone(timezone)
    keep = {t for t in times if t >= now - KEEP_ALL_S}
    best: dict[dt.date, tuple[int, int]] = {}  # local day -> (distance to noon, time)
    for t in times:
        if t >= now - KEEP_ALL_S or t < now - KEEP_DAYS * 86400:
            continue
        local = dt.datetime.fromtimestamp(t, zone)
        noon = local.replace(hour=12, minute=0, second=0, microsecond=0, fold=0)
        candidate = (abs(t - int(noon.timestamp())), t)
        day = local.date()
        if day not in best or candidate < best[day]:
            best[day] = candidate
    return keep | {t for _, t in best.values()}
