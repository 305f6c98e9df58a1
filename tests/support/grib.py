"""GRIB2 model runs for tests, cloned with ecCodes from the messages of a real NOAA GFS file.

Every message written starts as a copy (codes_clone) of a message of
shared/data/gfs/gfs.t12z.pgrbf120.2p5deg.grib2 (see PROVENANCE.md there) and is then changed
key by key: parameter, level, product template (instantaneous, or a statistic over a time
range), run date and time, steps, grid and values. GFS-like runs hold what NOAA's files hold
today (hourly to 120 h then 3-hourly; APCP both as a running total 0-N and as 6-hour buckets;
PRATE, TCDC and the precipitation-type flags both instantaneous and averaged over the bucket;
nothing averaged or accumulated at f000); ECMWF-like runs hold ECMWF open data's shortNames
and units (tcc 0-1, tp in metres from the run start, ptype, 10fg, mucape; steps 0-144 by 3
then by 6 to 240 h, the 06 and 18 UTC runs 0-90 h). A run is written into
datasets/forecast/<source>/<YYYYMMDDHH>/ under upstream's file names, marker last.

Values are given per field in the message's own units, as a number, an array of the grid's
shape (rows north to south, columns in the file's order) or a function f(valid_s, lat, lon) of
the valid time and 2-D latitude/longitude arrays (longitude in [-180, 180)); precipitation as
a rate in mm/h per hour, `precip(hour_start_s, lat, lon)`, from which accumulations (sums of
whole hours), averages and the instantaneous rate are made.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import eccodes
import numpy as np
import pytest

from pipeline.forecast.sources import runs

ROOT = Path(__file__).resolve().parents[2]
REAL_GFS = ROOT.parent / "shared" / "data" / "gfs" / "gfs.t12z.pgrbf120.2p5deg.grib2"
# The messages written here are the real sample's, re-dated: without it, its tests skip.
NEEDS_REAL_GFS = pytest.mark.skipif(
    not REAL_GFS.is_file(), reason=f"the real GFS sample is absent: {REAL_GFS}"
)
HOUR = 3600
BUCKET_H = 6  # GFS buckets: 0-1 ... 0-6, 6-7 ... 6-12, ... h
FLAGS = ("crain", "csnow", "cfrzr", "cicep")
STAT = {"avg": 0, "accum": 1, "max": 2}  # GRIB2 code table 4.10


@dataclass(frozen=True)
class Grid:
    """A global regular latitude/longitude grid, rows north to south as GFS and ECMWF write."""

    step_deg: float
    lon_first: float = 0.0  # GFS 0 -> 359.75; ECMWF -180 -> 179.75

    @property
    def shape(self) -> tuple[int, int]:
        return int(round(180 / self.step_deg)) + 1, int(round(360 / self.step_deg))

    def lat(self) -> np.ndarray:
        return 90.0 - np.arange(self.shape[0]) * self.step_deg

    def lon(self) -> np.ndarray:
        """Longitudes in the file's order, folded into [-180, 180)."""
        lon = self.lon_first + np.arange(self.shape[1]) * self.step_deg
        return (lon + 180.0) % 360.0 - 180.0

    def keys(self) -> dict:
        nj, ni = self.shape
        return {
            "Ni": ni,
            "Nj": nj,
            "latitudeOfFirstGridPointInDegrees": 90.0,
            "latitudeOfLastGridPointInDegrees": -90.0,
            "longitudeOfFirstGridPointInDegrees": self.lon_first % 360.0,
            "longitudeOfLastGridPointInDegrees": (self.lon_first + (ni - 1) * self.step_deg)
            % 360.0,
            "iDirectionIncrementInDegrees": self.step_deg,
            "jDirectionIncrementInDegrees": self.step_deg,
        }

    def index(self, lat: float, lon: float) -> int:
        """The position of a grid node in a message's values."""
        row = int(round((90.0 - lat) / self.step_deg))
        col = int(round(((lon - self.lon_first) % 360.0) / self.step_deg))
        return row * self.shape[1] + col


REAL_GRID = Grid(2.5)  # the real file's grid (144 x 73)
GFS_QUARTER = Grid(0.25)  # GFS 0.25°: 1440 x 721 from 0°E
ECMWF_QUARTER = Grid(0.25, -180.0)  # ECMWF open data 0.25°: 1440 x 721 from 180°W

