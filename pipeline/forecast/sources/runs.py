"""Model runs as the fetchers hold them, and which model the forecast build reads.

A fetcher writes each run into datasets/forecast/<source>/<YYYYMMDDHH>/ (source `gfs` or
`ecmwf`), its files named as upstream names them (gfs.t12z.pgrb2.0p25.f003,
20261128120000-3h-oper-fc.grib2). A file being written has a temporary name starting with '.'
(and ending in '.part'); the run is complete once its marker run.json is written, LAST:

    {"source": "gfs", "run": "2026112812",
     "files": [{"name": "gfs.t12z.pgrb2.0p25.f000", "bytes": 5201234}, ...]}

The build reads only complete runs, and of them only the files their marker lists. Stdlib
only: pipeline/fetch imports this module to write and list runs.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

SOURCES = ("gfs", "ecmwf")  # in the order of the default choice (see choose)
MARKER = "run.json"
MODEL_ENV = "WEATHERAPI_FORECAST_MODEL"
_RUN_NAME = re.compile(r"\d{10}")  # YYYYMMDDHH


class RunError(Exception):
    """A held run or the model choice is unusable; names the file and the problem."""

    def __init__(self, path: Path | str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


@dataclass(frozen=True)
class RunFile:
    """One file of a run, as its marker lists it."""

    name: str
    bytes: int


@dataclass(frozen=True)
class HeldRun:
    """A complete run: its source, cycle (YYYYMMDDHH), folder and files."""

    source: str
    run: str
    folder: Path
    files: tuple[RunFile, ...]

    @property
    def run_s(self) -> int:
        """The run (cycle) time in Unix seconds."""
        return run_seconds(self.run)

    def paths(self) -> list[Path]:
        """The run's files, in the marker's order."""
        return [self.folder / f.name for f in self.files]


def run_seconds(run: str) -> int:
    """'2026112812' -> Unix seconds of 2026-11-28 12:00 UTC."""
    when = datetime.strptime(run, "%Y%m%d%H").replace(tzinfo=timezone.utc)
    return int(when.timestamp())


def run_name(run_s: int) -> str:
    """Unix seconds -> 'YYYYMMDDHH'."""
    return datetime.fromtimestamp(run_s, timezone.utc).strftime("%Y%m%d%H")


def run_folder(datasets: Path, source: str, run: str) -> Path:
    """Where a fetcher writes a run: DATASETS/forecast/<source>/<YYYYMMDDHH>."""
    return Path(datasets) / "forecast" / source / run


def is_temporary(name: str) -> bool:
    """A file being written (or any other dot-file): never part of a run."""
    return name.startswith(".")


def write_marker(folder: Path, source: str, run: str, names: list[str] | None = None) -> HeldRun:
    """Mark the run in `folder` complete: list its files (`names`, else every regular file but
    dot-files and the marker) with their sizes in run.json, written atomically. Call it last,
    once every file is in place under its final name."""
    folder = Path(folder)
    if names is None:
        names = sorted(
            p.name
            for p in folder.iterdir()
            if p.is_file() and not is_temporary(p.name) and p.name != MARKER
        )
    if not names:
        raise RunError(folder, "no files to mark as a complete run")
    held = HeldRun(
        source, run, folder, tuple(RunFile(n, (folder / n).stat().st_size) for n in names)
    )
    body = {
        "source": source,
        "run": run,
        "files": [{"name": f.name, "bytes": f.bytes} for f in held.files],
    }
    part = folder / f".{MARKER}.part"
    part.write_text(json.dumps(body, indent=1) + "\n")
    os.replace(part, folder / MARKER)
    return held


def read_marker(folder: Path) -> HeldRun | None:
    """The complete run in `folder`, None while it has no marker; RunError when the marker is
    malformed, names another run, or a file it lists is missing or of another size."""
    folder = Path(folder)
    path = folder / MARKER
    try:
        body = json.loads(path.read_text())
        files = tuple(RunFile(str(f["name"]), int(f["bytes"])) for f in body["files"])
        source, run = str(body["source"]), str(body["run"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunError(path, f"not a run marker ({type(exc).__name__}: {exc})") from None
    if (source, run) != (folder.parent.name, folder.name):
        raise RunError(
            path, f"names run {source}/{run}, not the folder's {folder.parent.name}/{folder.name}"
        )
    for f in files:
        if is_temporary(f.name) or "/" in f.name or f.name == MARKER:
            raise RunError(path, f"lists {f.name!r}, which cannot be a run's file")
        try:
            size = (folder / f.name).stat().st_size
        except FileNotFoundError:
            raise RunError(folder / f.name, f"listed in {MARKER} but missing") from None
        if size != f.bytes:
            raise RunError(folder / f.name, f"has {size} bytes, {MARKER} says {f.bytes}")
    return HeldRun(source, run, folder, files)


def held_runs(datasets: Path, source: str) -> list[HeldRun]:
    """The complete runs of a source held in DATASETS, oldest first (folders without a marker
    are runs still being fetched, and are passed over)."""
    root = Path(datasets) / "forecast" / source
    if not root.is_dir():
        return []
    folders = sorted(p for p in root.iterdir() if p.is_dir() and _RUN_NAME.fullmatch(p.name))
    return [held for held in map(read_marker, folders) if held is not None]


def choose(
    datasets: Path, environ: dict[str, str] | None = None
) -> tuple[str, list[HeldRun]] | None:
    """The source the build reads and its complete runs: WEATHERAPI_FORECAST_MODEL (gfs or
    ecmwf) when set, else gfs when it has a complete run, else ecmwf; None when neither has
    one (then the variable is not consulted: the build reads other inputs)."""
    environ = os.environ if environ is None else environ
    wanted = environ.get(MODEL_ENV, "").strip().lower()
    if wanted and wanted not in SOURCES:
        raise RunError(MODEL_ENV, f"{wanted!r} is not one of {', '.join(SOURCES)}")
    held = {source: held_runs(datasets, source) for source in SOURCES}
    if not any(held.values()):
        return None
    if wanted:
        if not held[wanted]:
            raise RunError(
                Path(datasets) / "forecast" / wanted,
                f"{MODEL_ENV}={wanted} but no complete {wanted} run is held here",
            )
        return wanted, held[wanted]
    return next(((source, held[source]) for source in SOURCES if held[source]), None)
