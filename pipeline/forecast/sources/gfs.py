"""GFS 0.25° from NOAA: `python -m pipeline fetch gfs [--run latest|YYYYMMDDHH] [--dry-run]`.

NOAA's layout, on its open-data bucket and on NOMADS alike:

    {base}/gfs.YYYYMMDD/HH/atmos/gfs.tHHz.pgrb2.0p25.fFFF      (one forecast hour, ~500 MB)
    {base}/gfs.YYYYMMDD/HH/atmos/gfs.tHHz.pgrb2.0p25.fFFF.idx  (its wgrib2 inventory)

Of each file only the messages in gfs_selection.SELECTION are fetched, by range requests
located with the .idx, into datasets/forecast/gfs/YYYYMMDDHH/gfs.tHHz.pgrb2.0p25.fFFF (a valid
GRIB2 file of those messages); run.json is written last (pipeline/forecast/sources/runs.py). `latest` is the newest
cycle whose every needed hour is published (its .idx exists): a cycle still being written is
skipped, not half used. The bucket is asked first; NOMADS (paced: it blocks clients above
about 100 requests a minute) only for a cycle the bucket does not have complete yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipeline.fetch import verify
from pipeline.fetch.http import Downloader, HttpConfig, host_of, public_url
from pipeline.fetch.inventory import Entry, InventoryError, parse
from pipeline.fetch.lock import exclusive
from pipeline.fetch.pacing import RateLimit
from pipeline.fetch.ranges import merge
from pipeline.fetch.retention import prune_runs
from pipeline.fetch.source import LATEST, FetchError, FetchOptions, FetchReport, base_url
from pipeline.forecast.sources import runs
from pipeline.forecast.sources.gfs_selection import SELECTION, Wanted, select

BUCKET = "https://noaa-gfs-bdp-pds.s3.amazonaws.com"
NOMADS = "https://nomads.ncep.noaa.gov/pub/data/nccf/com/gfs/prod"
FALLBACK_ENV = "WEATHERAPI_GFS_FALLBACK_URL"  # empty: no fallback
HORIZON_ENV = "WEATHERAPI_GFS_HORIZON_H"
HISTORY_ENV = "WEATHERAPI_GFS_HISTORY_CYCLES"
CYCLE_H = 6
LAST_HOUR = 384  # GFS runs to 16 days


@dataclass(frozen=True)
class GfsConfig:
    """What to fetch and how; the served horizon may come from WEATHERAPI_GFS_HORIZON_H."""

    horizon_h: int = 240  # the last forecast hour fetched
    hourly_until_h: int = 120  # NOAA: hourly files to 120 h, then 3-hourly
    step_h: int = 3
    lookback_cycles: int = 4  # `latest` tries the newest 4 cycles (a day)
    # The first CYCLE_H hours of the cycles before the newest: the hours before its run time
    # (this morning, in zones east of UTC) come from them (the reader takes an older run only
    # that far past a newer one's start, so the rest of an older run is never read).
    history_cycles: int = 4
    fallback_url: str | None = None  # None: WEATHERAPI_GFS_FALLBACK_URL, else NOMADS
    fallback_limit: RateLimit = RateLimit(per_minute=90, burst=10)  # <= 100 in any minute
    http: HttpConfig = field(default_factory=HttpConfig)
    selection: tuple[Wanted, ...] = SELECTION

    def hours(self) -> list[int]:
        """The forecast hours of a run: hourly, then every step_h, to the horizon."""
        if not 0 <= self.horizon_h <= LAST_HOUR:
            raise FetchError(f"GFS horizon {self.horizon_h} h is outside 0-{LAST_HOUR} h")
        hourly = list(range(0, min(self.horizon_h, self.hourly_until_h) + 1))
        later = range(self.hourly_until_h + self.step_h, self.horizon_h + 1, self.step_h)
        return hourly + list(later)


def file_name(cycle: dt.datetime, hour: int) -> str:
    return f"gfs.t{cycle:%H}z.pgrb2.0p25.f{hour:03d}"


def file_url(base: str, cycle: dt.datetime, hour: int) -> str:
    return f"{base}/gfs.{cycle:%Y%m%d}/{cycle:%H}/atmos/{file_name(cycle, hour)}"


def run_name(cycle: dt.datetime) -> str:
    return f"{cycle:%Y%m%d%H}"


def parse_run(text: str) -> dt.datetime:
    """A cycle from YYYYMMDDHH (HH one of 00, 06, 12, 18)."""
    try:
        cycle = dt.datetime.strptime(text, "%Y%m%d%H").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise FetchError(f"--run {text!r}: expected 'latest' or a cycle YYYYMMDDHH") from None
    if cycle.hour % CYCLE_H:
        raise FetchError(f"--run {text!r}: GFS runs at 00, 06, 12 and 18 UTC")
    return cycle


def recent_cycles(now: dt.datetime, count: int) -> list[dt.datetime]:
    """The `count` newest cycles that have started by `now`, newest first."""
    newest = now.replace(hour=now.hour - now.hour % CYCLE_H, minute=0, second=0, microsecond=0)
    return [newest - dt.timedelta(hours=CYCLE_H * k) for k in range(count)]


@dataclass
class Planned:
    """One file of the run: where it comes from, where it goes, which messages."""

    hour: int
    url: str
    dest: Path
    entries: list[Entry]

    @property
    def ranges(self) -> list[tuple[int, int | None]]:
        return [(e.start, e.stop) for e in self.entries]

    @property
    def size(self) -> int | None:
        """The subset's size (None when it runs to the remote file's unknown end)."""
        sizes = [e.size for e in self.entries]
        return None if None in sizes else sum(sizes)


class GfsSource:
    """The `gfs` source (see the module's docstring)."""

    name = "gfs"
    area = "forecast"
    keep_runs = 1 + GfsConfig.history_cycles  # the newest, and the cycles before: history
    base_url_env = "WEATHERAPI_GFS_BASE_URL"
    default_base_url = BUCKET

    def __init__(self, config: GfsConfig | None = None, clock=None):
        self.config = config
        self.clock = clock or (lambda: dt.datetime.now(dt.timezone.utc))

    def folder(self, datasets: Path) -> Path:
        return datasets / "forecast" / "gfs"

    def enabled(self) -> bool:
        """The forecast's model unless WEATHERAPI_FORECAST_MODEL names another."""
        return os.environ.get(runs.MODEL_ENV, "").strip().lower() in ("", self.name)

    def held_runs(self, datasets: Path) -> list[str]:
        return [held.run for held in runs.held_runs(datasets, self.name)]

    def prune(self, datasets: Path, keep: int) -> list[str]:
        """Keep the newest `keep` runs; of all but the newest, only the first hours (the
        reader reads no more of them): a day of cycles in about a run and a quarter of disk."""
        deleted = prune_runs(datasets, self.name, keep)
        for held in runs.held_runs(datasets, self.name)[:-1]:
            trim_run(held, CYCLE_H)
        return deleted

    def settings(self) -> GfsConfig:
        """The configuration: the one given, else defaults with the environment's horizon."""
        if self.config is not None:
            return self.config
        chosen = {}
        for env, key, example in (
            (HORIZON_ENV, "horizon_h", "240"),
            (HISTORY_ENV, "history_cycles", "4"),
        ):
            value = os.environ.get(env, "").strip()
            if value and not value.isdigit():
                raise FetchError(f"{env}={value!r}: expected a whole number, e.g. {example}")
            if value:
                chosen[key] = int(value)
        return GfsConfig(**chosen)

    def bases(self, options: FetchOptions, config: GfsConfig) -> list[str]:
        """The primary base URL, then the fallback (when set and different)."""
        primary = base_url(self, options)
        fallback = config.fallback_url
        if fallback is None:
            fallback = os.environ.get(FALLBACK_ENV, NOMADS)
        fallback = fallback.strip().rstrip("/")
        return [primary] + ([fallback] if fallback and fallback != primary else [])

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """Bring the requested run into options.datasets (see the module's docstring)."""
        started = time.monotonic()
        config = self.settings()
        hours = config.hours()
        bases = self.bases(options, config)
        http_config = config.http
        if len(bases) > 1:
            limits = {**http_config.rate_limits, host_of(bases[1]): config.fallback_limit}
            http_config = replace(http_config, rate_limits=limits)
        report = FetchReport(self.name)
        folder = self.folder(options.datasets)
        with contextlib.ExitStack() as stack:
            if not options.dry_run:
                stack.enter_context(exclusive(folder / ".lock", "GFS"))
            async with Downloader(http_config) as http:
                await self._fetch(http, options, config, hours, bases, report)
                report.bytes = report.bytes or http.totals.bytes
                report.bytes_whole = report.bytes_whole or http.totals.bytes_whole
        report.seconds = time.monotonic() - started
        return report

    async def _fetch(
        self,
        http: Downloader,
        options: FetchOptions,
        config: GfsConfig,
        hours: list[int],
        bases: list[str],
        report: FetchReport,
    ) -> None:
        """Choose the run, then plan, list or fetch its files."""
        folder = self.folder(options.datasets)
        for cycle in self._cycles(options, config):
            run_dir = folder / run_name(cycle)
            base = await self._published(http, bases, cycle, hours[-1])
            if base is None:
                report.notes.append(
                    f"{run_name(cycle)}: incomplete (f{hours[-1]:03d} not published yet): skipped"
                )
                continue
            report.run = run_name(cycle)
            if _complete(run_dir, [file_name(cycle, h) for h in hours]):
                report.notes.append(f"{run_name(cycle)}: held already")
                await self._history(http, options, config, bases, cycle, report)
                return
            plan = await self._plan(http, base, cycle, hours, run_dir, config, report)
            if plan is None:
                report.run = None
                continue
            if base != bases[0]:
                report.notes.append(
                    f"{run_name(cycle)}: not complete on "
                    f"{public_url(bases[0])} yet: fetched from "
                    f"{public_url(base)}"
                )
            if options.dry_run:
                await self._list(http, plan, report)
            else:
                await self._get(http, plan, cycle, run_dir, report)
            await self._history(http, options, config, bases, cycle, report)
            return
        raise FetchError(
            self._nothing_complete(options, config, bases), retry_later=self._may_appear(options)
        )

    async def _history(
        self,
        http: Downloader,
        options: FetchOptions,
        config: GfsConfig,
        bases: list[str],
        newest: dt.datetime,
        report: FetchReport,
    ) -> None:
        """The first hours of the cycles before the newest that are not held yet (after a
        fresh start: later, each of them was once the newest). Best effort: a cycle that is
        gone or fails is a note, not a failed fetch."""
        if options.run != LATEST:
            return
        hours = list(range(CYCLE_H + 1))
        for k in range(1, config.history_cycles + 1):
            cycle = newest - dt.timedelta(hours=CYCLE_H * k)
            run_dir = self.folder(options.datasets) / run_name(cycle)
            if _complete(run_dir):
                continue
            base = await self._published(http, bases, cycle, hours[-1])
            plan = base and await self._plan(http, base, cycle, hours, run_dir, config, report)
            if not plan:
                report.notes.append(f"{run_name(cycle)}: its first hours are not available")
                continue
            if options.dry_run:
                await self._list(http, plan, report)
                continue
            part = FetchReport(self.name)
            try:
                await self._get(http, plan, cycle, run_dir, part)
            except FetchError as exc:
                report.notes.append(f"{run_name(cycle)}: first hours not fetched: {exc}")
                continue
            report.files += part.files
            report.changed = True
            report.notes.append(f"{run_name(cycle)}: first {CYCLE_H} hours fetched (history)")

    def _cycles(self, options: FetchOptions, config: GfsConfig) -> list[dt.datetime]:
        if options.run == LATEST:
            return recent_cycles(self.clock(), config.lookback_cycles)
        return [parse_run(options.run)]

    def _may_appear(self, options: FetchOptions) -> bool:
        """Whether waiting can help: 'latest', or a run of the last 12 hours."""
        if options.run == LATEST:
            return True
        return self.clock() - parse_run(options.run) < dt.timedelta(hours=12)

    def _nothing_complete(self, options: FetchOptions, config: GfsConfig, bases: list[str]) -> str:
        where = " or ".join(public_url(b) for b in bases)
        if options.run == LATEST:
            return (
                f"no complete GFS run among the newest {config.lookback_cycles} cycles on {where}"
            )
        return f"GFS run {options.run} is not complete on {where}"

    async def _published(
        self, http: Downloader, bases: list[str], cycle: dt.datetime, last_hour: int
    ) -> str | None:
        """The first base with the cycle's last needed hour published (NOAA writes hours in
        order and each .idx after its file), else None."""
        for base in bases:
            if await http.exists(file_url(base, cycle, last_hour) + ".idx"):
                return base
        return None

    async def _plan(
        self,
        http: Downloader,
        base: str,
        cycle: dt.datetime,
        hours: list[int],
        run_dir: Path,
        config: GfsConfig,
        report: FetchReport,
    ) -> list[Planned] | None:
        """Every file's messages from its .idx; None when an .idx is missing (incomplete)."""
        urls = [file_url(base, cycle, hour) for hour in hours]
        texts = await asyncio.gather(*(http.get_bytes(u + ".idx", missing_ok=True) for u in urls))
        absent = [h for h, text in zip(hours, texts) if text is None]
        if absent:
            report.notes.append(
                f"{run_name(cycle)}: incomplete (no .idx for {_hour_list(absent)}): skipped"
            )
            return None
        plan, missing = [], {}
        for hour, url, text in zip(hours, urls, texts):
            try:
                entries, lacking = select(
                    parse(text.decode("utf-8", "replace")), hour, config.selection
                )
            except InventoryError as exc:
                raise FetchError(f"{public_url(url)}.idx: {exc}", retry_later=True) from None
            if not entries:
                raise FetchError(f"{public_url(url)}.idx lists none of the wanted messages")
            for wanted in lacking:
                missing.setdefault(wanted.label(), []).append(hour)
            plan.append(Planned(hour, url, run_dir / file_name(cycle, hour), entries))
        for label, lacking_hours in missing.items():
            report.notes.append(f"{run_name(cycle)}: no {label} in {_hour_list(lacking_hours)}")
        return plan

    async def _list(self, http: Downloader, plan: list[Planned], report: FetchReport) -> None:
        """--dry-run: one line per file that would be fetched (whole sizes from HEAD);
        nothing is written."""
        for item in plan:
            if await asyncio.to_thread(_held, item):
                continue
            whole = await http.size(item.url)
            spans = merge(item.ranges, http.config.merge_gap)
            moved = sum((whole if s.stop is None else s.stop) - s.start for s in spans)
            report.planned.append(
                f"{public_url(item.url)} -> {item.dest}: "
                f"{len(item.entries)} messages in {len(spans)} requests, "
                f"{moved:,} of {whole:,} bytes"
            )
            report.files += 1
            report.bytes += moved
            report.bytes_whole += whole

    async def _get(
        self,
        http: Downloader,
        plan: list[Planned],
        cycle: dt.datetime,
        run_dir: Path,
        report: FetchReport,
    ) -> None:
        """Fetch the files not held yet, then declare the run complete."""
        held = await asyncio.gather(*(asyncio.to_thread(_held, item) for item in plan))
        todo = [item for item, done in zip(plan, held) if not done]
        # A file that fails does not stop the others: what lands is kept for the next fetch.
        results = await asyncio.gather(
            *(
                http.download(
                    item.url, item.dest, ranges=item.ranges, verify=verify.grib(len(item.entries))
                )
                for item in todo
            ),
            return_exceptions=True,
        )
        report.files = sum(getattr(r, "changed", False) for r in results)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]
        runs.write_marker(run_dir, self.name, run_name(cycle), [item.dest.name for item in plan])
        report.changed = True


