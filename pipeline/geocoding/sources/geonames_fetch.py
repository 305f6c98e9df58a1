"""GeoNames dumps and their daily updates: `python -m pipeline fetch geonames [--dry-run]`.

From download.geonames.org/export/dump/ (WEATHERAPI_GEONAMES_BASE_URL, --base-url) into
DIR/geonames/, what the gazetteer build reads (geonames.py):

- the places dump: allCountries.zip, or citiesN.zip with WEATHERAPI_GEONAMES_DUMP=citiesN
  (cities500, cities1000, cities5000, cities15000);
- alternateNamesV2.zip (not with WEATHERAPI_GEONAMES_ALTERNATE_NAMES=0);
- admin1CodesASCII.txt, admin2Codes.txt and countryInfo.txt, revalidated at every fetch (ETag
  and Last-Modified: 304 when unchanged);
- for each day since the dumps were written, GeoNames' update files of that day, into
  updates/YYYY-MM-DD/ (geonames_updates): a day moves some hundred kB, the dumps 600 MB.

GeoNames writes its dumps anew every day, so a held dump is not revalidated while the daily
files keep it current. It is downloaded again, conditionally (an unchanged one is not), when
none is held, when it is older than WEATHERAPI_GEONAMES_MAX_UPDATE_DAYS days (30: what a build
overlays stays small), or when a day's files are needed that GeoNames no longer serves (it
keeps recent days only). A new dump makes the days before it obsolete: they are deleted.
Every file is verified before it is renamed into place (a zip decompresses whole, a text file
has its columns on every line) and a day's files appear together, so a build never reads a
partial input. The newest day asked for is yesterday (UTC); not served yet, it is next time's.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.fetch import verify
from pipeline.fetch.http import Downloader, DownloadError, HttpConfig, public_url
from pipeline.fetch.lock import exclusive
from pipeline.fetch.source import LATEST, FetchError, FetchOptions, FetchReport, base_url
from pipeline.geocoding.sources import geonames_updates as updates
from pipeline.geocoding.sources.geonames import places_file

DUMP_ENV = "WEATHERAPI_GEONAMES_DUMP"
NAMES_ENV = "WEATHERAPI_GEONAMES_ALTERNATE_NAMES"
MAX_DAYS_ENV = "WEATHERAPI_GEONAMES_MAX_UPDATE_DAYS"
PLACE_DUMPS = ("allCountries", "cities500", "cities1000", "cities5000", "cities15000")
NAMES_DUMP = "alternateNamesV2"
CODE_FILES = {
    "countryInfo.txt": verify.tsv((17, 19), comment="#"),
    "admin1CodesASCII.txt": verify.tsv((4, 4)),
    "admin2Codes.txt": verify.tsv((4, 4)),
}
ONE_DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class GeoNamesConfig:
    """What to fetch; settings() reads it from the environment."""

    dump: str = "allCountries"  # the places dump, one of PLACE_DUMPS
    alternate_names: bool = True  # alternateNamesV2.zip and its daily files
    max_update_days: int = 30  # a dump older than this is downloaded again
    http: HttpConfig = field(default_factory=HttpConfig)

    def dumps(self) -> list[str]:
        """The dumps' file names, places first."""
        return [f"{self.dump}.zip"] + ([f"{NAMES_DUMP}.zip"] if self.alternate_names else [])

    def kinds(self) -> tuple[str, ...]:
        """The update files of a day."""
        return updates.PLACE_KINDS + (updates.NAME_KINDS if self.alternate_names else ())


