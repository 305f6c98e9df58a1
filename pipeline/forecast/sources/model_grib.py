"""Forecast model runs in GRIB2 as NOAA (GFS 0.25°) and ECMWF open data (IFS 0.25°) publish
them, read with ecCodes into the Run/Piece/Scan objects model_netcdf gives, so model_hourly and
the grid writer read both formats alike.

Which message of each field is read (the GFS fetcher selects the same lines of NOAA's .idx;
wgrib2's names, N the file's forecast hour, B = 6 * floor((N - 1) / 6) its bucket's start):

| field    | GFS message read                            | if the run has none of those   |
|----------|---------------------------------------------|--------------------------------|
| t2m      | TMP:2 m above ground:N hour fcst (anl f000) | (required)                     |
| d2m / r2 | DPT:2 m above ground (RH only without DPT)  | (one of them required)         |
| u10, v10 | UGRD, VGRD:10 m above ground                | (required)                     |
| msl      | PRMSL:mean sea level (MSLET without it)     | (required)                     |
| tcc      | TCDC:entire atmosphere:N hour fcst          | its 'B-N hour ave fcst'        |
| tp       | APCP:surface:0-N hour acc fcst (total)      | 'B-N hour acc fcst' (buckets)  |
| prate    | PRATE:surface:B-N hour ave fcst             | its 'N hour fcst' (instant)    |
| flags    | CRAIN, CSNOW, CFRZR, CICEP:surface:N h fcst | their 'B-N hour ave fcst'      |
| vis, gust, cape | VIS, GUST, CAPE:surface              | (optional)                     |
| orog     | HGT:surface (any one step)                  | (optional)                     |

- tp: the running total is exact and needs no other step; a run holding only buckets is
  read too, each bucket added to the total at its start (so a bucket needs its start step).
  Either way model_hourly gets totals from the run start. The fetcher needs APCP only: with
  it PRATE is not used (model_hourly prefers tp), so it may skip PRATE.
- Averages are absent at f000, and are means over a bucket, not values at the hour: state
  fields (tcc, flags) are read instantaneous, their averages only when a run has no
  instantaneous message of them (the 2011 files), each then taken as the value at its end.
  prate the other way round: an average conserves the amounts, an instantaneous rate does not.
- One kind (stepType) per field and run, so a series never mixes instantaneous values with
  averages; where a file holds a message twice (f006's two 'APCP 0-6 hour acc'), the later one.

ECMWF open data: 2t, 2d, 10u, 10v, msl, tcc (0-1), tp (m, from the run start: a total),
ptype, 10fg (maximum since the previous step, taken at its end), mucape; z at the surface as
the orography when present.

A run is one HeldRun (runs.py): only the files its marker lists. Every step of a run must have
each required field (averages and accumulations excepted at step 0) and the first step must
be 0; otherwise the build fails in one line naming the file and the fields. Each chosen message
is decoded once into a scratch float32 file per (run, field), (time, lat, lon), written with
pwrite (the page cache holds it, not this process); a Piece reads rows of it through a memory
map opened per read, so the pages it touched leave the process once copied. An older run whose
successor reaches at least as far is read only up to 6 h past the successor's start (the rest
is overwritten by it).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from pipeline.common import grid
from pipeline.common.io import InputError
from pipeline.forecast import units
from pipeline.forecast.sources import grib_messages
from pipeline.forecast.sources.grib_messages import Message
from pipeline.forecast.sources.model_fields import FIELDS
from pipeline.forecast.sources.model_hourly import FLAGS, PRATE_BUCKET_S, REQUIRED_INPUTS
from pipeline.forecast.sources.model_netcdf import Piece, Run, Scan
from pipeline.forecast.sources.runs import HeldRun

log = logging.getLogger("pipeline.forecast")
STATISTICS = {"avg", "accum", "max"}  # absent at step 0
# Fields model_hourly does not read beside others (humidity only without the dewpoint, the
# rate only without the accumulation, ptype only without the flags): not decoded then.
UNUSED_BESIDE = {"r2": ("d2m",), "prate": ("tp",), "ptype": FLAGS}
OVERLAP_S = 6 * 3600  # an older run is kept this far past the next one


@dataclass
class Series:
    """The messages chosen for one field of one run: one per valid time, ascending."""

    field: str
    key: tuple[str, str]
    step_type: str
    messages: list[Message] = field(default_factory=list)

    @property
    def times_s(self) -> np.ndarray:
        return np.array([m.end_s for m in self.messages], dtype=np.int64)


@dataclass
class RunPlan:
    """What is read of one held run: its series by field, and the steps its files hold."""

    held: HeldRun
    run_s: int
    series: dict[str, Series]
    step_files: dict[int, Path]  # valid time -> the first file holding it
    models: set[str]


def scan(held: list[HeldRun], scratch: Path) -> Scan:
    """Read the held runs (oldest first) into a Scan, decoding into files under `scratch`."""
    plans = [plan(h, inventory_run(h)) for h in held]
    _trim_older(plans)
    for p in plans:
        check(p)
    first = next(m for p in plans for s in p.series.values() for m in s.messages)
    for p in plans:
        other = next(
            (m for s in p.series.values() for m in s.messages if m.grid != first.grid), None
        )
        if other is not None:
            raise InputError(
                other.path,
                f"{other.where()} is on another grid than "
                f"{first.where()} of {first.path}; all runs must "
                "share one grid",
            )
    lat, lon = _axes(first)
    runs = []
    for p in plans:
        pieces = decode(p, scratch)
        runs.append(Run(p.run_s, {f: [piece] for f, piece in pieces.items()}, p.models))
        log.info(
            "run %s: read %s",
            _iso(p.run_s),
            ", ".join(
                f"{s.key[0]}" + (f" ({s.step_type})" if s.step_type != "instant" else "")
                for s in p.series.values()
            ),
        )
    files = [path for h in held for path in h.paths()]
    return Scan(
        lat=lat,
        lon=lon,
        runs=runs,
        orography=_orography(plans, scratch),
        files=files,
        centre="+".join(sorted(set().union(*(p.models for p in plans)))),
    )


def inventory_run(held: HeldRun) -> list[Message]:
    """The table's messages in the run's files; InputError for a file of another run, or a
    field on another grid than the run's first."""
    found = []
    for path in held.paths():
        for message in grib_messages.inventory(path):
            if message.run_s != held.run_s:
                raise InputError(
                    path,
                    f"{message.where()} is of run {_iso(message.run_s)}, "
                    f"not of its folder's run {_iso(held.run_s)}",
                )
            if found and message.grid != found[0].grid:
                raise InputError(
                    path,
                    f"{message.where()} is on another grid than "
                    f"{found[0].where()} of {found[0].path.name}; all "
                    "fields must share one grid",
                )
            found.append(message)
    return found