def trim_run(held: runs.HeldRun, last_hour: int) -> None:
    """Cut a held run to its hours up to last_hour: the marker first (what it lists is the
    run), then the files it no longer lists."""
    names = [f.name for f in held.files if int(f.name.rsplit(".f", 1)[1][:3]) <= last_hour]
    if len(names) == len(held.files):
        return
    runs.write_marker(held.folder, held.source, held.run, names)
    for gone in {f.name for f in held.files} - set(names):
        (held.folder / gone).unlink(missing_ok=True)


def _complete(run_dir: Path, names: list[str] | None = None) -> bool:
    """Whether the run is held complete (a marker that does not match its files: not), with
    every file of `names` when given (a run held as history has only its first hours)."""
    try:
        held = runs.read_marker(run_dir)
    except runs.RunError:
        return False
    return held is not None and (names is None or set(names) <= {f.name for f in held.files})


def _held(item: Planned) -> bool:
    """Whether the file is in place from an earlier, interrupted fetch of the run (its
    size, and for a subset of unknown size its messages, check)."""
    try:
        size = item.dest.stat().st_size
    except FileNotFoundError:
        return False
    if item.size is not None:
        return size == item.size
    try:
        verify.grib(len(item.entries))(item.dest)
    except verify.VerifyError:
        return False
    return True


def _hour_list(hours: list[int]) -> str:
    shown = ", ".join(f"f{h:03d}" for h in hours[:5])
    return shown + (f" and {len(hours) - 5} more" if len(hours) > 5 else "")


SOURCE = GfsSource()
