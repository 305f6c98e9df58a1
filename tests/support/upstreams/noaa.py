"""A NOAA stand-in: GFS runs in NOAA's layout, with .idx sidecars, on a StandIn server.

    with StandIn() as bucket:
        noaa = NoaaLayout(bucket)
        noaa.add_run(cycle, hours)                      # a complete run
        noaa.add_run(newer, hours, missing=hours[-2:])  # still being written: last hours 404
        ... fetch with --base-url noaa.url ...

The fields are tests/support/grib.py's GFS-like messages (cloned from the real file in
../shared/data/gfs, instantaneous and averaged, APCP as running total and 6-hour bucket);
each whole file also holds the real file's ~180 pressure-level messages (bytes as they are),
as real files hold some 740 others, in an order like NOAA's: PRMSL first, surface and 2 m
fields in the middle, one selected field last (its range runs to the file's end). The .idx
is in wgrib2's format.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field

import numpy as np

from tests.support import grib
from tests.support.upstreams.base import Blob, StandIn

# grib.py's field -> (wgrib2 variable, level)
WGRIB2 = {
    "prmsl": ("PRMSL", "mean sea level"),
    "orog": ("HGT", "surface"),
    "2t": ("TMP", "2 m above ground"),
    "2d": ("DPT", "2 m above ground"),
    "2r": ("RH", "2 m above ground"),
    "10u": ("UGRD", "10 m above ground"),
    "10v": ("VGRD", "10 m above ground"),
    "gust": ("GUST", "surface"),
    "prate": ("PRATE", "surface"),
    "crain": ("CRAIN", "surface"),
    "csnow": ("CSNOW", "surface"),
    "cfrzr": ("CFRZR", "surface"),
    "cicep": ("CICEP", "surface"),
    "tp": ("APCP", "surface"),
    "cape": ("CAPE", "surface"),
    "tcc": ("TCDC", "entire atmosphere"),
    "vis": ("VIS", "surface"),
}
ISOBARIC_NAMES = {
    "gh": "HGT",
    "t": "TMP",
    "u": "UGRD",
    "v": "VGRD",
    "r": "RH",
    "absv": "ABSV",
    "w": "VVEL",
    "clwmr": "CLWMR",
    "o3mr": "O3MR",
}
ISOBARIC_NAMES_CYCLE = tuple(ISOBARIC_NAMES.values())
STAT = {"accum": "acc", "avg": "ave"}


def _varying(mean: float, spread: float):
    """A field that changes over the globe, so messages have realistic sizes (a constant one
    packs into ~200 bytes, and range requests would look better than they are); the same at
    every hour, so grib.py encodes it once and re-dates it."""

    def value(valid_s: int, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        return mean + spread * np.cos(np.radians(lat)) * np.sin(np.radians(lon) * 3)

    return value


VALUES = {
    **grib.GFS_VALUES,
    "2t": _varying(288.0, 20.0),
    "2d": _varying(280.0, 15.0),
    "2r": _varying(60.0, 30.0),
    "10u": _varying(0.0, 10.0),
    "10v": _varying(0.0, 10.0),
    "prmsl": _varying(101325.0, 2000.0),
    "tcc": _varying(50.0, 50.0),
    "vis": _varying(15000.0, 9000.0),
    "gust": _varying(10.0, 8.0),
    "cape": _varying(500.0, 500.0),
    "orog": _varying(800.0, 800.0),
    "precip": _varying(0.5, 0.5),
}
# The same without rain: totals then repeat too, so every message is re-dated from one
# encoding (a 0.25° encoding takes 0.2-0.5 s; the full-size bench needs ~3,900 messages).
VALUES_STILL = {**VALUES, "precip": 0.0}


@dataclass(frozen=True)
class Message:
    """One GRIB2 message and its wgrib2 inventory fields."""

    variable: str
    level: str
    forecast: str
    data: bytes


def cycle_path(cycle: dt.datetime) -> str:
    return f"/gfs.{cycle:%Y%m%d}/{cycle:%H}/atmos"


def file_path(cycle: dt.datetime, hour: int) -> str:
    return f"{cycle_path(cycle)}/gfs.t{cycle:%H}z.pgrb2.0p25.f{hour:03d}"


def forecast_label(step_type: str, start: int, end: int) -> str:
    """wgrib2's forecast field: 'anl', '7 hour fcst', '6-7 hour acc fcst'."""
    if step_type == "instant":
        return "anl" if end == 0 else f"{end} hour fcst"
    return f"{start}-{end} hour {STAT[step_type]} fcst"