# field -> (real message cloned (shortName, typeOfLevel), coded keys changed). GFS keeps the
# real message's parameter or changes its number or level: DPT from TMP; TCDC of the entire
# atmosphere as GFS writes it today (level type 10) from the 2011 file's "entire atmosphere
# considered as a single layer" (200); VIS from GUST's surface message.
GFS = {
    "2t": (("2t", "heightAboveGround"), {}),
    "2d": (("2t", "heightAboveGround"), {"parameterNumber": 6}),
    "2r": (("2r", "heightAboveGround"), {}),
    "10u": (("10u", "heightAboveGround"), {}),
    "10v": (("10v", "heightAboveGround"), {}),
    "prmsl": (("prmsl", "meanSea"), {}),
    "tcc": (("tcc", "atmosphereSingleLayer"), {"typeOfFirstFixedSurface": 10}),
    "prate": (("prate", "surface"), {}),
    "tp": (("tp", "surface"), {}),
    "vis": (("gust", "surface"), {"parameterCategory": 19, "parameterNumber": 0}),
    "gust": (("gust", "surface"), {}),
    "cape": (("cape", "surface"), {}),
    "crain": (("crain", "surface"), {}),
    "csnow": (("csnow", "surface"), {}),
    "cfrzr": (("cfrzr", "surface"), {}),
    "cicep": (("cicep", "surface"), {}),
    "orog": (("orog", "surface"), {}),
}
# field -> (real message cloned, ECMWF paramId set with centre ecmf: ecCodes then encodes the
# parameter, level and statistic as ECMWF does)
ECMWF = {
    "2t": (("2t", "heightAboveGround"), 167),
    "2d": (("2t", "heightAboveGround"), 168),
    "10u": (("10u", "heightAboveGround"), 165),
    "10v": (("10v", "heightAboveGround"), 166),
    "msl": (("prmsl", "meanSea"), 151),
    "tcc": (("orog", "surface"), 164),
    "tp": (("tp", "surface"), 228),
    "ptype": (("orog", "surface"), 260015),
    "10fg": (("tp", "surface"), 49),
    "mucape": (("cape", "surface"), 228235),
    "z": (("orog", "surface"), 129),
}
# What a GFS file holds of each field: instantaneous, averaged over the bucket, or both;
# APCP as the running total ("total") and/or the 6-hour bucket ("bucket").
GFS_VARIANTS = {
    "prate": ("instant", "avg"),
    "tcc": ("instant", "avg"),
    "tp": ("total", "bucket"),
    **{f: ("instant", "avg") for f in FLAGS},
}
# 20 °C, dewpoint 10 °C, 60 % humidity, wind u=3 v=4 m/s, 1013.25 hPa, 50 % cloud, 20 km
# visibility, gusts 8 m/s, no rain, no CAPE, 400 m high.
GFS_VALUES = {
    "2t": 293.15,
    "2d": 283.15,
    "2r": 60.0,
    "10u": 3.0,
    "10v": 4.0,
    "prmsl": 101325.0,
    "tcc": 50.0,
    "vis": 20000.0,
    "gust": 8.0,
    "cape": 0.0,
    "crain": 0.0,
    "csnow": 0.0,
    "cfrzr": 0.0,
    "cicep": 0.0,
    "orog": 400.0,
    "precip": 0.0,
}
ECMWF_VALUES = {
    "2t": 293.15,
    "2d": 283.15,
    "10u": 3.0,
    "10v": 4.0,
    "msl": 101325.0,
    "tcc": 0.5,
    "ptype": 0.0,
    "10fg": 8.0,
    "mucape": 0.0,
    "z": 400.0 * 9.80665,
    "precip": 0.0,
}

Value = float | np.ndarray | Callable[[int, np.ndarray, np.ndarray], np.ndarray]


def gfs_steps(horizon_h: int) -> list[int]:
    """GFS forecast hours: hourly to 120 h, then 3-hourly."""
    return list(range(0, min(horizon_h, 120) + 1)) + list(range(123, horizon_h + 1, 3))


def ecmwf_steps(run_s: int, horizon_h: int | None = None) -> list[int]:
    """ECMWF open data steps: 00/12 UTC 0-144 h by 3, then by 6 to 240 h; 06/18 UTC 0-90 h."""
    long_run = run_s // HOUR % 12 == 0
    steps = list(range(0, 145, 3)) + list(range(150, 241, 6)) if long_run else list(range(0, 91, 3))
    return [s for s in steps if horizon_h is None or s <= horizon_h]


