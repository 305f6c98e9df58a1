"""A full-size GFS 0.25° run (1440 x 721, hours to 240) served without holding it: for the bench.

Each forecast hour's whole file is laid out like NOAA's (about 740 messages, ~500 MB): the
fetcher's fields (grib.py's GFS messages on the 0.25° grid, instantaneous and averaged, APCP
total and bucket) at NOAA-like positions among padding that stands for the other ~720
messages (zero bytes of a real message's size: never fetched by range requests, so never
decoded). Offsets, the .idx and Content-Length are exact; message bytes are made on demand
(re-dated from one encoding per field, ~1 ms) and only the sizes are kept.

Not used by the tests (a run is ~80 GB of whole files, ~4 GB of subsets): see bench/gfs_fetch.py.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import itertools
import threading

from pipeline.fetch.inventory import forecast
from tests.support import grib
from tests.support.upstreams import noaa
from tests.support.upstreams.base import Blob, StandIn

OTHERS = 724  # messages a real 0.25° file holds besides the wanted
OTHER_BYTES = (420_000, 980_000)  # their sizes: real files hold 0.3-1.5 MB messages
# Where the wanted fields sit among the others (NOAA's order: PRMSL first, 2 m and 10 m
# fields past the pressure levels, the surface block, VIS near the end).
LAYOUT = (
    ("prmsl",),
    400,
    ("orog",),
    170,
    ("2t", "2d", "2r"),
    2,
    ("10u", "10v", "gust"),
    40,
    ("prate", "crain", "csnow", "cfrzr", "cicep", "tp", "cape", "tcc"),
    100,
    ("vis",),
    12,
)


def _other_size(n: int) -> int:
    """A deterministic, varied size for the n-th other message."""
    low, high = OTHER_BYTES
    return low + (n * 7919 % 1000) * (high - low) // 1000


@functools.cache
def _writer(cycle: dt.datetime) -> grib._Writer:
    return grib._Writer(grib.GFS_QUARTER, int(cycle.timestamp()))


_LOCK = threading.Lock()  # ecCodes handles of one writer: one thread at a time


@functools.cache
def _base(cycle: dt.datetime, name: str, analysis: bool) -> tuple[noaa.Message, ...]:
    """A field's messages at f000, or at f007 (where a 6-hour bucket, 6-7, and the running
    total, 0-7, differ), encoded once by grib.py."""
    with _LOCK:
        return tuple(noaa.labelled(_writer(cycle), name, 0 if analysis else 7, noaa.VALUES_STILL))


def _label(base: noaa.Message, hour: int) -> tuple[str, int]:
    """(wgrib2 forecast field, first hour) of a base message moved to `hour`."""
    time = forecast(base.forecast)
    if time.kind in ("anl", "fcst"):
        return noaa.forecast_label("instant", hour, hour), hour
    start = 0 if time.start_h == 0 else (hour - 1) // grib.BUCKET_H * grib.BUCKET_H
    return f"{start}-{hour} hour {time.kind} fcst", start


@functools.lru_cache(maxsize=512)  # 4 files in flight x ~24 messages, with room
def _message(cycle: dt.datetime, hour: int, name: str, index: int) -> bytes:
    """A field's message at `hour`: its base re-dated with ecCodes (~1 ms, same length)."""
    import eccodes

    base = _base(cycle, name, hour == 0)[index]
    if hour in (0, 7):
        return base.data
    label, start = _label(base, hour)
    gid = eccodes.codes_new_from_message(base.data)
    try:
        step = str(hour) if "-" not in label else f"{start}-{hour}"
        eccodes.codes_set(gid, "stepRange", step)
        data = eccodes.codes_get_message(gid)
    finally:
        eccodes.codes_release(gid)
    if len(data) != len(base.data):
        raise AssertionError(f"{name} f{hour:03d}: re-dating changed its length")
    return data


class FullSizeFile:
    """One forecast hour's whole file: its parts, sizes and .idx."""

    def __init__(self, cycle: dt.datetime, hour: int):
        self.cycle, self.hour = cycle, hour
        self.parts: list[tuple[str, int] | int] = []  # (field, variant index) or padding
        self.labels: list[tuple[str, str, str]] = []
        self.sizes: list[int] = []
        other = 0
        for item in LAYOUT:
            if isinstance(item, int):
                for _ in range(item):
                    size = _other_size(other)
                    name = noaa.ISOBARIC_NAMES_CYCLE[other % len(noaa.ISOBARIC_NAMES_CYCLE)]
                    self.parts.append(size)
                    self.labels.append(
                        (
                            name,
                            f"{1000 - other % 40 * 25} mb",
                            noaa.forecast_label("instant", hour, hour),
                        )
                    )
                    self.sizes.append(size)
                    other += 1
                continue
            for name in item:
                for index, base in enumerate(_base(cycle, name, hour == 0)):
                    self.parts.append((name, index))
                    self.labels.append((base.variable, base.level, _label(base, hour)[0]))
                    self.sizes.append(len(base.data))
        self.starts = list(itertools.accumulate(self.sizes, initial=0))[:-1]
        self.size = sum(self.sizes)

    def inventory(self) -> str:
        return "".join(
            f"{n}:{start}:d={self.cycle:%Y%m%d%H}:{var}:{level}:{fc}:\n"
            for n, (start, (var, level, fc)) in enumerate(zip(self.starts, self.labels), 1)
        )

    def read(self, a: int, b: int) -> bytes:
        """Bytes [a, b): real messages made on demand, padding as zeros."""
        out = bytearray()
        i = max(0, bisect.bisect_right(self.starts, a) - 1)
        while i < len(self.parts) and self.starts[i] < b:
            start, size, part = self.starts[i], self.sizes[i], self.parts[i]
            lo, hi = max(a, start), min(b, start + size)
            if lo < hi:
                if isinstance(part, int):
                    out += bytes(hi - lo)
                else:
                    out += _message(self.cycle, self.hour, *part)[lo - start : hi - start]
            i += 1
        return bytes(out)


def publish(server: StandIn, cycle: dt.datetime, hours: list[int], prefix: str = "") -> int:
    """Serve the run's files and .idx on `server`; returns the whole files' bytes."""
    total = 0
    for hour in hours:
        whole = FullSizeFile(cycle, hour)
        path = prefix + noaa.file_path(cycle, hour)
        server.put(
            path, Blob(whole.size, whole.read, f'"full-{cycle:%Y%m%d%H}-{hour}"', cycle.timestamp())
        )
        server.put(path + ".idx", whole.inventory().encode())
        total += whole.size
    return total