class GeoNamesSource:
    """The `geonames` source (see the module's docstring)."""

    name = "geonames"
    area = "geocoding"
    base_url_env = "WEATHERAPI_GEONAMES_BASE_URL"
    default_base_url = "https://download.geonames.org/export/dump"
    keep_runs = 1  # prune keeps every day the held dumps need, whatever the number

    def __init__(self, config: GeoNamesConfig | None = None, clock=None):
        self.config = config
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))

    def folder(self, datasets: Path) -> Path:
        return datasets / "geonames"

    def settings(self) -> GeoNamesConfig:
        """The configuration given, else the defaults with the environment's choices."""
        if self.config is not None:
            return self.config
        dump = os.environ.get(DUMP_ENV, "").strip() or "allCountries"
        if dump not in PLACE_DUMPS:
            raise FetchError(f"{DUMP_ENV}={dump!r}: expected one of {', '.join(PLACE_DUMPS)}")
        days = os.environ.get(MAX_DAYS_ENV, "").strip() or "30"
        if not days.isdigit():
            raise FetchError(f"{MAX_DAYS_ENV}={days!r}: expected a number of days")
        names = os.environ.get(NAMES_ENV, "1").strip().lower() not in ("0", "no", "false")
        return GeoNamesConfig(dump=dump, alternate_names=names, max_update_days=int(days))

    def held_runs(self, datasets: Path) -> list[str]:
        """The days whose updates are held, oldest first."""
        return [day.isoformat() for day in updates.held_days(self.folder(datasets))]

    def prune(self, datasets: Path, keep: int) -> list[str]:
        """Delete the days no held dump needs (`keep` does not apply: every later day is part
        of the one state the build reads)."""
        return _drop_old_days(self.folder(datasets), self.settings())

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """Bring the dumps up to date in options.datasets (see the module's docstring)."""
        if options.run != LATEST:
            raise FetchError("GeoNames has no runs: fetch it without --run")
        started = time.monotonic()
        config = self.settings()
        report = FetchReport(self.name)
        folder = self.folder(options.datasets)
        with contextlib.ExitStack() as stack:
            if not options.dry_run:
                stack.enter_context(exclusive(folder / ".lock", "GeoNames"))
            async with Downloader(config.http) as http:
                run = _Fetch(
                    http, base_url(self, options), folder, config, self.clock().date(), report
                )
                await (run.plan() if options.dry_run else run.run())
                report.bytes, report.bytes_whole = http.totals.bytes, http.totals.bytes_whole
        report.seconds = time.monotonic() - started
        return report