@functools.cache
def _writer(cycle: dt.datetime) -> grib._Writer:
    return grib._Writer(grib.REAL_GRID, int(cycle.timestamp()))


def labelled(writer: grib._Writer, name: str, hour: int, values: dict) -> list[Message]:
    """grib.py's messages of one field at one hour (with their variants), labelled."""
    import eccodes

    variable, level = WGRIB2[name]
    out = []
    for data in writer.gfs_messages(name, hour, values, grib.GFS_VARIANTS):
        gid = eccodes.codes_new_from_message(data)
        try:
            label = forecast_label(
                eccodes.codes_get(gid, "stepType"),
                eccodes.codes_get(gid, "startStep"),
                eccodes.codes_get(gid, "endStep"),
            )
        finally:
            eccodes.codes_release(gid)
        out.append(Message(variable, level, label, data))
    return out


def fields(cycle: dt.datetime, hour: int, name: str) -> list[Message]:
    """The stand-in's messages of one field at one hour."""
    return labelled(_writer(cycle), name, hour, VALUES)


@functools.cache
def _isobaric() -> list[tuple[str, str, bytes]]:
    """The real file's pressure-level messages: (wgrib2 variable, level, bytes)."""
    import eccodes

    found = []
    with open(grib.REAL_GFS, "rb") as handle:
        while (gid := eccodes.codes_grib_new_from_file(handle)) is not None:
            try:
                if eccodes.codes_get(gid, "typeOfLevel") == "isobaricInhPa":
                    short = eccodes.codes_get(gid, "shortName")
                    found.append(
                        (
                            ISOBARIC_NAMES.get(short, short.upper()),
                            f"{eccodes.codes_get(gid, 'level')} mb",
                            eccodes.codes_get_message(gid),
                        )
                    )
            finally:
                eccodes.codes_release(gid)
    return found


def others(hour: int) -> list[Message]:
    """Messages the fetcher does not want (the same bytes in every file)."""
    return [
        Message(v, level, forecast_label("instant", hour, hour), data)
        for v, level, data in _isobaric()
    ]


@functools.lru_cache(maxsize=256)
def whole_file(cycle: dt.datetime, hour: int) -> list[Message]:
    """The messages of one forecast hour's file, in file order (made once per session)."""
    rest = others(hour)
    pick = lambda *names: [m for n in names for m in fields(cycle, hour, n)]  # noqa: E731
    return [
        *pick("prmsl"),
        *rest[:120],
        *pick("orog"),
        *rest[120:125],
        *pick("2t", "2d", "2r"),
        *rest[125:127],
        *pick("10u", "10v", "gust"),
        *rest[127:170],
        *pick("prate", "crain", "csnow", "cfrzr", "cicep", "tp", "cape", "tcc"),
        *rest[170:],
        *pick("vis"),
    ]


def inventory(messages: list[Message], cycle: dt.datetime) -> str:
    """The wgrib2 .idx of `messages` laid back to back."""
    lines, offset = [], 0
    for number, message in enumerate(messages, 1):
        lines.append(
            f"{number}:{offset}:d={cycle:%Y%m%d%H}:{message.variable}:{message.level}:"
            f"{message.forecast}:"
        )
        offset += len(message.data)
    return "\n".join(lines) + "\n"


@dataclass
class NoaaLayout:
    """GFS runs served by `server` under `prefix` (the bucket's root, or NOMADS' path)."""

    server: StandIn
    prefix: str = ""
    sizes: dict[str, int] = field(default_factory=dict)  # path -> whole file's bytes

    @property
    def url(self) -> str:
        return self.server.url + self.prefix

    def add_run(self, cycle: dt.datetime, hours: list[int], missing: tuple[int, ...] = ()) -> None:
        """Publish a run: each hour's file and .idx, except the `missing` hours (404)."""
        for hour in hours:
            if hour in missing:
                continue
            messages = whole_file(cycle, hour)
            path = self.prefix + file_path(cycle, hour)
            blob = Blob.joined([m.data for m in messages], f"{cycle:%Y%m%d%H}f{hour:03d}")
            self.server.put(path, blob)
            self.server.put(path + ".idx", inventory(messages, cycle).encode())
            self.sizes[path] = blob.size

    def whole_bytes(self, cycle: dt.datetime, hours: list[int]) -> int:
        return sum(self.sizes[self.prefix + file_path(cycle, hour)] for hour in hours)
