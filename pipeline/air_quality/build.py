"""Air-quality area: CAMS Europe and CAMS global runs -> two point-major hourly grids.

Per domain: the runs (real files from DIR/cams/<domain>/, else the generated offline default;
forecasts, and for Europe analyses, which take precedence for their hours) are stitched into
one hourly series per cell, starting HISTORY_H hours before the newest forecast so that the
trailing windows are complete from its first hour; each field's steps (hourly, or the global
model levels' 3-hourly) are interpolated to hours. Then, band by band: the window means (24 h
PM and SO2, 8 h O3 and CO) and the grid from the newest forecast's reference time to the end.
No AQI is stored: the manifest publishes the index tables, which the server evaluates on the
concentrations it interpolates at a point (docs/data/air-quality.md#aqi-at-the-point). The
European grid also carries the global model's dust AOD, regridded to its cells (bilinear on the
global cells, as the server interpolates at a point), so a European answer reads one grid.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import contract
from contract import DAY_S, HOUR_S
from contract import AirQuality as AQ
from pipeline.air_quality import aqi
from pipeline.air_quality.sources import cams, cams_europe, cams_global, generated
from pipeline.air_quality.sources.cams import Run
from pipeline.common import grid, regrid, series
from pipeline.common.io import InputError, describe_inputs, naming

log = logging.getLogger("pipeline.air_quality")
BUILDER_REVISION = 4  # 2: dust AOD regridded onto the European grid; 3: no AQI columns;
# 4: a pole row holds one point's values
HISTORY_H = max(hours for _, _, hours in AQ.WINDOWS) - 1
SCRATCH = ".air_quality-scratch"
SOURCES = {AQ.EUROPE: cams_europe, AQ.GLOBAL: cams_global}
_BOX = AQ.EUROPE_BOX
# What each grid must cover: lat_min, lat_max, lon_min, lon_max (global: the whole globe).
COVERAGE = {
    AQ.EUROPE: (_BOX["lat_min"], _BOX["lat_max"], _BOX["lon_min"], _BOX["lon_max"]),
    AQ.GLOBAL: (-90.0, 90.0, -180.0, 180.0),
}
VARIABLES = {AQ.EUROPE: AQ.EUROPE_VARIABLES, AQ.GLOBAL: AQ.GLOBAL_VARIABLES}
LICENCE = (
    "Contains modified Copernicus Atmosphere Monitoring Service information "
    "(CAMS European air quality forecasts, CAMS global atmospheric composition "
    "forecasts); neither the European Commission nor ECMWF is responsible for any use "
    "that may be made of the information it contains. Licence: "
    "https://apps.ecmwf.int/datasets/licences/copernicus/"
)
GENERATED_LICENCE = (
    "Generated offline default: synthetic fields in the CAMS formats, made by "
    "this project (no CAMS data)."
)


@dataclass
class Domain:
    """One domain's runs and where they came from."""

    name: str
    kind: str  # real | generated
    runs: list[Run]  # by precedence (cams.by_precedence)
    newest: Run  # the newest forecast: the first hour served is its time
    inputs: list[dict]  # manifest entries of the files read


@dataclass
class Stitched:
    """A domain's runs stitched into one hourly series per cell and variable (scratch files)."""

    hours: np.ndarray  # Unix s of every stitched hour, history first
    skip: int  # history hours before the newest run's reference time
    lat: np.ndarray
    lon: np.ndarray
    files: dict[str, Path]  # variable -> latitude-major file (lat, time, lon)
    us_aqi_known: np.ndarray | None = None  # per served hour: the US AQI is known somewhere

    def rows(self, name: str, a: int, b: int) -> np.ndarray:
        """Rows [a, b) of a variable, as (time, rows, lon)."""
        block = np.fromfile(
            self.files[name],
            dtype=np.float32,
            count=(b - a) * len(self.hours) * len(self.lon),
            offset=a * len(self.hours) * len(self.lon) * 4,
        )
        return block.reshape(b - a, len(self.hours), len(self.lon)).transpose(1, 0, 2)