def plan(held: HeldRun, messages: list[Message]) -> RunPlan:
    """Choose each field's messages in the run (see the module's table)."""
    step_files: dict[int, Path] = {}
    for m in messages:
        step_files.setdefault(m.end_s, m.path)
    series = {}
    for name, spec in FIELDS.items():
        if name == "orog":
            continue
        present = {(m.key, m.step_type) for m in messages if m.field == name}
        choice = next(
            (
                (key, kind)
                for key in spec.grib
                for kind in spec.step_types
                if (key, kind) in present
            ),
            None,
        )
        if choice is not None:
            chosen = [m for m in messages if (m.key, m.step_type) == choice]
            series[name] = Series(name, choice[0], choice[1], _one_per_time(name, chosen))
    for name, others in UNUSED_BESIDE.items():
        if name in series and any(o in series for o in others):
            del series[name]
    models = {m.model for m in messages} or {"model"}
    orography = [m for m in messages if m.field == "orog"]
    if orography:  # kept as a one-message series, outside the run's fields
        key = next(k for k in FIELDS["orog"].grib if any(m.key == k for m in orography))
        series["orog"] = Series(
            "orog", key, "instant", [next(m for m in orography if m.key == key)]
        )
    return RunPlan(held, held.run_s, series, dict(sorted(step_files.items())), models)


def _one_per_time(name: str, messages: list[Message]) -> list[Message]:
    """One message per valid time, ascending: the later in file order, except that for tp a
    total from the run start wins over a bucket."""
    best: dict[int, Message] = {}
    for m in messages:
        kept = best.get(m.end_s)
        if kept is None or name != "tp" or (m.start_s == m.run_s) >= (kept.start_s == m.run_s):
            best[m.end_s] = m
    return [best[t] for t in sorted(best)]


