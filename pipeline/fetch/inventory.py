"""wgrib2 inventories (the `.idx` sidecars NOAA publishes beside each GRIB2 file).

One line per message (or sub-message, numbered N.1, N.2, sharing an offset):

    596:430008042:d=2026082600:APCP:surface:0-6 hour acc fcst:
    N:OFFSET:d=YYYYMMDDHH:VAR:LEVEL:FORECAST:[more fields, e.g. ENS=+1 or prob ...]

A message ends where the next one (the next larger offset) starts; the last runs to the
file's end, which the inventory does not say (its stop is None: a range to the end).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNIT_HOURS = {"hour": 1.0, "day": 24.0, "min": 1 / 60, "sec": 1 / 3600}
_SPAN = re.compile(r"^(\d+)-(\d+) (hour|day|min|sec) (\w+) fcst$")
_POINT = re.compile(r"^(\d+) (hour|day|min|sec) fcst$")


@dataclass(frozen=True)
class Entry:
    """One inventory line, with its message's byte range [start, stop)."""

    number: str  # "596", or "12.2" for a sub-message
    start: int
    stop: int | None  # None: the file's last message, to its end
    date: str  # the reference time, YYYYMMDDHH
    variable: str  # TMP, APCP, ...
    level: str  # "2 m above ground", "surface", ...
    forecast: str  # "anl", "6 hour fcst", "0-6 hour acc fcst", ...
    extra: str = ""  # anything after the forecast field

    @property
    def size(self) -> int | None:
        return None if self.stop is None else self.stop - self.start


@dataclass(frozen=True)
class Forecast:
    """A forecast field read: kind 'anl', 'fcst' (instantaneous) or the statistic of a time
    range ('acc', 'ave', 'max', 'min'); hours from the reference time ('other': unread)."""

    kind: str
    start_h: float | None = None
    end_h: float | None = None


class InventoryError(ValueError):
    """A line that is not a wgrib2 inventory line (an error page served as the .idx)."""


def parse(text: str) -> list[Entry]:
    """The entries of an inventory, in file order, each with its byte range."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(":")
        if len(fields) < 6 or not fields[1].isdigit() or not fields[2].startswith("d="):
            raise InventoryError(f"line {lineno} is not an inventory line: {line[:80]!r}")
        rows.append(fields)
    offsets = sorted({int(fields[1]) for fields in rows})
    following = {here: after for here, after in zip(offsets, offsets[1:])}
    return [
        Entry(
            f[0],
            int(f[1]),
            following.get(int(f[1])),
            f[2][2:],
            f[3],
            f[4],
            f[5],
            ":".join(f[6:]).strip(":"),
        )
        for f in rows
    ]


def forecast(field: str) -> Forecast:
    """Read a forecast field ('anl', '7 hour fcst', '0-7 hour acc fcst', ...)."""
    field = field.strip()
    if field == "anl":
        return Forecast("anl", 0.0, 0.0)
    point = _POINT.match(field)
    if point:
        hours = int(point[1]) * UNIT_HOURS[point[2]]
        return Forecast("fcst", hours, hours)
    span = _SPAN.match(field)
    if span:
        scale = UNIT_HOURS[span[3]]
        return Forecast(span[4], int(span[1]) * scale, int(span[2]) * scale)
    return Forecast("other")
