"""`python -m pipeline refresh`: fetch what is new, rebuild only the areas whose inputs changed,
publish. Safe to run from a scheduler every few minutes.

- One refresh at a time per output directory: an overlapping run exits at once, saying so.
- Every selected source is fetched; one that fails does not stop the others. Its area keeps
  serving its last good data (until that goes stale, which /ready reports).
- An area is rebuilt when the digest of its input folders differs from the one the published
  manifest recorded (pipeline.common.fingerprint), or when it is built from its generated
  offline default and the published data is due to be replaced (`next_version_expected_s`).
  An area whose inputs come in parts (the forecast: model runs, alerts) and of which only some
  changed rebuilds only those (new alerts: the alerts table and index, the grids linked from
  the published version). The other areas are carried over; nothing to rebuild means no new
  version.
- After a successful build, each fetched source keeps only its newest runs (its own number:
  a day of cycles for the models, so the hours before the newest run are covered; or
  `--keep-runs N` for all).

Exit codes (for schedulers): 0 done, or nothing new; 1 a source failed for a reason an operator
must fix (a key, a licence, a broken file) or the build failed; 75 only retry-later outcomes (an
upstream has not published yet, or is busy): the next scheduled run should succeed. What could
be published was published in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import contract
from pipeline import metrics
from pipeline.area import Builder
from pipeline.areas import BUILDERS
from pipeline.common.fingerprint import input_digest
from pipeline.fetch.source import FetchError, FetchOptions, FetchReport, Source

log = logging.getLogger("pipeline.refresh")
LOCK = ".refresh.lock"
SOURCES_ENV = "WEATHERAPI_REFRESH_SOURCES"
EX_TEMPFAIL = 75


@dataclass
class Outcome:
    """One source's fetch in this refresh."""

    source: Source
    report: FetchReport | None = None
    error: str | None = None
    retry_later: bool = False


