"""ECMWF open data, IFS 0.25°: `python -m pipeline fetch ecmwf [--run latest|YYYYMMDDHH]`.

ECMWF's layout, on data.ecmwf.int and its cloud mirrors alike (WEATHERAPI_ECMWF_BASE_URL or
--base-url names another base):

    {base}/YYYYMMDD/HHz/ifs/0p25/{stream}/YYYYMMDDHH0000-{STEP}h-{stream}-fc.grib2
    {base}/YYYYMMDD/HHz/ifs/0p25/{stream}/YYYYMMDDHH0000-{STEP}h-{stream}-fc.index

stream `oper` for the 00 and 12 UTC runs (steps 0-144 h by 3, then by 6 to 240 h), `scda` for
06 and 18 UTC (0-90 h by 3). The .index has one JSON object per GRIB message (param, levtype,
step, _offset, _length, ...). Of each step only the messages the forecast reads are fetched
(PARAMS; the surface geopotential z, for the orography, at step 0 when published) into
datasets/forecast/ecmwf/YYYYMMDDHH/ under upstream's file name, a valid GRIB2 file of those
messages; run.json is written last (pipeline/forecast/sources/runs.py). `latest` is the newest
run whose every step's .index is published (runs stay online about three days); an incomplete
one is passed over for the one before.

Why the .index files and the shared downloader (pipeline/fetch/http.py) rather than the
ecmwf-opendata package: that package downloads through multiurl, which asks for several byte
ranges in one request, and the cloud mirrors refuse multi-range requests; the shared
downloader sends one range per request and brings what every source shares: retries with
backoff and Retry-After, resume, rate limits, a GRIB2 check before a file is renamed into
place, progress. It also keeps one HTTP stack (aiohttp) in the fetch command.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from pipeline.fetch import lock, retention, verify
from pipeline.fetch.http import Downloader, HttpConfig, public_url
from pipeline.fetch.ranges import merge
from pipeline.fetch.source import LATEST, FetchError, FetchOptions, FetchReport, base_url
from pipeline.forecast.sources import runs

log = logging.getLogger("pipeline.fetch.ecmwf")
NAME = "ecmwf"
HOUR_S, CYCLE_H = 3600, 6
HORIZON_ENV = "WEATHERAPI_ECMWF_HORIZON_H"
HORIZON_H = 240  # the served horizon
LOOKBACK_CYCLES = 12  # three days of runs: what stays online
# The first steps of the cycles before the newest give the hours before its run time (this
# morning, east of UTC); the reader reads an older run only that far past a newer one's start.
HISTORY_CYCLES, HISTORY_STEPS = 4, (0, 3, 6)
# What the forecast reads: 2 m temperature and dewpoint, 10 m wind, mean sea-level pressure,
# total cloud cover, total precipitation, precipitation type, 10 m gusts (the maximum since
# the previous step: none at step 0) and CAPE (open data publishes the most unstable CAPE,
# mucape; cape is taken where a mirror has that instead). ecCodes names the gust of the last
# 3 or 6 hours 10fg3 or 10fg6 (its paramId follows the period), and an index may too.
PARAMS = ("2t", "2d", "10u", "10v", "msl", "tcc", "tp", "ptype", "10fg", "mucape")
ALIASES = {"mucape": ("mucape", "cape"), "10fg": ("10fg", "10fg3", "10fg6")}
OPTIONAL_AT_0 = {"10fg"}
STATIC = "z"  # surface geopotential (orography), step 0, if published


def stream(run_s: int) -> str:
    """oper for the 00 and 12 UTC runs, scda for 06 and 18 UTC."""
    return "oper" if run_s // HOUR_S % 12 == 0 else "scda"


def steps(run_s: int, horizon_h: int = HORIZON_H) -> list[int]:
    """The steps of a run, to the horizon: 0-144 by 3 then 150-240 by 6 (scda: 0-90 by 3)."""
    if stream(run_s) == "oper":
        every = list(range(0, 145, 3)) + list(range(150, 241, 6))
    else:
        every = list(range(0, 91, 3))
    return [s for s in every if s <= horizon_h]


def file_name(run_s: int, step: int) -> str:
    """20261128120000-3h-oper-fc.grib2."""
    return f"{time.strftime('%Y%m%d%H%M%S', time.gmtime(run_s))}-{step}h-{stream(run_s)}-fc.grib2"


def file_url(base: str, run_s: int, step: int) -> str:
    """Where upstream has a step's GRIB2 file (its .index beside it)."""
    day, hour = time.strftime("%Y%m%d", time.gmtime(run_s)), time.gmtime(run_s).tm_hour
    return f"{base}/{day}/{hour:02d}z/ifs/0p25/{stream(run_s)}/{file_name(run_s, step)}"


