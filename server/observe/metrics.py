"""/metrics in the Prometheus text format (docs/operations/production.md#metrics): requests and
their durations by route template, method and status; refusals by reason; every area's data
version, age and staleness; the workers alive; build info.

Imported only when metrics are on. `python -m server` points PROMETHEUS_MULTIPROC_DIR at a
private directory first (server.workers.metrics_directory): prometheus_client then keeps each
worker's counts in a memory-mapped file there, and a scrape of any worker sums them all. The
area series are computed at each scrape from the scraping worker's own loaded build.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import platform
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

import contract
from server.artifacts.store import Store
from server.http.middleware import API_VERSION, CONFIG, REFUSAL, STORE, endpoint
from server.observe.freshness import data_time
from server.observe.requests import OBSERVER

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Answers take from 0.1 ms (a cached forecast) to seconds (a cold search): finer at the low end
# than prometheus_client's default buckets, which start at 5 ms.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Any other method is "other": a label per made-up method would let a client grow the series.
METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "DELETE", "PATCH"})
UNMATCHED = "unmatched"  # the route of a 404 or 405: never the raw path
STATES = ("loading", "loaded", "stale", "failed", "absent")
FLUSH_S = 1.0  # how often a worker adds its counts to the shared files


class Metrics:
    """The request metrics of one worker, and the registry a scrape reads."""

    def __init__(self, store: Store):
        own = CollectorRegistry()
        labels = ("route", "method", "status")
        self.requests = Counter(
            "http_requests_total", "HTTP requests answered.", labels, registry=own
        )
        self.duration = Histogram(
            "http_request_duration_seconds",
            "Time the application took to answer (as in Server-Timing).",
            labels,
            buckets=BUCKETS,
            registry=own,
        )
        self.refusals = Counter(
            "weatherapi_refusals_total",
            "Requests refused, by status and "
            "reason (forbidden: no valid key, token or signature; "
            "*_limit: the budget that ran out).",
            ("status", "reason"),
            registry=own,
        )
        workers = Gauge(
            "weatherapi_workers",
            "Worker processes alive.",
            registry=own,
            multiprocess_mode="livesum",
        )
        workers.set(1)
        # Counts since the last flush, by (route, method, status): [requests, seconds, count per
        # bucket]. A request adds to a list; the shared files are written once a second.
        self._pending: dict[tuple[str, str, int], list] = {}
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # set by python -m server
            self.registry = CollectorRegistry()
            MultiProcessCollector(self.registry)
        else:  # an application made in-process (tests): this process's counts only
            self.registry = own
        self.registry.register(AreaCollector(store))

    def observe(self, request: web.Request, status: int, seconds: float) -> None:
        """Count one answered request (in memory until the next flush)."""
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else UNMATCHED
        method = request.method if request.method in METHODS else "other"
        pending = self._pending.get((route, method, status))
        if pending is None:
            pending = self._pending[route, method, status] = [0, 0.0, [0] * (len(BUCKETS) + 1)]
        pending[0] += 1
        pending[1] += seconds
        pending[2][bisect.bisect_left(BUCKETS, seconds)] += 1  # the first bucket >= seconds
        if status in (403, 429):
            reason = request.get(REFUSAL) or ("forbidden" if status == 403 else "rate_limit")
            self.refusals.labels(str(status), reason).inc()

    def flush(self) -> None:
        """Add the counts since the last flush to the shared values, in the event loop's thread
        (where observe() adds to what this swaps): one write per series and bucket, where
        writing each request through would cost some 10 us of locks and mmap writes.
        prometheus_client's Histogram has no call to add many observations: hence its
        children's _sum and _buckets (the version is pinned; the tests read the sums)."""
        pending, self._pending = self._pending, {}
        for (route, method, status), (count, seconds, buckets) in pending.items():
            labels = (route, method, str(status))
            self.requests.labels(*labels).inc(count)
            histogram = self.duration.labels(*labels)
            histogram._sum.inc(seconds)
            for value, added in zip(histogram._buckets, buckets):
                if added:
                    value.inc(added)

    def exposition(self) -> bytes:
        """The text every scrape gets."""
        return generate_latest(self.registry)