def _trim_older(plans: list[RunPlan]) -> None:
    """Read an older run only up to OVERLAP_S past the next run's start when the next run
    reaches at least as far: the newer run's values replace the rest."""
    for older, newer in zip(plans, plans[1:]):
        if not newer.step_files or not older.step_files:
            continue
        if max(newer.step_files) < max(older.step_files):
            continue
        stop = newer.run_s + OVERLAP_S
        older.step_files = {t: p for t, p in older.step_files.items() if t <= stop}
        for s in older.series.values():
            if s.field != "orog":
                s.messages = [m for m in s.messages if m.end_s <= stop]
        log.info(
            "run %s: read up to %s (run %s replaces the rest)",
            _iso(older.run_s),
            _iso(stop),
            _iso(newer.run_s),
        )


def check(p: RunPlan) -> None:
    """InputError naming a file when a step of the run lacks a required field, when the run
    does not start at step 0, or when a bucket or average does not fit the run's steps."""
    missing: dict[Path, list[str]] = {}
    first_file = next(iter(p.step_files.values()), p.held.folder)
    for need in REQUIRED_INPUTS:
        names = (need,) if isinstance(need, str) else need
        present = [n for n in names if n in p.series]
        if not present:
            missing.setdefault(first_file, []).append(_describe(names))
            continue
        s = p.series[present[0]]  # model_hourly reads the first one present
        have = set(s.times_s.tolist())
        for t, path in p.step_files.items():
            if t not in have and not (s.step_type in STATISTICS and t == p.run_s):
                missing.setdefault(path, []).append(_describe((s.field,)))
    if missing:
        path, fields = next(iter(sorted(missing.items(), key=lambda kv: _step_of(p, kv[0]))))
        others = len(missing) - 1
        more = f" (and in {others} other file{'s' * (others > 1)})" if others else ""
        raise InputError(path, f"no {', '.join(fields)} in run {_iso(p.run_s)}{more}")
    if p.step_files and min(p.step_files) != p.run_s:
        start = min(p.step_files)
        raise InputError(
            p.step_files[start],
            f"run {_iso(p.run_s)} starts at step "
            f"{(start - p.run_s) // 3600} h, not 0: its "
            "earlier files are missing",
        )
    _check_statistics(p)


def _check_statistics(p: RunPlan) -> None:
    """A tp bucket needs the total at its start; a prate average must be over model_hourly's
    6-hour buckets from the run start."""
    if "tp" in p.series:
        times = set(p.series["tp"].times_s.tolist()) | {p.run_s}
        for m in p.series["tp"].messages:
            if m.start_s not in times:
                raise InputError(
                    m.path,
                    f"{m.where()}: the run has no total at its start "
                    f"({(m.start_s - m.run_s) // 3600} h) to add it to",
                )
    if "prate" in p.series and p.series["prate"].step_type == "avg":
        for m in p.series["prate"].messages:
            elapsed = m.end_s - m.run_s
            if m.start_s - m.run_s != (elapsed - 1) // PRATE_BUCKET_S * PRATE_BUCKET_S:
                raise InputError(
                    m.path,
                    f"{m.where()}: not an average over the 6-hour "
                    "bucket from the run start (0-1 ... 0-6, 6-7 ... h)",
                )


def decode(p: RunPlan, scratch: Path) -> dict[str, Piece]:
    """Decode the run's chosen messages once each into scratch files; a Piece per field."""
    targets: dict[Path, dict[int, tuple[int, int]]] = {}  # file -> number -> (fd, index)
    files: dict[str, tuple[Path, int]] = {}
    try:
        for name, s in p.series.items():
            if name == "orog":
                continue
            path = scratch / f"{p.run_s}-{name}.f32"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            files[name] = (path, fd)
            for i, m in enumerate(s.messages):
                targets.setdefault(m.path, {})[m.number] = (fd, i)
        for path in sorted(targets, key=lambda f: _step_of(p, f)):
            for number, values in grib_messages.decode(path, set(targets[path])):
                fd, index = targets[path][number]
                os.pwrite(fd, values.tobytes(), index * values.nbytes)
        if "tp" in p.series:
            _buckets_to_totals(p.series["tp"], files["tp"][1])
    finally:
        for _, fd in files.values():
            os.close(fd)
    return {name: _piece(p.series[name], path, p.held.folder) for name, (path, _) in files.items()}


