"""GRIB2 files through ecCodes: each field's header (without decoding its values), and the
values of chosen fields, every failure an InputError naming the file and the field's number.

Multi-field support is on: NCEP puts some fields in one GRIB2 message (sections 4-7 repeated;
the 2011 GFS file's 10u and 10v), and ecCodes otherwise shows only the first. A field's
number counts fields, 1-based; its label names the message as wgrib2 and NOAA's .idx number
them ('message 226', or 'message 196.2' for a message's second field).
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import eccodes
import numpy as np

from pipeline.common.io import InputError
from pipeline.forecast.sources.model_fields import FIELDS

# (shortName, typeOfLevel) -> input field
GRIB_TO_FIELD = {key: name for name, spec in FIELDS.items() for key in spec.grib}
# Level types (code table 4.5) of the table's messages: ground or water surface,
# entire atmosphere, most unstable parcel, mean sea level, height above ground, entire atmosphere
# as a single layer. Other fields (isobaric levels: most of a full GFS file) are passed over on
# this number alone, without evaluating their names (about 4 ms a field).
LEVEL_TYPES = {1, 10, 17, 101, 103, 200}
MISSING = 9.999e20  # what a bitmap's missing points decode to (see decode)
_GRID_KEYS = (
    "Ni",
    "Nj",
    "latitudeOfFirstGridPointInDegrees",
    "latitudeOfLastGridPointInDegrees",
    "longitudeOfFirstGridPointInDegrees",
    "longitudeOfLastGridPointInDegrees",
    "iScansNegatively",
    "jScansPositively",
    "jPointsAreConsecutive",
)
CENTRES = {"kwbc": "gfs", "ecmf": "ecmwf-ifs"}


@dataclass(frozen=True)
class Grid:
    """A regular latitude/longitude grid in a message's scanning order."""

    ni: int
    nj: int
    lat_first: float
    lat_last: float
    lon_first: float
    lon_last: float

    def lat(self) -> np.ndarray:
        """Latitudes of the rows, in the file's order."""
        return np.linspace(self.lat_first, self.lat_last, self.nj)

    def lon(self) -> np.ndarray:
        """Longitudes of the columns, in the file's order (eastward from the first)."""
        span = (self.lon_last - self.lon_first) % 360.0
        step = span / (self.ni - 1) if self.ni > 1 else 0.0
        return self.lon_first + step * np.arange(self.ni)


@dataclass(frozen=True)
class Message:
    """The header of one field of a table's message."""

    path: Path
    number: int  # 1-based field number in the file
    label: str  # 'message 196.2'
    field: str  # input field (model_fields.FIELDS)
    short_name: str
    level_type: str
    step_type: str  # instant, avg, accum, max, ...
    run_s: int
    start_s: int  # of the statistic's time range (= end_s when instant)
    end_s: int  # the valid time
    units: str
    model: str
    grid: Grid

    @property
    def key(self) -> tuple[str, str]:
        return self.short_name, self.level_type

    def where(self) -> str:
        """'tp 114-120 h accum (message 199)', for messages."""
        start, end = (self.start_s - self.run_s) // 3600, (self.end_s - self.run_s) // 3600
        steps = f"{end} h" if self.step_type == "instant" else f"{start}-{end} h {self.step_type}"
        return f"{self.short_name} {steps} ({self.label})"


def inventory(path: Path) -> list[Message]:
    """The headers of the file's fields that the table names, in file order."""
    found = []
    for number, label, handle in _fields(path, headers_only=True):
        try:
            edition = eccodes.codes_get(handle, "edition", ktype=int)
            if edition != 2:
                raise InputError(path, f"{label} is GRIB edition {edition}; only GRIB2 is read")
            level_code = eccodes.codes_get(handle, "typeOfFirstFixedSurface", ktype=int)
            if level_code not in LEVEL_TYPES:
                continue
            key = (eccodes.codes_get(handle, "shortName"), eccodes.codes_get(handle, "typeOfLevel"))
            if key in GRIB_TO_FIELD:
                found.append(_message(path, number, label, handle, key))
        except eccodes.GribInternalError as exc:
            raise InputError(path, f"{label} does not decode ({exc})") from None
        finally:
            eccodes.codes_release(handle)
    return found


