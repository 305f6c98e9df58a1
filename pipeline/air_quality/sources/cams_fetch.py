"""Fetching CAMS runs from the Atmosphere Data Store into datasets/cams/<domain>/.

A source (cams_europe.SOURCE, cams_global.SOURCE) plans Units: one forecast run or one
analysis, made of one or more requests (Parts) that land together. Each part's delivery (a zip
of NetCDF files, or one NetCDF file) is downloaded into datasets/cams/.fetch/, unpacked, and
the unit's files are checked by the domain's own reader (kind, reference time, every variable
at every requested lead hour) before they are renamed into the folder the build reads: a
corrupt or partial delivery never lands there. Our files are named `<prefix>-<YYYYMMDDHH>...nc`,
so that what is held, and what prune deletes, is known from names alone; a unit held is not
requested again.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipeline.air_quality.sources import cams
from pipeline.common.io import InputError
from pipeline.fetch import ads, lock
from pipeline.fetch.source import LATEST, FetchError, FetchOptions, FetchReport

log = logging.getLogger("pipeline.fetch.cams")
DAY_S = 86400
WORK = Path("cams") / ".fetch"  # staging, pending jobs and locks (not read by builds)
NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")
ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class Part:
    """One request to the ADS and the name (without .nc) its NetCDF file lands as."""

    name: str
    request: dict


@dataclass(frozen=True)
class Unit:
    """A run (or an analysis) that lands whole: its parts and what the reader must find."""

    label: str  # e.g. "CAMS Europe forecast of 2026-11-29 00 UTC"
    kind: str  # cams.FORECAST | cams.ANALYSIS
    reference_s: int
    parts: tuple[Part, ...]
    leads: dict[str, tuple[int, ...]]  # area variable -> lead hours the files must hold
    newest: bool = False  # not published yet: the fetch says retry later


def stamp(unix_s: int) -> str:
    """YYYYMMDDHH of a Unix time."""
    return datetime.fromtimestamp(unix_s, timezone.utc).strftime("%Y%m%d%H")


def day_of(options: FetchOptions, now_s: float | None = None) -> int:
    """00 UTC of the day whose runs are wanted: today for 'latest', else --run's (00 UTC)."""
    if options.run == LATEST:
        return int((time.time() if now_s is None else now_s) // DAY_S * DAY_S)
    try:
        run = datetime.strptime(options.run, "%Y%m%d%H").replace(tzinfo=timezone.utc)
    except ValueError:
        raise FetchError(f"--run {options.run}: expected 'latest' or YYYYMMDD00") from None
    if run.hour != 0:
        raise FetchError(f"--run {options.run}: CAMS runs are fetched at 00 UTC (YYYYMMDD00)")
    return int(run.timestamp())


class CamsSource:
    """A CAMS domain as a fetchable source (pipeline.fetch.source.Source)."""

    area = "air_quality"
    keep_runs = 2  # yesterday's and today's runs, as the build reads

    def enabled(self) -> bool:
        """Once an ADS key is configured (the ADS answers nothing without one)."""
        try:
            ads.credentials(None)
        except FetchError:
            return False
        return True

    base_url_env = ads.URL_ENV
    default_base_url = ads.DEFAULT_URL

    def __init__(self, name: str, dataset: str, reader, prefix: str, plan):
        self.name, self.dataset, self.reader, self.prefix = name, dataset, reader, prefix
        self.plan = plan  # plan(day_s) -> [Unit], oldest first

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """Bring the day's units that are not held into datasets/cams/<domain>/."""
        # Blocking on the event loop's thread on purpose: cdsapi is synchronous, and in this
        # thread Ctrl-C stops it at once (a worker thread would run on to its deadline).
        started = time.monotonic()
        report = FetchReport(source=self.name)
        folder = options.datasets / self.reader.FOLDER
        wanted = [u for u in self.plan(day_of(options)) if not self._held(folder, u)]
        if options.dry_run:
            self._plan_report(report, wanted, options)
        elif wanted:  # (everything held: no key, lock or ADS needed)
            with lock.exclusive(options.datasets / WORK / f"{self.name}.lock", self.name):
                self._fetch_units(report, wanted, options, folder)
        report.run = (self.held_runs(options.datasets) or [None])[-1]
        report.seconds = time.monotonic() - started
        return report

    def _fetch_units(
        self, report: FetchReport, wanted: list[Unit], options: FetchOptions, folder: Path
    ) -> None:
        """Fetch each unit, oldest first; only the newest one's absence stops the fetch."""
        work = options.datasets / WORK
        session = ads.Session(
            ads.credentials(options.base_url), ads.Pending(work / f"{self.name}-pending.json")
        )
        for unit in wanted:
            try:
                landed, size = self._fetch_unit(
                    session, unit, work / f"{self.name}-staging", folder
                )
            except ads.NotPublished as exc:
                if unit.newest:
                    raise
                report.notes.append(str(exc))
                continue
            report.files += landed
            report.bytes += size
            report.changed = True

    def _fetch_unit(
        self, session: ads.Session, unit: Unit, staging: Path, folder: Path
    ) -> tuple[int, int]:
        """Download, unpack and check every part of a unit, then land its files."""
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            size, files = 0, []
            for part in unit.parts:
                delivery = staging / f"{part.name}.delivery"
                size += session.retrieve(self.dataset, part.request, delivery, unit.label)
                files += unpack(delivery, staging, part.name, unit.label)
                delivery.unlink()
            self._check(unit, staging)
            land(files, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        log.info("%s: %d file(s) into %s", unit.label, len(files), folder)
        return len(files), size

    def _check(self, unit: Unit, staging: Path) -> None:
        """The reader finds exactly the unit's run, with every variable at every lead hour."""
        try:
            runs = self.reader.collect(staging, staging / "scratch")
        except InputError as exc:
            raise FetchError(
                f"{unit.label}: the delivery is not usable ({exc.problem}); "
                "nothing was moved into datasets/"
            ) from None
        found = [(r.kind, cams.iso(r.reference_time)) for r in runs]
        if found != [(unit.kind, cams.iso(unit.reference_s))]:
            raise FetchError(f"{unit.label}: the delivery holds {found}, not that run")
        for name, hours in unit.leads.items():
            got = runs[0].fields[name].lead_hours.tolist() if name in runs[0].fields else []
            if got != list(hours):
                raise FetchError(
                    f"{unit.label}: {name} has lead hours {got[:3]}...{got[-2:]} "
                    f"({len(got)}), expected {hours[0]}-{hours[-1]} ({len(hours)})"
                )

    def _plan_report(self, report: FetchReport, wanted: list[Unit], options: FetchOptions) -> None:
        """--dry-run: one line per request that would be sent; the ADS is not contacted."""
        try:
            url = ads.credentials(options.base_url).url
        except FetchError as exc:
            url = options.base_url or os.environ.get(ads.URL_ENV) or ads.DEFAULT_URL
            report.notes.append(f"a real fetch would fail: {exc}")
        for unit in wanted:
            for part in unit.parts:
                report.planned.append(
                    f"{unit.label}: POST {url}/retrieve/v1/processes/{self.dataset}/execution "
                    f"{json.dumps({'inputs': part.request}, separators=(',', ':'))} -> "
                    f"{self.reader.FOLDER / (part.name + '.nc')}"
                )
            report.files += len(unit.parts)
        if not wanted:
            report.notes.append("every run of the day is held: nothing would be requested")

    def _held(self, folder: Path, unit: Unit) -> bool:
        return all((folder / f"{part.name}.nc").is_file() for part in unit.parts)

    def held_runs(self, datasets: Path) -> list[str]:
        """The forecast runs (YYYYMMDDHH) whose every part is held, oldest first."""
        folder = datasets / self.reader.FOLDER
        runs = sorted({self._stamp(p) for p in self._ours(folder)} - {None})
        held = []
        for run in runs:
            day = int(datetime.strptime(run, "%Y%m%d%H").replace(tzinfo=timezone.utc).timestamp())
            units = [u for u in self.plan(day) if u.reference_s == day and u.kind == cams.FORECAST]
            if units and all(self._held(folder, u) for u in units):
                held.append(run)
        return held

    def prune(self, datasets: Path, keep: int) -> list[str]:
        """Delete our files older than the newest `keep` held forecast runs (analyses and
        incomplete runs included); return the forecast runs deleted."""
        if keep < 1:
            raise ValueError("keep at least one run")
        runs = self.held_runs(datasets)
        if len(runs) <= keep:
            return []
        oldest_kept = runs[-keep]
        for path in self._ours(datasets / self.reader.FOLDER):
            if self._stamp(path) < oldest_kept:
                path.unlink()
        return runs[:-keep]

    def _ours(self, folder: Path) -> list[Path]:
        if not folder.is_dir():
            return []
        return [p for p in folder.glob(f"{self.prefix}-*.nc") if self._stamp(p)]

    def _stamp(self, path: Path) -> str | None:
        """The YYYYMMDDHH in one of our file names."""
        digits = [w for w in path.stem.split("-") if len(w) == 10 and w.isdigit()]
        return digits[0] if digits else None


def unpack(delivery: Path, staging: Path, name: str, label: str) -> list[Path]:
    """The NetCDF files of a delivery (a zip of them, or one), as staging/<name>[-k].nc."""
    with open(delivery, "rb") as handle:
        head = handle.read(8)
    if head.startswith(NETCDF_MAGIC):
        target = staging / f"{name}.nc"
        os.replace(delivery, target)
        return [target]
    if not head.startswith(ZIP_MAGIC):
        raise FetchError(
            f"{label}: the delivery is neither a zip nor a NetCDF file "
            f"(starts {head!r}); nothing was moved into datasets/"
        )
    out = []
    try:
        with zipfile.ZipFile(delivery) as archive:
            bad = archive.testzip()  # every member's CRC: a damaged archive fails here
            if bad is not None:
                raise zipfile.BadZipFile(f"member {bad} is damaged")
            members = [
                m for m in sorted(archive.namelist()) if Path(m).suffix.lower() in cams.SUFFIXES
            ]
            for k, member in enumerate(members):
                # Member names are not trusted as paths: ours, numbered after the first.
                target = staging / (f"{name}.nc" if k == 0 else f"{name}-{k + 1}.nc")
                with archive.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                out.append(target)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        if isinstance(exc, OSError) and exc.filename:
            raise  # our own write failed (a full disk)
        raise FetchError(
            f"{label}: the delivered zip is corrupt ({exc}); nothing was moved into datasets/"
        ) from None
    if not out:
        raise FetchError(f"{label}: the delivered zip holds no NetCDF file")
    return out


def land(files: list[Path], folder: Path) -> None:
    """Rename checked files into the folder the build reads (made now, not before: an empty
    folder would make the build fail instead of using its offline default)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())  # on disk before the name says it is complete
        os.replace(path, folder / path.name)