def gfs_name(run_s: int, step_h: int, grid: Grid) -> str:
    """gfs.t12z.pgrb2.0p25.f003 (the resolution as NOAA spells it: 0p25, 0p50, 1p00, 2p50)."""
    res = f"{int(grid.step_deg)}p{int(round(grid.step_deg % 1 * 100)):02d}"
    return f"gfs.t{run_s // HOUR % 24:02d}z.pgrb2.{res}.f{step_h:03d}"


def ecmwf_name(run_s: int, step_h: int) -> str:
    """20261128120000-3h-oper-fc.grib2 (stream scda for the 06 and 18 UTC runs)."""
    stamp = datetime.fromtimestamp(run_s, timezone.utc).strftime("%Y%m%d%H%M%S")
    stream = "oper" if run_s // HOUR % 12 == 0 else "scda"
    return f"{stamp}-{step_h}h-{stream}-fc.grib2"


def gfs_run(
    datasets: Path,
    run_s: int,
    steps_h: Iterable[int],
    grid: Grid = REAL_GRID,
    values: dict[str, Value] | None = None,
    variants: dict | None = None,
    fields: Iterable[str] | None = None,
    omit: dict[int, set[str]] | None = None,
    marker: bool = True,
) -> Path:
    """A GFS-like run (one file per step) in DATASETS/forecast/gfs/<run>/; its folder.
    `variants` overrides GFS_VARIANTS, `fields` limits the fields written, `omit` drops
    fields from some steps' files."""
    values = {**GFS_VALUES, **(values or {})}
    variants = {**GFS_VARIANTS, **(variants or {})}
    fields = list(GFS) if fields is None else list(fields)
    folder = runs.run_folder(datasets, "gfs", runs.run_name(run_s))
    folder.mkdir(parents=True, exist_ok=True)
    writer = _Writer(grid, run_s)
    for step in steps_h:
        wanted = [f for f in fields if f not in (omit or {}).get(step, set())]
        messages = []
        for name in wanted:
            messages += writer.gfs_messages(name, step, values, variants)
        (folder / gfs_name(run_s, step, grid)).write_bytes(b"".join(messages))
    if marker:
        runs.write_marker(folder, "gfs", runs.run_name(run_s))
    return folder


def smooth_quarter(mean: float, amplitude: float) -> np.ndarray:
    """A field over the 0.25° GFS grid varying over the globe (so packing has work to do),
    the same at every step (so the writer re-dates one encoding: 0.25 s each)."""
    lat = GFS_QUARTER.lat()[:, None]
    lon = GFS_QUARTER.lon()[None, :]
    return mean + amplitude * np.cos(np.radians(lat)) * np.sin(np.radians(3 * lon))


def gfs_quarter_run(datasets: Path, run_s: int, steps_h: Iterable[int]) -> Path:
    """A GFS-like run on the 0.25° grid with smooth fields (the memory test's and the Dask
    ingest benchmark's); its folder."""
    return gfs_run(
        datasets,
        run_s,
        steps_h,
        grid=GFS_QUARTER,
        values={
            "2t": smooth_quarter(288.0, 20.0),
            "2d": smooth_quarter(280.0, 10.0),
            "prmsl": smooth_quarter(101000.0, 900.0),
            "10u": smooth_quarter(0.0, 8.0),
            "tcc": smooth_quarter(50.0, 40.0),
        },
    )


def ecmwf_run(
    datasets: Path,
    run_s: int,
    steps_h: Iterable[int] | None = None,
    grid: Grid = REAL_GRID,
    values: dict[str, Value] | None = None,
    fields: Iterable[str] | None = None,
    omit: dict[int, set[str]] | None = None,
    marker: bool = True,
) -> Path:
    """An ECMWF-like run (one file per step) in DATASETS/forecast/ecmwf/<run>/; its folder.
    z (the surface geopotential) is written at step 0 only."""
    values = {**ECMWF_VALUES, **(values or {})}
    fields = [f for f in ECMWF if f != "z"] if fields is None else list(fields)
    steps_h = ecmwf_steps(run_s) if steps_h is None else list(steps_h)
    folder = runs.run_folder(datasets, "ecmwf", runs.run_name(run_s))
    folder.mkdir(parents=True, exist_ok=True)
    writer = _Writer(grid, run_s)
    previous = 0
    for step in steps_h:
        wanted = [f for f in fields if f not in (omit or {}).get(step, set())]
        messages = [
            m for name in wanted for m in writer.ecmwf_messages(name, previous, step, values)
        ]
        (folder / ecmwf_name(run_s, step)).write_bytes(b"".join(messages))
        previous = step
    if marker:
        runs.write_marker(folder, "ecmwf", runs.run_name(run_s))
    return folder


