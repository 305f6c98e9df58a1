"""Air-quality area: CAMS Europe and CAMS global runs -> two point-major hourly grids.

Per domain: the runs (real files from DIR/cams/<domain>/, else the generated offline default)
are stitched into one hourly series per cell, newest run first, starting HISTORY_H hours before
the newest run so that the trailing windows are complete from its first hour; global 3-hourly
steps are interpolated to hours. Then, band by band: the window means (24 h PM, 8 h O3 and CO,
24 h SO2), both AQIs, and the grid from the newest run's reference time to the forecast's end.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import contract
from contract import AirQuality as AQ
from pipeline import grid
from pipeline.io import describe_inputs
from pipeline.science import aqi, series
from pipeline.sources import cams, cams_europe, cams_generated, cams_global
from pipeline.sources.cams import Run

log = logging.getLogger("pipeline.air_quality")
BUILDER_REVISION = 1
HISTORY_H = max(hours for _, _, hours in AQ.WINDOWS) - 1
SCRATCH = ".air_quality-scratch"
SOURCES = {AQ.EUROPE: cams_europe, AQ.GLOBAL: cams_global}
VARIABLES = {AQ.EUROPE: AQ.EUROPE_VARIABLES, AQ.GLOBAL: AQ.GLOBAL_VARIABLES}
LICENCE = ("Contains modified Copernicus Atmosphere Monitoring Service information "
           "(CAMS European air quality forecasts, CAMS global atmospheric composition "
           "forecasts); neither the European Commission nor ECMWF is responsible for any use "
           "that may be made of the information it contains. Licence: "
           "https://apps.ecmwf.int/datasets/licences/copernicus/")
GENERATED_LICENCE = ("Generated offline default: synthetic fields in the CAMS formats, made by "
                     "this project (no CAMS data).")


@dataclass
class Domain:
    """One domain's runs and where they came from."""

    name: str
    kind: str                       # real | generated
    runs: list[Run]                 # newest first
    inputs: list[dict]              # manifest entries of the files read


