"""The shape every fetchable source has, and what one fetch reports.

A source brings one upstream's newest complete data into `datasets/` (its own folder there,
the one the area's build reads). Files are written to a temporary name, checked and renamed
into place, so that a build never reads a partial file; a run (a set of files that belong
together) becomes visible to the build only when all of it is in place. Fetching again what
is already held moves (almost) nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

LATEST = "latest"


@dataclass(frozen=True)
class FetchOptions:
    """What the command line (or `refresh`) asks of a source."""

    datasets: Path  # the datasets directory (default datasets/)
    base_url: str | None = None  # --base-url, else the source's environment variable
    run: str = LATEST  # "latest" or a cycle the source understands (YYYYMMDDHH)
    dry_run: bool = False  # say what would be fetched, fetch nothing


@dataclass
class FetchReport:
    """What one fetch of one source did (printed as its summary; read by `refresh`)."""

    source: str
    run: str | None = None  # the run (cycle) now held, when the source has runs
    changed: bool = False  # new data arrived: the area's inputs changed
    files: int = 0  # files written (or, with --dry-run, that would be)
    bytes: int = 0  # bytes moved over the network
    bytes_whole: int = 0  # what whole files would have moved (range requests save)
    seconds: float = 0.0
    planned: list[str] = field(default_factory=list)  # --dry-run: one line per transfer
    notes: list[str] = field(default_factory=list)  # e.g. "20261129 12z incomplete: skipped"


class Source(Protocol):
    """One upstream (gfs, ecmwf, cams-europe, ...): see pipeline.fetch.sources.SOURCES."""

    name: str  # the SOURCE of `python -m pipeline fetch SOURCE`
    area: str  # the contract area whose build reads its files
    keep_runs: int  # runs `refresh` keeps after a build (--keep-runs: all)
    base_url_env: str  # e.g. WEATHERAPI_GFS_BASE_URL
    default_base_url: str

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """Bring the requested run into options.datasets; raise FetchError when it cannot."""

    def enabled(self) -> bool:
        """Whether `refresh` fetches it when no source is named (its prerequisites are set)."""

    def held_runs(self, datasets: Path) -> list[str]:
        """The complete runs held in datasets, oldest first."""

    def prune(self, datasets: Path, keep: int) -> list[str]:
        """Delete all but the newest `keep` complete runs (after a successful build only);
        return the runs deleted."""


class FetchError(Exception):
    """A fetch that failed as a whole: one line for the operator, and whether trying again
    later may help (not yet published, busy upstream) or not (a wrong key, licence)."""

    def __init__(self, message: str, retry_later: bool = False):
        super().__init__(message)
        self.retry_later = retry_later


def base_url(source: Source, options: FetchOptions) -> str:
    """--base-url, else the source's environment variable, else its public upstream."""
    url = options.base_url or os.environ.get(source.base_url_env) or source.default_base_url
    return url.rstrip("/")