def _buckets_to_totals(s: Series, fd: int) -> None:
    """Add each bucket to the total at its start (ascending, so that total is final)."""
    index = {m.end_s: i for i, m in enumerate(s.messages)}
    grid_ = s.messages[0].grid
    size = grid_.ni * grid_.nj * 4
    for i, m in enumerate(s.messages):
        if m.start_s == m.run_s:
            continue
        base = np.frombuffer(os.pread(fd, size, index[m.start_s] * size), dtype=np.float32)
        here = np.frombuffer(os.pread(fd, size, i * size), dtype=np.float32)
        os.pwrite(fd, (here + base).tobytes(), i * size)


def _piece(s: Series, path: Path, folder: Path) -> Piece:
    """A Piece over a scratch file: times, units and the grid's orientation."""
    m = s.messages[0]
    factor, offset = _conversion(m)
    shape = (len(s.messages), m.grid.nj, m.grid.ni)
    array = xr.DataArray(
        xr.Variable(
            ("time", "latitude", "longitude"), indexing.LazilyIndexedArray(_Scratch(path, shape))
        )
    )
    lat = m.grid.lat()
    return Piece(
        path=folder,
        name=s.key[0],
        field=s.field,
        array=array,
        factor=factor,
        offset=offset,
        run_s=m.run_s,
        times_s=s.times_s,
        lat_descending=bool(lat.size > 1 and lat[0] > lat[-1]),
        lon_order=grid.lon_order(m.grid.lon())[1],
        averaged=s.step_type == "avg",
    )


def _conversion(m: Message) -> tuple[float, float]:
    quantity = FIELDS[m.field].quantity
    conversion = units.converter(quantity, m.units)
    if conversion is None:
        raise InputError(
            m.path,
            f"{m.where()}: unit {m.units!r} is not one of "
            f"{', '.join(repr(u) for u in units.CONVERSIONS[quantity])}",
        )
    return conversion


def _orography(plans: list[RunPlan], scratch: Path) -> Piece | None:
    """The surface height from the newest run that has it (one message, decoded once)."""
    s = next((p.series["orog"] for p in reversed(plans) if "orog" in p.series), None)
    if s is None:
        return None
    m = s.messages[0]
    path = scratch / "orog.f32"
    values = dict(grib_messages.decode(m.path, {m.number}))[m.number]
    path.write_bytes(values.tobytes())
    piece = _piece(s, path, m.path.parent)
    piece.array = piece.array.isel(time=0)
    piece.times_s = None
    return piece


class _Scratch(BackendArray):
    """A float32 (time, lat, lon) scratch file, read through a memory map opened per read."""

    def __init__(self, path: Path, shape: tuple[int, int, int]):
        self.path, self.shape, self.dtype = path, shape, np.dtype(np.float32)

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read
        )

    def _read(self, key: tuple) -> np.ndarray:
        # A map of the whole file would keep every page read resident in this process until
        # it is closed: a run at 0.25° is gigabytes.
        view = np.memmap(self.path, dtype=np.float32, mode="r", shape=self.shape)
        try:
            return np.array(view[key])
        finally:
            del view


def _axes(m: Message) -> tuple[np.ndarray, np.ndarray]:
    """Ascending latitudes and the sorted longitudes in [-180, 180) of the run's grid."""
    lat, lon = m.grid.lat(), grid.lon_order(m.grid.lon())[0]
    grid.check_finite(m.path, latitude=lat, longitude=lon)
    return np.sort(lat), lon


def _describe(names: tuple[str, ...]) -> str:
    """'tcc (total cloud cover, entire atmosphere)', '2d or 2r (2 m dewpoint or ...)',
    'prmsl/msl/mslet (mean sea level pressure)'."""
    short = " or ".join("/".join(dict.fromkeys(k[0] for k in FIELDS[n].grib)) for n in names)
    return f"{short} ({' or '.join(FIELDS[n].what for n in names)})"


def _step_of(p: RunPlan, path: Path) -> int:
    return min((t for t, f in p.step_files.items() if f == path), default=0)


def _iso(unix_s: int) -> str:
    """2026-11-28T12Z (whole hours), 2026-11-28T12:30Z otherwise."""
    text = np.datetime_as_string(np.datetime64(int(unix_s), "s"), unit="m")
    return (text[:-3] if text.endswith(":00") else text) + "Z"
