"""Where the grid writer's row bands are computed: in this process (the default), on one of
dask's local schedulers, or on a Dask cluster (`--dask-scheduler ADDRESS`).

A band function is picklable (it carries paths and run metadata, never open files) and
returns the band's values, or (values, facts) where the facts are what its caller merges
afterwards (the side effects a remote worker could not give back otherwise). Bands are
computed with at most `window` of them in flight and handed back in row order, so the caller
writes each as it arrives: memory is set by the band size, not the grid's, and the output
is the same bytes wherever the bands ran.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("pipeline")
ENV = "WEATHERAPI_DASK_SCHEDULER"
# dask's local schedulers in this process ("processes" is left out: its pool of new
# interpreters, each importing the pipeline, is started again for every batch; for worker
# processes, start a cluster: `dask scheduler` and `dask worker`, or a LocalCluster).
LOCAL = ("synchronous", "threads")
WINDOW = 2  # bands in flight on a local dask scheduler (each is up to a band's bytes)

Band = Callable[[int, int], Any]


@dataclass(frozen=True)
class Settings:
    """Where bands run (None: in process; a name of LOCAL; an address) and their size."""

    scheduler: str | None = None
    band_bytes: int | None = None  # None: the grid writer's default
    band_rows: int | None = None  # rows a band, whatever their bytes (benchmarks, tests)
    client: Any = None  # a distributed.Client when scheduler is an address


_current: contextvars.ContextVar[Settings | None] = contextvars.ContextVar(
    "pipeline_bands", default=None
)


def current() -> Settings:
    """The settings of the build running in this context."""
    return _current.get() or Settings()


@contextlib.contextmanager
def configured(
    scheduler: str | None = None, band_bytes: int | None = None, band_rows: int | None = None
) -> Iterator[Settings]:
    """Run the grid writes inside on `scheduler` (connecting to a cluster once, here)."""
    scheduler = (scheduler or "").strip() or None
    with contextlib.ExitStack() as stack:
        client = None
        if scheduler is not None and scheduler not in LOCAL:
            client = stack.enter_context(_connect(scheduler))
        token = _current.set(Settings(scheduler, band_bytes, band_rows, client))
        try:
            yield current()
        finally:
            _current.reset(token)


@contextlib.contextmanager
def _connect(address: str) -> Iterator[Any]:
    """A distributed.Client of the cluster at `address`; OSError when it cannot be reached."""
    from distributed import Client  # imported only for a cluster: it starts a thread

    try:
        client = Client(address, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise OSError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    log.info(
        "grid bands on the Dask cluster at %s (%d worker(s), %d thread(s))",
        address,
        len(workers),
        sum(w.get("nthreads", 0) for w in workers.values()),
    )
    try:
        yield client
    finally:
        client.close()


def compute(band: Band, ranges: list[tuple[int, int]]) -> Iterator[Any]:
    """band(start, stop) for each range, in order, computed where current() says."""
    settings = current()
    if settings.scheduler is None:
        return (band(a, b) for a, b in ranges)
    if settings.client is None:
        return _local(band, ranges, settings.scheduler)
    return _cluster(settings.client, band, ranges)


def _local(band: Band, ranges: list[tuple[int, int]], scheduler: str) -> Iterator[Any]:
    """Batches of WINDOW bands as dask.delayed tasks on a local dask scheduler."""
    import dask

    # pure=False: keys need no hash of the band function (which would pickle its inputs).
    task = dask.delayed(band, pure=False)
    for i in range(0, len(ranges), WINDOW):
        yield from dask.compute(
            *(task(a, b) for a, b in ranges[i : i + WINDOW]), scheduler=scheduler
        )


def _cluster(client: Any, band: Band, ranges: list[tuple[int, int]]) -> Iterator[Any]:
    """The bands on the cluster, as many in flight as it has threads (at least two)."""
    # The band function is sent to every worker once, not with each task.
    [shared] = client.scatter([band], broadcast=True, hash=False)
    nthreads = sum(client.nthreads().values())
    window = max(2, nthreads)
    pending: deque = deque()
    try:
        for a, b in ranges:
            pending.append(client.submit(_call, shared, a, b, pure=False))
            if len(pending) >= window:
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())
    finally:
        for future in pending:
            future.cancel()
        shared.release()


def _call(band: Band, a: int, b: int) -> Any:
    """band(a, b) on a worker."""
    return band(a, b)


def _result(future: Any) -> Any:
    """A band's result; its memory on the cluster freed once it is here."""
    try:
        return future.result()
    finally:
        future.release()