def decode(path: Path, wanted: set[int]) -> Iterator[tuple[int, np.ndarray]]:
    """(number, values as float32 (nj, ni) in scanning order, NaN where missing) of the
    wanted fields of a file, in file order: each decoded once."""
    for number, label, handle in _fields(path, headers_only=False):
        try:
            if number not in wanted:
                continue
            try:
                if eccodes.codes_get(handle, "bitmapPresent"):
                    eccodes.codes_set(handle, "missingValue", MISSING)
                values = eccodes.codes_get_values(handle)
                nj, ni = eccodes.codes_get(handle, "Nj"), eccodes.codes_get(handle, "Ni")
            except eccodes.GribInternalError as exc:
                raise InputError(path, f"{label} does not decode ({exc})") from None
            if values.size != nj * ni:
                raise InputError(
                    path, f"{label} has {values.size} values, its grid {ni} x {nj} points"
                )
            out = values.astype(np.float32).reshape(nj, ni)
            out[values.reshape(nj, ni) >= MISSING] = np.nan
            yield number, out
        finally:
            eccodes.codes_release(handle)


def _fields(path: Path, headers_only: bool) -> Iterator[tuple[int, str, int]]:
    """(number, label, handle) of every field of a file; the caller releases each handle."""
    eccodes.codes_grib_multi_support_on()
    number, message, part, offset = 0, 0, 1, None
    try:
        with open(path, "rb") as f:
            try:
                while True:
                    try:
                        handle = eccodes.codes_grib_new_from_file(f, headers_only=headers_only)
                        if handle is not None:
                            start = eccodes.codes_get(handle, "offset", ktype=int)
                    except eccodes.GribInternalError as exc:
                        raise InputError(
                            path, f"message {message + 1} does not decode ({exc})"
                        ) from None
                    if handle is None:
                        break
                    number += 1
                    message, part = (message, part + 1) if start == offset else (message + 1, 1)
                    offset = start
                    yield number, f"message {message}" + (f".{part}" if part > 1 else ""), handle
            finally:
                eccodes.codes_grib_multi_support_reset_file(f)
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    if number == 0:
        raise InputError(path, "no GRIB message in the file")


def _message(path: Path, number: int, label: str, handle: int, key: tuple[str, str]) -> Message:
    get = eccodes.codes_get
    grid_type = get(handle, "gridType")
    if grid_type != "regular_ll":
        raise InputError(
            path,
            f"{label} ({key[0]}) is on a {grid_type} grid; only regular "
            "latitude/longitude grids are read",
        )
    grid = {k: get(handle, k) for k in _GRID_KEYS}
    if grid["iScansNegatively"] or grid["jPointsAreConsecutive"]:
        raise InputError(
            path,
            f"{label} ({key[0]}) scans its grid westward or by columns; "
            "only rows scanned eastward are read",
        )
    eccodes.codes_set(handle, "stepUnits", "m")  # minutes: exact for every step unit used
    run_s = _seconds(get(handle, "dataDate"), get(handle, "dataTime"))
    return Message(
        path=path,
        number=number,
        label=label,
        field=GRIB_TO_FIELD[key],
        short_name=key[0],
        level_type=key[1],
        step_type=get(handle, "stepType"),
        run_s=run_s,
        start_s=run_s + 60 * get(handle, "startStep", ktype=int),
        end_s=run_s + 60 * get(handle, "endStep", ktype=int),
        units=get(handle, "units"),
        model=CENTRES.get(get(handle, "centre"), "model"),
        grid=Grid(
            grid["Ni"],
            grid["Nj"],
            grid["latitudeOfFirstGridPointInDegrees"],
            grid["latitudeOfLastGridPointInDegrees"],
            grid["longitudeOfFirstGridPointInDegrees"],
            grid["longitudeOfLastGridPointInDegrees"],
        ),
    )


def _seconds(date: int, hhmm: int) -> int:
    """dataDate 20261128 and dataTime 1200 -> Unix seconds."""
    return calendar.timegm(
        (date // 10000, date // 100 % 100, date % 100, hhmm // 100, hhmm % 100, 0)
    )