class _Fetch:
    """One fetch: the downloader, where from and to, and the report it fills."""

    def __init__(
        self,
        http: Downloader,
        base: str,
        folder: Path,
        config: GeoNamesConfig,
        today: dt.date,
        report: FetchReport,
    ):
        self.http, self.base, self.folder, self.config = http, base, folder, config
        self.yesterday, self.report = today - ONE_DAY, report
        self.oldest = today - dt.timedelta(days=config.max_update_days)

    async def run(self) -> None:
        """Code files, the dumps where needed, then the days since them."""
        _clear_staging(self.folder)
        await self.code_files()
        stale = [name for name in self.config.dumps() if self.stale(name)]
        if stale:
            await self.dumps(stale)
        gap = await self.days()
        if gap is not None:
            self.report.notes.append(
                f"{gap}: GeoNames no longer serves that day's updates; downloading the dumps again"
            )
            if await self.dumps(self.config.dumps()):
                gap = await self.days()
            if gap is not None:
                self.report.notes.append(
                    f"the dumps are unchanged and {gap}'s updates are gone:"
                    f" changes from {gap} on wait for newer dumps"
                )
        _drop_old_days(self.folder, self.config)
        held = updates.held_days(self.folder)
        self.report.run = held[-1].isoformat() if held else None
        self._other_dump_note()

    async def code_files(self) -> None:
        """The small files, each revalidated (304 when unchanged)."""
        done = await asyncio.gather(
            *(
                self.http.download(
                    self.url(name), self.folder / name, verify=check, conditional=True
                )
                for name, check in CODE_FILES.items()
            )
        )
        self._count(sum(t.changed for t in done))

    def stale(self, name: str) -> bool:
        """Whether a dump must be (re)downloaded: not held, or too old to keep updating."""
        path = self.folder / name
        return not path.is_file() or updates.written_on(path) < self.oldest

    async def dumps(self, names: list[str]) -> bool:
        """Download the dumps conditionally; True when any of them changed."""
        done = await asyncio.gather(
            *(
                self.http.download(
                    self.url(name),
                    self.folder / name,
                    conditional=True,
                    verify=verify.zip_archive(Path(name).stem + ".txt"),
                )
                for name in names
            )
        )
        changed = sum(t.changed for t in done)
        self._count(changed)
        return changed > 0

    async def days(self) -> dt.date | None:
        """Each day's files from the first not held to yesterday; the first day GeoNames does
        not serve before yesterday (a gap the daily files cannot bridge), else None."""
        day = self.next_day()
        while day <= self.yesterday:
            if not await self.day(day):
                if day < self.yesterday:
                    return day
                self.report.notes.append(f"{day}: updates not published yet")
            day += ONE_DAY
        return None

    def next_day(self) -> dt.date:
        """The day after the newest held one that applies, else the dumps' first day."""
        first = min(updates.first_day(self.folder / name) for name in self.config.dumps())
        held = [day for day in updates.held_days(self.folder) if day >= first]
        return held[-1] + ONE_DAY if held else first

    async def day(self, day: dt.date) -> bool:
        """Fetch one day's files into its folder, whole; False when one is not served."""
        staging = self.folder / updates.UPDATES / f".{day.isoformat()}.part"
        names = [updates.file_name(kind, day) for kind in self.config.kinds()]
        checks = [verify.tsv(updates.COLUMNS[kind]) for kind in self.config.kinds()]
        done = await asyncio.gather(
            *(
                self.http.download(self.url(name), staging / name, verify=check)
                for name, check in zip(names, checks)
            ),
            return_exceptions=True,
        )
        failures = [r for r in done if isinstance(r, BaseException)]
        if failures:
            shutil.rmtree(staging, ignore_errors=True)
            if all(isinstance(r, DownloadError) and r.status in (404, 410) for r in failures):
                return False
            raise next(
                r for r in failures if not (isinstance(r, DownloadError) and r.status in (404, 410))
            )
        final = updates.day_folder(self.folder, day)
        os.replace(staging, final)  # the day's files appear together
        _fsync_dir(final.parent)
        self._count(len(names))
        return True

    async def plan(self) -> None:
        """--dry-run: what a fetch would download (dumps with their size), writing nothing."""
        for name in self.config.dumps():
            if self.stale(name):
                size = await self.http.size(self.url(name))
                self.report.planned.append(
                    f"{public_url(self.url(name))} -> {self.folder / name}: {size or 0:,} bytes"
                )
                self.report.files += 1
        if all((self.folder / name).is_file() for name in self.config.dumps()):
            day = self.next_day()
            while day <= self.yesterday:
                self.report.planned.append(f"{day}: {', '.join(self.config.kinds())}")
                day += ONE_DAY
        self.report.planned += [f"{public_url(self.url(n))}: revalidated" for n in CODE_FILES]

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"

    def _count(self, files: int) -> None:
        if files:
            self.report.files += files
            self.report.changed = True

    def _other_dump_note(self) -> None:
        """Say so when the build would read another places dump than the one fetched."""
        wanted = self.folder / f"{self.config.dump}.zip"
        read = places_file(self.folder)
        if read != wanted:
            self.report.notes.append(
                f"the build reads {read.name}, not {wanted.name}: delete "
                f"{read} to build from {wanted.name}"
            )


def _drop_old_days(folder: Path, config: GeoNamesConfig) -> list[str]:
    """Delete the days before every held dump's first day; return them."""
    held = [folder / name for name in config.dumps() if (folder / name).is_file()]
    if not held:
        return []
    first = min(updates.first_day(path) for path in held)
    dropped = []
    for day in updates.held_days(folder):
        if day < first:
            path = updates.day_folder(folder, day)
            # Renamed to a dot-name first: gone for builds at once, removed at leisure after.
            hidden = path.with_name(f".{path.name}.deleting")
            os.replace(path, hidden)
            shutil.rmtree(hidden, ignore_errors=True)
            dropped.append(day.isoformat())
    return dropped


def _clear_staging(folder: Path) -> None:
    """Remove what an interrupted fetch left under dot-names in updates/."""
    root = folder / updates.UPDATES
    if root.is_dir():
        for path in root.glob(".*"):
            shutil.rmtree(path, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


SOURCE = GeoNamesSource()