def index_url(url: str) -> str:
    return url.removesuffix(".grib2") + ".index"


@dataclass(frozen=True)
class Step:
    """One step's file: its URL, the messages wanted (byte ranges) and the whole size."""

    step: int
    url: str
    ranges: tuple[tuple[int, int], ...]
    params: tuple[str, ...]

    @property
    def size(self) -> int:
        return sum(stop - start for start, stop in self.ranges)


def select(
    step: int, index_text: str, where: str
) -> tuple[tuple[tuple[int, int], ...], tuple[str, ...], list[str]]:
    """(byte ranges, params, params missing) of the wanted messages of one step's .index."""
    found: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(index_text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            param, levtype = entry["param"], entry.get("levtype", "sfc")
            offset, length = int(entry["_offset"]), int(entry["_length"])
        except (ValueError, KeyError, TypeError):
            raise FetchError(f"{where}: line {number} is not an index entry") from None
        if levtype == "sfc" and param not in found:
            found[param] = (offset, offset + length)
    chosen, missing = {}, []
    for param in PARAMS:
        name = next((n for n in ALIASES.get(param, (param,)) if n in found), None)
        if name:
            chosen[name] = found[name]
        elif not (step == 0 and param in OPTIONAL_AT_0):
            missing.append(param)
    if step == 0 and STATIC in found:
        chosen[STATIC] = found[STATIC]
    ordered = sorted(chosen.items(), key=lambda item: item[1])
    return tuple(r for _, r in ordered), tuple(p for p, _ in ordered), missing


class Ecmwf:
    """ECMWF open data as a fetchable source (pipeline.fetch.source.Source)."""

    name = NAME
    area = "forecast"
    keep_runs = 1 + HISTORY_CYCLES  # the newest, the long run before a short one, history
    base_url_env = "WEATHERAPI_ECMWF_BASE_URL"
    default_base_url = "https://data.ecmwf.int/forecasts"

    def __init__(self, http: HttpConfig | None = None, clock=time.time):
        self.http, self.clock = http, clock

    def enabled(self) -> bool:
        """Only when WEATHERAPI_FORECAST_MODEL=ecmwf (the build reads one model)."""
        return os.environ.get(runs.MODEL_ENV, "").strip().lower() == NAME

    def horizon(self) -> int:
        value = os.environ.get(HORIZON_ENV, "").strip()
        return int(value) if value else HORIZON_H

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """Bring the newest complete run (or --run's) into datasets/forecast/ecmwf/."""
        started = time.monotonic()
        report = FetchReport(source=self.name)
        base = base_url(self, options)
        root = options.datasets / "forecast" / NAME
        # A dry run writes nothing, so it neither needs the lock nor makes its folder.
        with nullcontext() if options.dry_run else lock.exclusive(root / ".lock", NAME):
            await self._fetch(options, base, report)
        report.seconds = time.monotonic() - started
        return report

    async def _fetch(self, options: FetchOptions, base: str, report: FetchReport) -> None:
        async with Downloader(self.http or HttpConfig()) as http:
            run_s, plan = await self._choose(http, base, options, report)
            folder = runs.run_folder(options.datasets, NAME, runs.run_name(run_s))
            report.run = runs.run_name(run_s)
            if not plan:
                report.notes.append(f"run {report.run} is held already")
            elif options.dry_run:
                self._plan_lines(report, plan, folder)
            else:
                await self._download(http, plan, run_s, folder, report)
            if options.run == LATEST:
                await self._companions(http, base, options, run_s, report)
            report.bytes, report.bytes_whole = http.totals.bytes, http.totals.bytes_whole

    async def _companions(
        self, http: Downloader, base: str, options: FetchOptions, newest: int, report: FetchReport
    ) -> None:
        """The runs the newest needs beside it: when it is a short 06/18 UTC run, the 00/12
        UTC run before it whole (the days after its 90 h); and the first steps of the cycles
        before it. Best effort: what is gone or fails is a note, not a failed fetch."""
        for k in range(1, HISTORY_CYCLES + 1):
            run_s = newest - k * CYCLE_H * HOUR_S
            whole = k <= 2 and stream(newest) == "scda" and stream(run_s) == "oper"
            wanted = None if whole else list(HISTORY_STEPS)
            folder = runs.run_folder(options.datasets, NAME, runs.run_name(run_s))
            if _holds(folder, run_s, wanted or steps(run_s, self.horizon())):
                continue
            plan = await self._plan(http, base, run_s, report, wanted)
            if plan is None:
                continue
            if options.dry_run:
                self._plan_lines(report, plan, folder, run_s)
                continue
            part = FetchReport(source=self.name)
            try:
                await self._download(http, plan, run_s, folder, part)
            except FetchError as exc:
                report.notes.append(f"{runs.run_name(run_s)}: not fetched: {exc}")
                continue
            report.files += part.files
            report.changed = True
            report.notes.append(
                f"{runs.run_name(run_s)}: "
                + (
                    "whole (the newest is a short run)"
                    if whole
                    else "first steps fetched (history)"
                )
            )

    def _candidates(self, options: FetchOptions) -> list[int]:
        if options.run != LATEST:
            try:
                run_s = runs.run_seconds(options.run)
            except ValueError:
                raise FetchError(f"--run {options.run}: expected 'latest' or YYYYMMDDHH") from None
            if run_s // HOUR_S % CYCLE_H:
                raise FetchError(f"--run {options.run}: ECMWF runs at 00, 06, 12 and 18 UTC")
            return [run_s]
        newest = int(self.clock()) // (CYCLE_H * HOUR_S) * CYCLE_H * HOUR_S
        return [newest - k * CYCLE_H * HOUR_S for k in range(LOOKBACK_CYCLES)]

    async def _choose(
        self, http: Downloader, base: str, options: FetchOptions, report: FetchReport
    ) -> tuple[int, list[Step]]:
        """The newest candidate run whose every step's .index is published, and its plan."""
        candidates = self._candidates(options)
        for run_s in candidates:
            folder = runs.run_folder(options.datasets, NAME, runs.run_name(run_s))
            if _holds(folder, run_s, steps(run_s, self.horizon())):
                return run_s, []  # held: nothing newer is complete upstream
            plan = await self._plan(http, base, run_s, report)
            if plan is not None:
                return run_s, plan
        newest = runs.run_name(candidates[0])
        recent = self.clock() - candidates[0] < 2 * 86400
        raise FetchError(
            f"no complete ECMWF run from {newest} back "
            f"{len(candidates) - 1} cycle(s) at {public_url(base)}"
            + ("; try again later" if recent else ""),
            retry_later=recent,
        )

    async def _plan(
        self,
        http: Downloader,
        base: str,
        run_s: int,
        report: FetchReport,
        only: list[int] | None = None,
    ) -> list[Step] | None:
        """Every step's wanted messages (of `only` steps, else all the horizon needs), or
        None when some .index is not published yet."""
        wanted = only or steps(run_s, self.horizon())
        # The last step is published last: when it is missing the others are not asked for.
        last = await http.get_bytes(index_url(file_url(base, run_s, wanted[-1])), missing_ok=True)
        if last is None:
            report.notes.append(
                f"{runs.run_name(run_s)}: incomplete (no {wanted[-1]} h index): passed over"
            )
            return None
        texts = await asyncio.gather(
            *(
                http.get_bytes(index_url(file_url(base, run_s, s)), missing_ok=True)
                for s in wanted[:-1]
            )
        )
        texts.append(last)
        gaps = [s for s, text in zip(wanted, texts) if text is None]
        if gaps:
            report.notes.append(
                f"{runs.run_name(run_s)}: incomplete (no index for step(s) "
                f"{', '.join(map(str, gaps))} h): passed over"
            )
            return None
        plan, missing = [], set()
        for step, text in zip(wanted, texts):
            url = file_url(base, run_s, step)
            ranges, params, lacking = select(
                step, text.decode("utf-8", "replace"), public_url(index_url(url))
            )
            missing |= {f"{p} ({step} h)" for p in lacking}
            if not ranges:
                raise FetchError(f"{public_url(index_url(url))}: none of {', '.join(PARAMS)}")
            plan.append(Step(step, url, ranges, params))
        if missing:
            report.notes.append(
                f"not published: {', '.join(sorted(missing)[:8])}"
                + (" ..." if len(missing) > 8 else "")
            )
        return plan

    async def _download(
        self, http: Downloader, plan: list[Step], run_s: int, folder: Path, report: FetchReport
    ) -> None:
        """Each step's messages into the run folder (kept from an interrupted fetch when
        whole), then the marker."""
        names = [file_name(run_s, s.step) for s in plan]
        todo = [
            (s, folder / n)
            for s, n in zip(plan, names)
            if not ((folder / n).is_file() and (folder / n).stat().st_size == s.size)
        ]
        await asyncio.gather(
            *(
                http.download(
                    s.url, dest, ranges=list(s.ranges), verify=verify.grib(messages=len(s.ranges))
                )
                for s, dest in todo
            )
        )
        runs.write_marker(folder, NAME, runs.run_name(run_s), names)
        report.files, report.changed = len(todo), True
        log.info("ecmwf %s: %d step file(s) into %s", runs.run_name(run_s), len(todo), folder)

    def _plan_lines(
        self, report: FetchReport, plan: list[Step], folder: Path, run_s: int | None = None
    ) -> None:
        """--dry-run: per file, its range requests (one range each); nothing is written."""
        run_s = runs.run_seconds(report.run) if run_s is None else run_s
        for step in plan:
            spans = merge(list(step.ranges))
            headers = ", ".join(s.header(s.start) for s in spans)
            report.planned.append(
                f"GET {public_url(step.url)} {len(spans)} request(s), Range "
                f"{headers} ({'/'.join(step.params)}, {step.size:,} bytes) -> "
                f"{folder / file_name(run_s, step.step)}"
            )
        report.files += len(plan)

    def held_runs(self, datasets: Path) -> list[str]:
        """The complete runs held, oldest first."""
        return [held.run for held in runs.held_runs(datasets, NAME)]

    def prune(self, datasets: Path, keep: int) -> list[str]:
        """Delete all but the newest `keep` complete runs (a run being fetched stays); of the
        others but the newest and, after a short newest run, the 00/12 UTC run before it, keep
        only the first steps (all the reader reads of them)."""
        deleted = retention.prune_runs(datasets, NAME, keep)
        held = runs.held_runs(datasets, NAME)
        whole = {held[-1].run} if held else set()
        if held and stream(held[-1].run_s) == "scda":
            whole |= {h.run for h in held[-3:-1] if stream(h.run_s) == "oper"}
        for run in held:
            if run.run not in whole:
                _trim(run)
        return deleted


def _holds(folder: Path, run_s: int, wanted: list[int]) -> bool:
    """Whether the run is held complete with every step of `wanted`."""
    try:
        held = runs.read_marker(folder)
    except runs.RunError:
        return False
    names = {f.name for f in held.files} if held else set()
    return held is not None and {file_name(run_s, s) for s in wanted} <= names


def _trim(held: runs.HeldRun) -> None:
    """Cut a held run to its first steps: the marker first, then the files it lost."""
    keep = {file_name(held.run_s, s) for s in HISTORY_STEPS}
    names = [f.name for f in held.files if f.name in keep]
    if names and len(names) < len(held.files):
        runs.write_marker(held.folder, NAME, held.run, names)
        for gone in {f.name for f in held.files} - set(names):
            (held.folder / gone).unlink(missing_ok=True)


SOURCE = Ecmwf()