def messages(path: Path) -> list[dict]:
    """Every field of a file decoded independently: its keys (shortName, typeOfLevel,
    level, stepType, startStep, endStep, units, dataDate, dataTime) and values. Fields that
    share one GRIB2 message (the real file's 10u and 10v) are each one."""
    eccodes.codes_grib_multi_support_on()
    found = []
    with open(path, "rb") as f:
        while (handle := eccodes.codes_grib_new_from_file(f)) is not None:
            try:
                keys = {
                    k: eccodes.codes_get(handle, k)
                    for k in (
                        "shortName",
                        "typeOfLevel",
                        "level",
                        "stepType",
                        "startStep",
                        "endStep",
                        "units",
                        "dataDate",
                        "dataTime",
                    )
                }
                keys["values"] = eccodes.codes_get_values(handle)
                found.append(keys)
            finally:
                eccodes.codes_release(handle)
    return found


def value_at(
    path: Path,
    short_name: str,
    index: int,
    step_type: str | None = None,
    start_step: int | None = None,
) -> float:
    """One message's value at a point (an index into its values), decoded independently."""
    hits = [
        m
        for m in messages(path)
        if m["shortName"] == short_name
        and (step_type is None or m["stepType"] == step_type)
        and (start_step is None or m["startStep"] == start_step)
    ]
    assert len(hits) >= 1, f"{path.name}: no {short_name} {step_type or ''}"
    return float(hits[-1]["values"][index])