def build(datasets: Path, version: Path, now_s: float | None = None) -> dict:
    """Build the air-quality area into `version`; return its manifest entry."""
    scratch = version / SCRATCH
    scratch.mkdir()
    try:
        domains = {name: _domain(name, datasets, scratch, now_s) for name in SOURCES}
        specs = {name: _write_grid(domain, version, scratch) for name, domain in domains.items()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _manifest_entry(domains, specs)


def _domain(name: str, datasets: Path, scratch: Path, now_s: float | None) -> Domain:
    """Scan the real inputs of a domain, or write and scan its offline default."""
    source = SOURCES[name]
    if source.present(datasets):
        folder, kind, root = datasets / source.FOLDER, "real", datasets
        log.info("%s: reading CAMS files from %s", name, folder)
    else:
        root = scratch / "generated"
        folder, kind = root / name, "generated"
        today = int((time.time() if now_s is None else now_s) // cams_generated.DAY_S
                    * cams_generated.DAY_S)
        log.info("%s: no %s, generating yesterday's and today's runs", name,
                 datasets / source.FOLDER)
        cams_generated.write_default(root, today, domains=(name,))
    runs = source.scan(folder, scratch)
    files = [p for p in sorted(folder.iterdir())
             if p.suffix.lower() in (*cams.SUFFIXES, ".zip")]
    log.info("%s: %d run(s) %s", name, len(runs), ", ".join(_iso(r.reference_time)
                                                            for r in runs))
    return Domain(name, kind, runs, describe_inputs(files, root))


def _write_grid(domain: Domain, version: Path, scratch: Path) -> dict:
    """Stitch the runs into scratch files, then write the domain's grid band by band."""
    started = time.perf_counter()
    newest = domain.runs[0]
    # History for the windows, as far as older runs reach.
    start = max(newest.reference_time - HISTORY_H * 3600,
                min(r.reference_time + int(r.lead_hours[0]) * 3600 for r in domain.runs))
    end = max(r.reference_time + int(r.lead_hours[-1]) * 3600 for r in domain.runs)
    hours = np.arange(start, end + 1, 3600, dtype=np.int64)
    skip = (newest.reference_time - start) // 3600
    axes = newest.axes
    names = sorted({n for r in domain.runs for n in r.fields})
    stitched = {n: _stitch(domain.runs, n, hours, scratch / f"{domain.name}-{n}.raw")
                for n in names}
    spec = grid.spec(AQ.GRID_FILES[domain.name], axes.lat, axes.lon, newest.reference_time,
                     3600, len(hours) - skip, list(VARIABLES[domain.name]))
    shape = (len(axes.lat), len(hours), len(axes.lon))
    grid.write(version, spec, lambda a, b: _band(domain.name, stitched, shape, skip, a, b))
    log.info("%s: %d x %d cells, %d hours from %s, in %.1f s", domain.name, spec["nlat"],
             spec["nlon"], spec["ntime"], _iso(spec["time0"]), time.perf_counter() - started)
    return spec


def _stitch(runs: list[Run], name: str, hours: np.ndarray, path: Path) -> Path:
    """One variable's hourly series over `hours`, newer runs' known values over older ones,
    written latitude-major (lat, time, lon) so that a band of rows is one read."""
    axes = runs[0].axes
    out = np.full((len(hours), len(axes.lat), len(axes.lon)), np.nan, dtype=np.float32)
    for run in reversed(runs):
        if name not in run.fields:
            continue
        leads = np.arange(run.lead_hours[0], run.lead_hours[-1] + 1)
        slots = (run.reference_time + leads * 3600 - hours[0]) // 3600
        keep = (slots >= 0) & (slots < len(hours))
        values = series.to_hours(cams.read_field(run, name), run.lead_hours, leads[keep])
        for slot, field in zip(slots[keep], values):
            np.copyto(out[slot], field, where=~np.isnan(field))
        del values
    with open(path, "wb") as handle:
        for row in range(out.shape[1]):
            handle.write(np.ascontiguousarray(out[:, row]).tobytes())
    return path


def _read_rows(path: Path, shape: tuple[int, int, int], a: int, b: int) -> np.ndarray:
    """Rows [a, b) of a latitude-major scratch file, as (time, rows, lon)."""
    _, ntime, nlon = shape
    block = np.fromfile(path, dtype=np.float32, count=(b - a) * ntime * nlon,
                        offset=a * ntime * nlon * 4)
    return block.reshape(b - a, ntime, nlon).transpose(1, 0, 2)


def _band(domain: str, stitched: dict[str, Path], shape: tuple[int, int, int], skip: int,
          a: int, b: int) -> np.ndarray:
    """Every output variable for latitude rows [a, b) after the first `skip` (history) hours:
    (nvar, ntime, rows, nlon)."""
    empty = np.full((shape[1], b - a, shape[2]), np.nan, dtype=np.float32)
    columns = {name: _read_rows(path, shape, a, b) for name, path in stitched.items()}
    for name, source, window in AQ.WINDOWS:
        columns[name] = series.trailing_mean(columns[source], window, axis=0)
    columns["european_aqi"] = aqi.european_aqi(columns).astype(np.float32)
    columns["us_aqi"] = aqi.us_aqi(columns).astype(np.float32)
    return np.stack([columns.get(name, empty)[skip:] for name in VARIABLES[domain]])


def _iso(unix_s: int) -> str:
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _manifest_entry(domains: dict[str, Domain], specs: dict[str, dict]) -> dict:
    kinds = {d.kind for d in domains.values()}
    kind = kinds.pop() if len(kinds) == 1 else "mixed"
    inputs = [dict(i, domain=name) for name, d in domains.items() for i in d.inputs]
    tables = aqi.manifest_tables()
    digest = hashlib.sha256(repr((contract.SCHEMA_VERSION, BUILDER_REVISION, HISTORY_H,
                                  sorted((d.name, d.kind) for d in domains.values()),
                                  [i["sha256"] for i in inputs], tables)).encode()).hexdigest()
    return {
        "version": f"air_quality-{digest[:12]}",
        "schema_version": contract.SCHEMA_VERSION,
        "source": {
            "kind": kind,
            "generated": any(d.kind == "generated" for d in domains.values()),
            "domains": {name: {
                "kind": d.kind,
                "model": "CAMS European air quality forecasts (ENSEMBLE)" if name == AQ.EUROPE
                else "CAMS global atmospheric composition forecasts",
                "runs": [_iso(r.reference_time) for r in d.runs],
                "resolution_deg": specs[name]["dlat"],
                "hours": [_iso(specs[name]["time0"]),
                          _iso(specs[name]["time0"] + (specs[name]["ntime"] - 1) * 3600)],
            } for name, d in domains.items()},
            "licence": GENERATED_LICENCE if kind == "generated" else LICENCE,
        },
        "inputs": inputs,
        "files": sorted(spec["file"] for spec in specs.values()),
        "grids": specs,
        AQ.AQI_TABLES: tables,
        "europe_box": AQ.EUROPE_BOX,
    }
