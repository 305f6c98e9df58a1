"""The forecast response as bytes: the envelope, alerts and flags here; the blocks (currently,
minutely, hourly, daily) from one compiled call (render); their summaries filled in
from the caches of summary.

What is shared by requests is memoised by its nature: a zone's local day (the marks of its
hours, the moon), a language's titles and summaries, a unit system's conversions, the data
version's alerts and flags. Nothing is cached per request.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple
from zoneinfo import ZoneInfo

import numpy as np
import orjson

from contract import HOUR_S
from server.artifacts.grid import point_lon
from server.forecast import jsonbytes, kernels, render, series, summary, text
from server.forecast.place import Place, zone
from server.forecast.science import moon
from server.forecast.science.units import SYSTEMS, UnitSystem
from server.kernels.bilinear import Corners

if TYPE_CHECKING:
    from server.forecast.data import ForecastData

log = logging.getLogger("server.forecast")

HOURLY_HOURS, EXTENDED_HOURS = 48, 168
DAYS = render.DAYS
BLOCKS = ("currently", "minutely", "hourly", "daily", "alerts")
BLOCK_BITS = {
    "currently": render.CURRENTLY,
    "minutely": render.MINUTELY,
    "hourly": render.HOURLY,
    "daily": render.DAILY,
}
HOLE_ROWS = EXTENDED_HOURS + 64  # room for every missing title of an extended answer
HOUR_ROWS = (DAYS + 2) * 24 + 2  # more than any answer's hours from the first midnight
ENTRY_BYTES = 1024  # more than an hourly entry's keys and numbers take


@dataclass(frozen=True)
class Request:
    """What the handler parsed."""

    lat: float
    lon: float
    units: str  # a unit system's name, or "auto"
    lang: str
    hours: int  # 48, or 168 with extend=hourly
    blocks: frozenset[str]  # the blocks to include


class Point(NamedTuple):
    """What an answer reads at its point (ForecastData.point): the hourly grid's four cells
    around it (PointGrid.block: (2, 2, hours, nvar)), the whole static grid, and the point's
    Corners in each: in the block (its rows and columns 0 and 1) and in the static grid."""

    hourly: np.ndarray
    static: np.ndarray
    cell: Corners
    static_cell: Corners


class LocalDay(NamedTuple):
    """A zone's local day and the next ones: UTC instants (days + 2, marks) of
    kernels.MARK_HOURS, their hour index from the first midnight, today's weekday
    (0 Monday), the moon's phase at each day's local noon, and the shift (s) of each local
    hour: hour i starts at the first midnight + i hours + shift[i]."""

    marks: np.ndarray
    mi: np.ndarray
    weekday: int
    moon: np.ndarray
    shift: np.ndarray


@lru_cache(maxsize=8192)
def local_day(tz: str, year: int, month: int, day: int) -> LocalDay:
    """The marks of the local days starting at the given date in a zone (cached per zone and
    day)."""
    z = zone(tz)
    first = datetime(year, month, day).toordinal()
    marks = np.empty((DAYS + 2, len(kernels.MARK_HOURS)))
    for d in range(DAYS + 2):
        date = datetime.fromordinal(first + d)
        for m, hour in enumerate(kernels.MARK_HOURS):
            marks[d, m] = date.replace(hour=hour, tzinfo=z).timestamp()
    t0 = marks[0, kernels.MIDNIGHT]
    mi = ((marks - t0) // HOUR_S).astype(np.int64)
    noon = np.ascontiguousarray(marks[:DAYS, kernels.H12])
    return LocalDay(
        marks,
        mi,
        datetime.fromordinal(first).weekday(),
        moon.phase(noon),
        _hour_shifts(z, t0, marks),
    )


def _hour_shifts(z: ZoneInfo, t0: float, marks: np.ndarray) -> np.ndarray:
    """Where local hours start off the first midnight's hour grid: after a change of the UTC
    offset by a fraction of an hour (Lord Howe's 30-minute DST) every later local hour starts
    that fraction later (a whole-hour change moves no hour off the grid; the marks, being
    local hours, then all lie on it). The hour indexes (mi) stay those of floor division."""
    shift = np.zeros(HOUR_ROWS)
    if not ((marks - t0) % HOUR_S).any():
        return shift
    base = datetime.fromtimestamp(t0, z).utcoffset().total_seconds()
    for i in range(HOUR_ROWS):
        offset = datetime.fromtimestamp(t0 + HOUR_S * i, z).utcoffset().total_seconds()
        shift[i] = (base - offset) % HOUR_S
    return shift


_local = threading.local()


def _scratch(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This thread's output arrays for render (buffer, holes, numbers)."""
    out = getattr(_local, "out", None)
    if out is None or len(out[0]) < capacity:
        out = _local.out = (
            np.empty(capacity, dtype=np.uint8),
            np.zeros((HOLE_ROWS, jsonbytes.HOLE_WIDTH), dtype=np.int64),
            np.zeros(HOLE_ROWS),
        )
    return out


def respond(
    data: ForecastData, place: Place, request: Request, units: UnitSystem, now_s: float
) -> bytes:
    """The response body (docs/api/forecast.md#answer) in a unit system."""
    r = request
    local = datetime.fromtimestamp(now_s, place.zone)
    day = local_day(place.timezone, local.year, local.month, local.day)
    blocks = 0
    for name in r.blocks:
        blocks |= BLOCK_BITS.get(name, 0)
    known = place.elevation_m is not None
    lon = point_lon(r.lat, r.lon)  # a pole is one point, whatever the longitude asked
    point = data.point(r.lat, lon)
    params = np.array(
        (
            r.lat,
            lon,
            now_s,
            data.first_s,
            data.last_s,
            r.hours,
            place.elevation_m if known else 0.0,
            known,
            blocks,
            units.precipitation,
            units.fahrenheit,
            day.weekday,
            data.sun_t0,
            *point.cell,
            *point.static_cell,
        )
    )
    titles = text.title_table(r.lang)
    while True:
        out = _scratch(16384 + (r.hours + 2) * (ENTRY_BYTES + titles.longest))
        n = render.respond(
            point.hourly,
            point.static,
            params,
            day.marks,
            day.mi,
            day.shift,
            day.moon,
            data.suns,
            series.conversion(units).matrix,
            data.inputs,
            titles.arrays,
            out,
        )
        if n >= 0:
            break
        titles.add(set(out[1][1 : 1 + out[1][0, 0], 0].tolist()))
    elevation = out[2][0]
    head = orjson.dumps(
        {
            # + 0.0: -0 is echoed as 0.0 (as air quality does)
            "latitude": round(r.lat, 5) + 0.0,
            "longitude": round(r.lon, 5) + 0.0,
            "timezone": place.timezone,
            "offset": local.utcoffset().total_seconds() / HOUR_S,
            "elevation": None if elevation != elevation else round(elevation * units.elevation),
        }
    )
    parts = [head[:-1]]
    _fill(parts, out, n, r.lang)
    if "alerts" in r.blocks:
        parts += [b',"alerts":', data.alerts.json_at(r.lat, lon, now_s)]
    parts += [b',"flags":', data.flags_json(units.name), b"}"]
    return b"".join(parts)


def _fill(parts: list, out: tuple, n: int, lang: str) -> None:
    """The blocks' bytes with their holes filled: summaries and any number left to orjson."""
    view, holes, numbers = memoryview(out[0]), out[1], out[2]
    done = 0
    for row in holes[1 : 1 + holes[0, 0]].tolist():
        at = row[0]
        if row[1] == jsonbytes.HOLE_NUMBER:
            filling = orjson.dumps(float(numbers[row[2]]))
        else:
            filling = summary.text_json(tuple(row[2:]), lang)
        parts += [view[done:at], filling]
        done = at
    parts.append(view[done:n])


def warm_up(data: ForecastData) -> None:
    """Answer once, so that the compiled code is loaded (or compiled, the first time on a
    machine) before any request waits for it."""
    started = time.perf_counter()
    place = Place(timezone="UTC", zone=zone("UTC"), country=None, elevation_m=None)
    request = Request(
        lat=0.0,
        lon=0.0,
        units="si",
        lang=text.DEFAULT_LANGUAGE,
        hours=HOURLY_HOURS,
        blocks=frozenset(BLOCKS),
    )
    respond(data, place, request, SYSTEMS["si"], min(data.last_s, data.first_s + 36 * HOUR_S))
    log.info("forecast: compiled code ready in %.1f s", time.perf_counter() - started)