class AreaCollector:
    """Per area, at scrape time: state, version, data age and staleness; and build info."""

    def __init__(self, store: Store):
        self.store = store
        self._times: dict[tuple[str, str], float | None] = {}  # (area, version) -> data time
        self._manifest: tuple[Path | None, dict] = (None, {})

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The families, from the store's current snapshot."""
        now = time.time()
        _, body = self.store.readiness()
        state = GaugeMetricFamily(
            "weatherapi_area_state",
            "1 for the area's state, as in /ready.",
            labels=["area", "state"],
        )
        info = GaugeMetricFamily(
            "weatherapi_area_info", "The data version each area serves.", labels=["area", "version"]
        )
        age = GaugeMetricFamily(
            "weatherapi_area_data_age_seconds",
            "Seconds since the area's newest model run or snapshot.",
            labels=["area"],
        )
        stale = GaugeMetricFamily(
            "weatherapi_area_stale",
            "1 when the area's data does not cover the present (its answers are 503s).",
            labels=["area"],
        )
        for area, shown in body["areas"].items():
            for name in STATES:
                state.add_metric([area, name], float(shown["state"] == name))
            held = self.store.area(area)
            if held.data is None:
                continue
            info.add_metric([area, held.version or ""], 1.0)
            stale.add_metric([area], float(shown["state"] == "stale"))
            made = self._data_time(area, held.version, held.data)
            if made is not None:
                age.add_metric([area], max(0.0, now - made))
        build = GaugeMetricFamily(
            "weatherapi_build_info", "The server's version.", labels=["version", "python"]
        )
        build.add_metric([API_VERSION, platform.python_version()], 1.0)
        yield from (state, info, age, stale, build)

    def _data_time(self, area: str, version: str | None, data) -> float | None:
        """The area's data time, worked out once per version."""
        key = (area, version or "")
        if key not in self._times:
            entry = self._entries().get(area, {})
            if entry.get("version") != version:  # held from a version no longer published
                return None
            self._times[key] = data_time(area, entry, data)
        return self._times[key]

    def _entries(self) -> dict:
        """The published manifest's areas, read once per version directory."""
        where = self.store.snapshot.version_dir
        if where != self._manifest[0]:
            try:
                areas = contract.read_manifest(where)["areas"] if where else {}
            except (OSError, ValueError, KeyError):
                areas = {}
            self._manifest = (where, areas)
        return self._manifest[1]


@endpoint(limited=False, auth="none", etag=False)
async def metrics_page(request: web.Request) -> web.Response:
    """GET /metrics: the exposition (summing every worker's files takes a few ms: a thread)."""
    metrics = request.app[OBSERVER].metrics
    metrics.flush()  # here, in the loop's thread, where observe() adds to what it swaps
    body = await asyncio.get_running_loop().run_in_executor(None, metrics.exposition)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def flushing(app: web.Application) -> AsyncIterator[None]:
    """Flush the counts every FLUSH_S, and once more when the worker stops: a scrape of another
    worker sees this one's requests at most FLUSH_S late."""
    metrics = app[OBSERVER].metrics

    async def loop() -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            metrics.flush()

    task = asyncio.create_task(loop())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    metrics.flush()


async def own_listener(app: web.Application) -> AsyncIterator[None]:
    """Serve /metrics alone on WEATHERAPI_METRICS_LISTEN: each worker listens there too, with
    SO_REUSEPORT (the port is held by `python -m server`, as the API's)."""
    from server.workers import bind

    host, port = app[CONFIG].metrics_address
    sock = bind(host, port)
    sock.listen(128)
    side = web.Application()
    side[OBSERVER] = app[OBSERVER]
    side.router.add_get("/metrics", metrics_page)
    runner = web.AppRunner(side, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    yield
    await runner.cleanup()


def setup(app: web.Application) -> Metrics:
    """Make the metrics of `app` (already holding its STORE), and their routes and listener."""
    metrics = Metrics(app[STORE])
    app.cleanup_ctx.append(flushing)
    if app[CONFIG].metrics:
        app.router.add_get("/metrics", metrics_page)
    if app[CONFIG].metrics_listen:
        app.cleanup_ctx.append(own_listener)
    return metrics