@contextlib.contextmanager
def refresh_lock(out: Path) -> Iterator[bool]:
    """Hold the refresh lock of `out` (True), or learn at once that another refresh does."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def selected_sources(
    sources: dict[str, Source], names: list[str] | None, areas: list[str] | None, environ=os.environ
) -> list[Source]:
    """The sources to fetch that feed a selected area: those named (--sources), else those of
    WEATHERAPI_REFRESH_SOURCES (comma-separated), else each source that is on by default
    (its `enabled` says: the forecast model chosen, CAMS once an ADS key is configured)."""
    if not names and environ.get(SOURCES_ENV, "").strip():
        names = [n.strip() for n in environ[SOURCES_ENV].split(",") if n.strip()]
        unknown = sorted(set(names) - set(sources))
        if unknown:
            raise ValueError(
                f"{SOURCES_ENV}: no source named {', '.join(unknown)} (known: "
                f"{', '.join(sorted(sources))})"
            )
    if names:
        chosen = [sources[n] for n in names]
    else:
        chosen = [s for s in sources.values() if getattr(s, "enabled", lambda: True)()]
    return [s for s in chosen if not areas or s.area in areas]


async def fetch_all(sources: list[Source], options: FetchOptions) -> list[Outcome]:
    """Fetch every source concurrently; a failure is kept in its outcome, never raised."""

    async def one(source: Source) -> Outcome:
        try:
            return Outcome(source, report=await source.fetch(options))
        except FetchError as exc:
            log.error("%s: %s", source.name, exc)
            return Outcome(source, error=str(exc), retry_later=exc.retry_later)
        except Exception as exc:
            log.exception("%s: fetch failed", source.name)
            return Outcome(source, error=f"{type(exc).__name__}: {exc}")

    return list(await asyncio.gather(*(one(s) for s in sources)))


def areas_to_build(
    datasets: Path, out: Path, areas: list[str] | None, now_s: float
) -> tuple[list[str], dict[str, frozenset[str]]]:
    """The selected areas whose inputs differ from the published build's, or are due; and of
    those, the areas where only some parts of the inputs changed (area -> those parts), to be
    rebuilt in part (Builder.update)."""
    current = contract.current_version_dir(out)
    published = contract.read_manifest(current)["areas"] if current else {}
    wanted, partial = [], {}
    for builder in BUILDERS:
        name = builder.name
        if areas and name not in areas:
            continue
        entry = published.get(name)
        if entry is None or entry.get("input_digest") != input_digest(datasets, builder.folders):
            wanted.append(name)
            parts = _changed_parts(datasets, builder, entry)
            if parts:
                partial[name] = parts
        elif (
            entry.get("source", {}).get("generated")
            and entry.get("next_version_expected_s", float("inf")) <= now_s
        ):
            wanted.append(name)  # a generated default moves with the clock
    return wanted, partial


def _changed_parts(datasets: Path, builder: Builder, entry: dict | None) -> frozenset[str]:
    """The parts whose digest differs from the published one, when the builder can rebuild
    them alone and some part did not change (else empty: build it whole)."""
    recorded = (entry or {}).get("input_digests")
    if builder.update is None or not isinstance(recorded, dict):
        return frozenset()
    if (
        entry.get("source", {}).get("generated")
        and entry.get("next_version_expected_s", float("inf")) <= time.time()
    ):
        return frozenset()  # the generated default is due anyway: build it whole
    changed = frozenset(
        part
        for part, folders in builder.parts
        if recorded.get(part) != input_digest(datasets, folders)
    )
    return changed if changed and len(changed) < len(builder.parts) else frozenset()


def refresh(
    datasets: Path,
    out: Path,
    sources: list[Source],
    areas: list[str] | None,
    keep_runs: int | None = None,
    run: metrics.Run | None = None,
) -> int:
    """One refresh; returns the exit code (see the module docstring). `run` records what each
    source and area did, for the metrics text file."""
    with refresh_lock(out) as held:
        if not held:
            print(
                f"refresh: another refresh of {out} is running "
                f"({_holder(out / LOCK)}); exiting without doing anything"
            )
            if run is not None:
                run.skipped = True  # the running one will write the metrics
            return 0
        started = time.monotonic()
        outcomes = asyncio.run(fetch_all(sources, FetchOptions(datasets=datasets)))
        for outcome in outcomes:
            _summarise(outcome)
            if run is not None:
                run.fetched(
                    outcome.source.name,
                    outcome.report,
                    outcome.retry_later,
                    time.monotonic() - started,
                )
        wanted, partial = areas_to_build(datasets, out, areas, time.time())
        if wanted:
            log.info(
                "inputs changed: building %s",
                ", ".join(
                    f"{a} ({', '.join(sorted(partial[a]))} only)" if a in partial else a
                    for a in wanted
                ),
            )
            metrics.build(run, datasets, out, wanted, partial)
            _prune(outcomes, datasets, keep_runs)
        else:
            log.info("nothing new: no version published")
        log.info("refresh done in %.1f s", time.monotonic() - started)
    failed = [o for o in outcomes if o.error]
    if any(not o.retry_later for o in failed):
        return 1
    return EX_TEMPFAIL if failed else 0


def _summarise(outcome: Outcome) -> None:
    """One line per source."""
    name, report = outcome.source.name, outcome.report
    if report is None:
        kind = "later" if outcome.retry_later else "FAILED"
        log.warning(
            "%s: %s: %s", name, "try again later" if kind == "later" else kind, outcome.error
        )
        return
    log.info(
        "%s: %s%s, %d file(s), %s bytes in %.1f s",
        name,
        "new data" if report.changed else "nothing new",
        f" (run {report.run})" if report.run else "",
        report.files,
        f"{report.bytes:,}",
        report.seconds,
    )


def _prune(outcomes: list[Outcome], datasets: Path, keep_runs: int | None) -> None:
    """Old runs go only now that a build from the new ones succeeded."""
    for outcome in outcomes:
        if outcome.report is not None:
            keep = outcome.source.keep_runs if keep_runs is None else keep_runs
            deleted = outcome.source.prune(datasets, keep)
            if deleted:
                log.info("%s: deleted old runs %s", outcome.source.name, ", ".join(deleted))


def _holder(lock: Path) -> str:
    """Who holds the lock, as far as its file says."""
    try:
        pid = lock.read_text().strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid else "lock held"