class _Writer:
    """Encodes messages for one run on one grid (cloning the real file's messages)."""

    CACHE = 24  # encoded messages kept to re-date (same values)

    def __init__(self, grid: Grid, run_s: int):
        self.grid, self.run_s = grid, run_s
        self.lat, self.lon = np.meshgrid(grid.lat(), grid.lon(), indexing="ij")
        self._encoded: OrderedDict = OrderedDict()

    def gfs_messages(self, name: str, step: int, values: dict, variants: dict) -> list[bytes]:
        source, keys = GFS[name]
        kinds = variants.get(name, ("instant",))
        out = []
        if name == "tp":
            if step > 0:
                start = (step - 1) // BUCKET_H * BUCKET_H
                ranges = ([0] if "total" in kinds else []) + ([start] if "bucket" in kinds else [])
                for first in ranges:
                    amount = self._precip_sum(values["precip"], first, step)
                    out.append(self._message(source, keys, "accum", first, step, amount))
            return out
        if "instant" in kinds:
            field = self._instant(name, step, values)
            out.append(self._message(source, keys, "instant", step, step, field))
        if "avg" in kinds and step > 0:
            start = (step - 1) // BUCKET_H * BUCKET_H
            field = self._mean(name, start, step, values)
            out.append(self._message(source, keys, "avg", start, step, field))
        return out

    def ecmwf_messages(self, name: str, previous: int, step: int, values: dict) -> list[bytes]:
        source, param = ECMWF[name]
        keys = {"centre": "ecmf", "paramId": param}
        if name == "tp":  # metres, accumulated from the run start (0-0 at step 0)
            amount = self._precip_sum(values["precip"], 0, step) / 1000.0
            return [self._message(source, keys, "accum", 0, step, amount)]
        if name == "10fg":  # the maximum since the previous step; none at step 0
            if step == 0:
                return []
            hours = range(previous + 1, step + 1)
            gust = np.max([self._value(values[name], h) for h in hours], axis=0)
            return [self._message(source, keys, "max", previous, step, gust)]
        if name == "z" and step != 0:
            return []
        return [
            self._message(source, keys, "instant", step, step, self._instant(name, step, values))
        ]

    def _value(self, value: Value, hour: int) -> np.ndarray:
        valid = self.run_s + hour * HOUR
        out = value(valid, self.lat, self.lon) if callable(value) else value
        return np.broadcast_to(np.asarray(out, dtype=np.float64), self.lat.shape)

    def _instant(self, name: str, step: int, values: dict) -> np.ndarray:
        if name == "prate":  # kg m-2 s-1: the rate of the hour starting at the step
            return self._value(values["precip"], step) / HOUR
        return self._value(values[name], step)

    def _mean(self, name: str, start: int, step: int, values: dict) -> np.ndarray:
        """The average over start-step h: of hourly rates (prate), else of hourly values at
        the ends of the hours."""
        if name == "prate":
            return self._precip_sum(values["precip"], start, step) / ((step - start) * HOUR)
        return np.mean([self._value(values[name], h) for h in range(start + 1, step + 1)], axis=0)

    def _precip_sum(self, precip: Value, start: int, step: int) -> np.ndarray:
        """mm (kg m-2) fallen in the whole hours from start to step."""
        total = np.zeros(self.lat.shape)
        for hour in range(start, step):
            total = total + self._value(precip, hour)
        return total

    def _message(
        self,
        source: tuple[str, str],
        keys: dict,
        step_type: str,
        start: int,
        end: int,
        field: np.ndarray,
    ) -> bytes:
        """One encoded message; re-dated from a cached one when the values repeat."""
        flat = np.ascontiguousarray(field, dtype=np.float64).ravel()
        cache_key = (
            source,
            tuple(sorted(keys.items(), key=str)),
            step_type,
            hashlib.sha1(flat.tobytes()).hexdigest(),
        )
        handle = self._encoded.get(cache_key)
        if handle is None:
            handle = self._encode(source, keys, step_type, flat)
            self._encoded[cache_key] = handle
            if len(self._encoded) > self.CACHE:
                eccodes.codes_release(self._encoded.popitem(last=False)[1])
        clone = eccodes.codes_clone(handle)
        try:
            when = datetime.fromtimestamp(self.run_s, timezone.utc)
            eccodes.codes_set(clone, "dataDate", int(when.strftime("%Y%m%d")))
            eccodes.codes_set(clone, "dataTime", int(when.strftime("%H%M")))
            eccodes.codes_set(clone, "stepUnits", "h")
            step_range = str(end) if step_type == "instant" else f"{start}-{end}"
            eccodes.codes_set(clone, "stepRange", step_range)
            return eccodes.codes_get_message(clone)
        finally:
            eccodes.codes_release(clone)

    def _encode(self, source: tuple[str, str], keys: dict, step_type: str, flat: np.ndarray) -> int:
        handle = eccodes.codes_clone(_template(source))
        if step_type == "instant":
            eccodes.codes_set(handle, "productDefinitionTemplateNumber", 0)
        else:
            eccodes.codes_set(handle, "productDefinitionTemplateNumber", 8)
            eccodes.codes_set(handle, "typeOfStatisticalProcessing", STAT[step_type])
        for key, value in keys.items():  # centre before paramId: ECMWF's encoding of it
            eccodes.codes_set(handle, key, value)
        for key, value in self.grid.keys().items():
            eccodes.codes_set(handle, key, value)
        # 16 bits: the template's own bit count would be kept, 0 after a constant field
        eccodes.codes_set(handle, "bitsPerValue", 16)
        eccodes.codes_set_values(handle, flat)
        return handle


_TEMPLATES: dict[tuple[str, str], int] = {}


def _template(source: tuple[str, str]) -> int:
    """The real file's first field of (shortName, typeOfLevel), loaded once (its 10u and 10v
    share one message: with multi-field support each is a message of its own)."""
    if not _TEMPLATES:
        eccodes.codes_grib_multi_support_on()
        with open(REAL_GFS, "rb") as f:
            while (handle := eccodes.codes_grib_new_from_file(f)) is not None:
                key = (
                    eccodes.codes_get(handle, "shortName"),
                    eccodes.codes_get(handle, "typeOfLevel"),
                )
                if key in _TEMPLATES or key not in {
                    s for s, _ in list(GFS.values()) + list(ECMWF.values())
                }:
                    eccodes.codes_release(handle)
                    continue
                _TEMPLATES[key] = handle
    return _TEMPLATES[source]
