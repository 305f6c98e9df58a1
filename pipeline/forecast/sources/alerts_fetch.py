"""Weather alerts: `python -m pipeline fetch alerts` (NWS and MeteoAlarm, see nws.py and
meteoalarm.py) into datasets/alerts/, in the formats the forecast build reads.

Configuration: WEATHERAPI_ALERT_UPSTREAMS (default "nws,meteoalarm"),
WEATHERAPI_METEOALARM_COUNTRIES (ISO codes or feed names, default every member; empty: none),
WEATHERAPI_NWS_BASE_URL and WEATHERAPI_METEOALARM_BASE_URL (mirrors); `--base-url` sets both
(one mirror, or a test server, serving both layouts). One upstream failing does not stop the
other: what arrived is in place, and the fetch then fails naming what did not.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipeline.fetch.http import Downloader, HttpConfig, host_of
from pipeline.fetch.lock import exclusive
from pipeline.fetch.pacing import RateLimit
from pipeline.fetch.source import FetchError, FetchOptions, FetchReport
from pipeline.forecast.sources import meteoalarm, nws

UPSTREAMS_ENV = "WEATHERAPI_ALERT_UPSTREAMS"
COUNTRIES_ENV = "WEATHERAPI_METEOALARM_COUNTRIES"
METEOALARM_BASE_ENV = "WEATHERAPI_METEOALARM_BASE_URL"


@dataclass(frozen=True)
class AlertsConfig:
    """Which upstreams and countries, and how to ask them."""

    upstreams: tuple[str, ...] = ("nws", "meteoalarm")
    countries: tuple[str, ...] = tuple(meteoalarm.COUNTRIES.values())
    meteoalarm_url: str | None = None  # None: WEATHERAPI_METEOALARM_BASE_URL, else public
    # Neither publishes a limit; both are public services asked every few minutes: be gentle.
    limit: RateLimit = RateLimit(per_minute=600, burst=20)
    http: HttpConfig = field(default_factory=lambda: HttpConfig(attempts=4, read_timeout_s=30.0))


def countries_from(raw: str) -> tuple[str, ...]:
    """Feed names from ISO codes or names ("DE, france"); unknown ones refused."""
    names = []
    for word in (w.strip() for w in raw.split(",")):
        if not word:
            continue
        name = meteoalarm.COUNTRIES.get(word.upper(), word.lower())
        if name not in meteoalarm.COUNTRIES.values():
            raise FetchError(
                f"{COUNTRIES_ENV}: {word!r} is not a MeteoAlarm member (one of "
                f"{', '.join(sorted(meteoalarm.COUNTRIES))})"
            )
        names.append(name)
    return tuple(dict.fromkeys(names))


class AlertsSource:
    """The `alerts` source (see the module's docstring)."""

    name = "alerts"
    area = "forecast"
    base_url_env = "WEATHERAPI_NWS_BASE_URL"
    default_base_url = nws.API
    keep_runs = 1  # no runs: prune has nothing to drop

    def __init__(self, config: AlertsConfig | None = None):
        self.config = config

    def settings(self) -> AlertsConfig:
        """The configuration given, else the defaults with the environment's choices."""
        if self.config is not None:
            return self.config
        config = AlertsConfig()
        upstreams = os.environ.get(UPSTREAMS_ENV)
        if upstreams is not None:
            chosen = tuple(u.strip() for u in upstreams.split(",") if u.strip())
            unknown = set(chosen) - {"nws", "meteoalarm"}
            if unknown:
                raise FetchError(
                    f"{UPSTREAMS_ENV}: unknown {', '.join(sorted(unknown))} (nws, meteoalarm)"
                )
            config = replace(config, upstreams=chosen)
        if (countries := os.environ.get(COUNTRIES_ENV)) is not None:
            config = replace(config, countries=countries_from(countries))
        return config

    def held_runs(self, datasets: Path) -> list[str]:
        return []  # alerts have no runs: the current set replaces the last

    def prune(self, datasets: Path, keep: int) -> list[str]:
        return []

    def bases(self, options: FetchOptions, config: AlertsConfig) -> tuple[str, str]:
        """(NWS base, MeteoAlarm base): --base-url for both, else each one's own."""
        if options.base_url:
            return options.base_url.rstrip("/"), options.base_url.rstrip("/")
        nws_base = os.environ.get(self.base_url_env) or self.default_base_url
        feeds = config.meteoalarm_url or os.environ.get(METEOALARM_BASE_ENV) or meteoalarm.FEEDS
        return nws_base.rstrip("/"), feeds.rstrip("/")

    async def fetch(self, options: FetchOptions) -> FetchReport:
        """Bring the current alerts of every configured upstream into options.datasets."""
        started = time.monotonic()
        config = self.settings()
        nws_base, feeds = self.bases(options, config)
        report = FetchReport(self.name)
        if options.dry_run:
            report.planned = (
                [f"{nws_base}/alerts/active"] if "nws" in config.upstreams else []
            ) + (
                [meteoalarm.feed_url(feeds, c) for c in config.countries]
                if "meteoalarm" in config.upstreams
                else []
            )
            report.files = len(report.planned)
            return report
        limits = {host_of(b): config.limit for b in (nws_base, feeds)}
        http_config = replace(config.http, rate_limits={**config.http.rate_limits, **limits})
        with exclusive(options.datasets / "alerts-cache" / ".lock", "alerts"):
            async with Downloader(http_config) as http:
                failures = await self._fetch(
                    http, config, nws_base, feeds, options.datasets, report
                )
                report.bytes = http.totals.bytes
        report.seconds = time.monotonic() - started
        if failures:
            retry = all(getattr(f, "retry_later", False) for f in failures.values())
            raise FetchError(
                "; ".join(f"{k}: {v}" for k, v in failures.items())
                + (" (what arrived from the others is in place)" if report.changed else ""),
                retry_later=retry,
            )
        return report

    async def _fetch(
        self,
        http: Downloader,
        config: AlertsConfig,
        nws_base: str,
        feeds: str,
        datasets: Path,
        report: FetchReport,
    ) -> dict[str, BaseException]:
        """Every upstream and country at once; what failed, by name."""
        jobs: dict[str, asyncio.Future] = {}
        if "nws" in config.upstreams:
            jobs["nws"] = asyncio.ensure_future(nws.fetch(http, nws_base, datasets, report.notes))
        if "meteoalarm" in config.upstreams and config.countries:
            try:
                outlines = await meteoalarm.geocode_outlines(http, datasets, report.notes)
            except FetchError as exc:  # the warnings with polygons still count
                report.notes.append(
                    f"meteoalarm: region outlines unavailable ({exc}); "
                    "warnings given by geocodes only are skipped"
                )
                outlines = {}
            for country in config.countries:
                jobs[f"meteoalarm {country}"] = asyncio.ensure_future(
                    meteoalarm.fetch_country(http, feeds, country, datasets, outlines)
                )
        results = dict(zip(jobs, await asyncio.gather(*jobs.values(), return_exceptions=True)))
        failures = {k: r for k, r in results.items() if isinstance(r, BaseException)}
        for result in results.values():
            if isinstance(result, BaseException):
                continue
            changed = result[0] if isinstance(result, tuple) else result
            report.changed |= changed
            report.files += int(changed)
        used = [
            r[1]
            for k, r in results.items()
            if k.startswith("meteoalarm ") and not isinstance(r, BaseException)
        ]
        if "meteoalarm" in config.upstreams and not any(
            k.startswith("meteoalarm ") for k in failures
        ):
            meteoalarm.prune(datasets, list(config.countries), set().union(*used))
        return failures


SOURCE = AlertsSource()