def build(datasets: Path, version: Path, now_s: float | None = None) -> contract.AreaEntry:
    """Build the air-quality area into `version`; return its manifest entry."""
    scratch = version / SCRATCH
    scratch.mkdir()
    try:
        domains = {name: _domain(name, datasets, scratch, now_s) for name in SOURCES}
        stitched = {name: _stitch_domain(domain, scratch) for name, domain in domains.items()}
        world, europe = stitched[AQ.GLOBAL], stitched[AQ.EUROPE]
        specs = {AQ.GLOBAL: _write_grid(AQ.GLOBAL, world, version)}
        specs[AQ.EUROPE] = _write_grid(
            AQ.EUROPE, europe, version, _DustOn(europe, world, specs[AQ.GLOBAL])
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    us_from = {name: _us_aqi_from(name, stitched[name]) for name in SOURCES}
    return _manifest_entry(domains, {name: specs[name] for name in SOURCES}, us_from)


def _domain(name: str, datasets: Path, scratch: Path, now_s: float | None) -> Domain:
    """Scan the real inputs of a domain, or write and scan its offline default."""
    source = SOURCES[name]
    if source.present(datasets):
        folder, kind, root = datasets / source.FOLDER, "real", datasets
        log.info("%s: reading CAMS files from %s", name, folder)
    else:
        root = scratch / "generated"
        folder, kind = root / name, "generated"
        today = int((time.time() if now_s is None else now_s) // DAY_S * DAY_S)
        log.info(
            "%s: no %s, generating yesterday's and today's runs", name, datasets / source.FOLDER
        )
        generated.write_default(root, today, domains=(name,))
    runs = source.scan(folder, scratch)
    files = [p for p in sorted(folder.iterdir()) if p.suffix.lower() in (*cams.SUFFIXES, ".zip")]
    log.info(
        "%s: %d run(s) %s",
        name,
        len(runs),
        ", ".join(f"{r.kind} {cams.iso(r.reference_time)}" for r in runs),
    )
    newest = cams.newest_forecast(runs, folder)
    check_coverage(name, newest)
    return Domain(name, kind, runs, newest, describe_inputs(files, root))


def check_coverage(name: str, run: Run) -> None:
    """InputError unless the run's grid holds its whole domain
    (docs/data/air-quality.md#artifacts)."""
    # Half a cell beyond the outer centres counts, as the server's PointGrid.contains says.
    lat0, lat1, lon0, lon1 = COVERAGE[name]
    path = next(iter(run.fields.values())).path
    spec = grid.spec("", run.axes.lat, run.axes.lon, 0, HOUR_S, 1, [], path)
    south = spec["lat0"] - spec["dlat"] / 2
    north = spec["lat0"] + (spec["nlat"] - 1) * spec["dlat"] + spec["dlat"] / 2
    west = spec["lon0"] - spec["dlon"] / 2
    east = spec["lon0"] + (spec["nlon"] - 1) * spec["dlon"] + spec["dlon"] / 2
    tolerance = 1e-6
    if not (
        south <= lat0 + tolerance
        and north >= lat1 - tolerance
        and (
            spec["wraps"]
            or (name != AQ.GLOBAL and west <= lon0 + tolerance and east >= lon1 - tolerance)
        )
    ):
        raise InputError(
            path,
            f"covers latitudes {south:g} to {north:g}, longitudes {west:g} "
            f"to {east:g}; the {name} grid must cover {lat0:g} to {lat1:g}, "
            f"{lon0:g} to {lon1:g} (request the whole domain, no area)",
        )


def _stitch_domain(domain: Domain, scratch: Path) -> Stitched:
    """Stitch every variable of the domain's runs into scratch files."""
    newest = domain.newest
    # History for the windows, as far as older runs (and analyses) reach.
    start = max(newest.reference_time - HISTORY_H * HOUR_S, min(r.span_s()[0] for r in domain.runs))
    end = max(r.span_s()[1] for r in domain.runs)
    hours = np.arange(start, end + 1, HOUR_S, dtype=np.int64)
    names = sorted({n for r in domain.runs for n in r.fields})
    files = {n: _stitch(domain.runs, n, hours, scratch / f"{domain.name}-{n}.raw") for n in names}
    return Stitched(
        hours, (newest.reference_time - start) // HOUR_S, newest.axes.lat, newest.axes.lon, files
    )


def _write_grid(name: str, stitched: Stitched, version: Path, extra=None) -> dict:
    """Write the domain's grid band by band."""
    # extra(a, b) gives further (time, rows, lon) columns of rows [a, b) by name.
    started = time.perf_counter()
    hours, skip = stitched.hours, stitched.skip
    spec = grid.spec(
        AQ.GRID_FILES[name],
        stitched.lat,
        stitched.lon,
        int(hours[skip]),
        HOUR_S,
        len(hours) - skip,
        list(VARIABLES[name]),
    )
    # The bands may run on a Dask cluster: each gives back its hours with a known US AQI.
    facts = grid.write(version, spec, _Band(name, stitched, extra))
    stitched.us_aqi_known = np.logical_or.reduce([np.zeros(len(hours) - skip, dtype=bool), *facts])
    log.info(
        "%s: %d x %d cells, %d hours from %s, in %.1f s",
        name,
        spec["nlat"],
        spec["nlon"],
        spec["ntime"],
        cams.iso(spec["time0"]),
        time.perf_counter() - started,
    )
    return spec


@dataclass
class _DustOn:
    """extra() for _write_grid: the source grid's dust AOD at the target's rows (picklable)."""

    target: Stitched
    source: Stitched
    source_spec: dict

    def __call__(self, a: int, b: int) -> dict[str, np.ndarray]:
        # Bilinear on the source cells, for the target's hours that the source grid serves;
        # NaN at the others.
        target, source = self.target, self.source
        first = np.searchsorted(source.hours, target.hours)
        served = (target.hours >= source.hours[source.skip]) & (target.hours <= source.hours[-1])
        interpolate = regrid.Bilinear(self.source_spec, target.lat[a:b], target.lon)
        field = source.rows(AQ.DUST_AOD, interpolate.first_row, interpolate.stop_row)
        out = np.full((len(target.hours), b - a, len(target.lon)), np.nan, dtype=np.float32)
        out[served] = interpolate(field[first[served]])
        return {AQ.DUST_AOD: out}


def _stitch(runs: list[Run], name: str, hours: np.ndarray, path: Path) -> Path:
    """One variable's hourly series over `hours`, known values by the runs' precedence,
    stitched a band of rows at a time (memory set by the band, not the grid)."""
    # Written latitude-major (lat, time, lon), so that a band of rows is one read.
    axes = runs[0].axes
    nlat, nlon = len(axes.lat), len(axes.lon)
    rows_per_band = grid.band_rows(len(hours) * nlon * 4)
    known: dict[int, bool] = {}  # run (index) -> a value seen in any band
    with naming(path), open(path, "wb") as handle:
        for a in range(0, nlat, rows_per_band):
            out = _stitch_rows(runs, name, hours, (a, min(nlat, a + rows_per_band)), known)
            handle.write(memoryview(np.ascontiguousarray(out.transpose(1, 0, 2))).cast("B"))
            del out
    for i in reversed(range(len(runs))):  # the order the runs are read in
        if known.get(i) is False and name in SOURCES[runs[i].domain].REQUIRED:
            raise cams.missing_values(runs[i], name)
    return path


def _stitch_rows(
    runs: list[Run], name: str, hours: np.ndarray, rows: tuple[int, int], known: dict
) -> np.ndarray:
    """_stitch's (time, rows, lon) values of output rows [a, b); notes in `known` whether
    each run had a value there."""
    out = np.full((len(hours), rows[1] - rows[0], len(runs[0].axes.lon)), np.nan, np.float32)
    for i in reversed(range(len(runs))):
        run = runs[i]
        if name not in run.fields:
            continue
        steps = run.fields[name].lead_hours
        leads = np.arange(steps[0], steps[-1] + 1)
        slots = (run.reference_time + leads * HOUR_S - hours[0]) // HOUR_S
        keep = (slots >= 0) & (slots < len(hours))
        field = cams.read_field(run, name, rows=rows)
        known[i] = known.get(i, False) or bool(np.isfinite(field).any())
        values = series.to_hours(field, steps, leads[keep])
        del field
        for slot, band in zip(slots[keep], values):
            np.copyto(out[slot], band, where=~np.isnan(band))
        del values
    return out


@dataclass
class _Band:
    """A domain's band function for grid.write (picklable: scratch paths, no open files)."""

    domain: str
    stitched: Stitched
    extra: _DustOn | None = None

    def __call__(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Every output variable for latitude rows [a, b) after the history hours, shape
        (nvar, ntime, rows, nlon); and per served hour whether the US AQI is known there."""
        stitched, skip = self.stitched, self.stitched.skip
        columns = {name: stitched.rows(name, a, b) for name in stitched.files}
        columns |= self.extra(a, b) if self.extra else {}
        empty = np.full((len(stitched.hours), b - a, len(stitched.lon)), np.nan, dtype=np.float32)
        for name, source, window in AQ.WINDOWS:
            columns[name] = series.trailing_mean(columns[source], window, axis=0)
        known = aqi.known(aqi.US_AQI, columns)[skip:].any(axis=(1, 2))
        band = np.stack([columns.get(name, empty)[skip:] for name in VARIABLES[self.domain]])
        return grid.one_point_poles(band, stitched.lat[a:b], stitched.lon), known


def _us_aqi_from(name: str, stitched: Stitched) -> int | None:
    """The first served hour with a known US AQI (Unix s); a warning when it is not the first."""
    known = np.flatnonzero(stitched.us_aqi_known)
    first = int(stitched.hours[stitched.skip + known[0]]) if len(known) else None
    if first != int(stitched.hours[stitched.skip]):
        log.warning(
            "%s: the US AQI is unknown %s: the runs give %d hour(s) of history "
            "before the newest forecast, and the 24-hour means need %d of their 24 "
            "hours (give the previous day's run as well)",
            name,
            f"before {cams.iso(first)}" if first else "at every hour",
            stitched.skip,
            int(np.ceil(series.MIN_WINDOW_SHARE * 24)),
        )
    return first


def _manifest_entry(
    domains: dict[str, Domain], specs: dict[str, dict], us_from: dict[str, int | None]
) -> dict:
    kinds = {d.kind for d in domains.values()}
    kind = kinds.pop() if len(kinds) == 1 else "mixed"
    inputs = [dict(i, domain=name) for name, d in domains.items() for i in d.inputs]
    tables = aqi.manifest_tables()
    digest = hashlib.sha256(
        repr(
            (
                contract.SCHEMA_VERSION,
                BUILDER_REVISION,
                HISTORY_H,
                sorted((d.name, d.kind) for d in domains.values()),
                [i["sha256"] for i in inputs],
                tables,
            )
        ).encode()
    ).hexdigest()
    return {
        "version": f"air_quality-{digest[:12]}",
        "schema_version": contract.SCHEMA_VERSION,
        "source": {
            "kind": kind,
            "generated": any(d.kind == "generated" for d in domains.values()),
            "domains": {
                name: {
                    "kind": d.kind,
                    "model": "CAMS European air quality forecasts (ENSEMBLE)"
                    if name == AQ.EUROPE
                    else "CAMS global atmospheric composition forecasts",
                    "runs": [cams.iso(r.reference_time) for r in d.runs if r.kind == cams.FORECAST],
                    "analyses": [
                        cams.iso(r.reference_time) for r in d.runs if r.kind == cams.ANALYSIS
                    ],
                    "resolution_deg": specs[name]["dlat"],
                    "hours": [
                        cams.iso(specs[name]["time0"]),
                        cams.iso(specs[name]["time0"] + (specs[name]["ntime"] - 1) * HOUR_S),
                    ],
                    # the first hour with a known US AQI: later than the first hour when the
                    # runs give too little history for the 24-hour means (a single run)
                    "us_aqi_from": cams.iso(us_from[name]) if us_from[name] else None,
                }
                for name, d in domains.items()
            },
            "licence": GENERATED_LICENCE if kind == "generated" else LICENCE,
        },
        "inputs": inputs,
        "files": sorted(spec["file"] for spec in specs.values()),
        "grids": specs,
        AQ.AQI_TABLES: tables,
    }
