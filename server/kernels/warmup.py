"""Compile the server's numba code into numba's on-disk cache:
`python -m server.kernels.warmup [BUILD_DIR]`.

`./dev serve`, `./dev test` and the benchmarks run it before any server starts, so that a fresh
checkout pays the compiler (about 30 s of CPU) once, up front: servers then load the compiled
code from __pycache__ in about a second (the loader answers once to do so) and are ready within
their few seconds. When the cache is current this returns in about a second. The forecast's
code is compiled on a tiny in-memory forecast whose arrays have the types of the published
grids'; the other areas' kernels (air quality, webcams, reverse geocoding) are compiled by
loading them, as a server does, from the version published in BUILD_DIR when there is one."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import numpy as np

import contract
from server.artifacts.store import Store
from server.forecast import blocks as forecast_blocks
from server.forecast import kernels
from server.forecast import render as forecast_render
from server.kernels import cache
from server.kernels.bilinear import Corners

HOURS = 400
log = logging.getLogger("server.forecast")


class _Grid:
    def __init__(self, values: np.ndarray):
        values.flags.writeable = False  # as PointGrid.block's are
        self.values = values


class _NoAlerts:
    @staticmethod
    def json_at(lat: float, lon: float, now_s: float) -> bytes:
        return b"[]"


class SyntheticData:
    """A tiny stand-in for ForecastData: zero-valued grids of 2 x 2 cells over HOURS hours
    from the epoch, no alerts."""

    def __init__(self):
        self.grid = _Grid(np.zeros((2, 2, HOURS, len(kernels.INPUTS)), dtype=np.float32))
        self.static = _Grid(np.zeros((2, 2, 1, 1), dtype=np.float32))
        self.first_s, self.last_s = 0, (HOURS - 1) * contract.HOUR_S
        self.inputs = np.arange(len(kernels.INPUTS), dtype=np.int64)
        self.sun_t0, self.suns = forecast_render.sun_table(self.first_s, self.last_s)
        self.alerts = _NoAlerts()

    def point(self, lat: float, lon: float) -> forecast_blocks.Point:
        cell = Corners(0, 1, 0, 1, 0.25, 0.25, 0.25, 0.25)
        return forecast_blocks.Point(self.grid.values, self.static.values, cell, cell)

    @staticmethod
    def flags_json(units: str) -> bytes:
        return b"{}"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        raise SystemExit("usage: python -m server.kernels.warmup [BUILD_DIR]")
    started = time.perf_counter()
    # Before any compiled code is loaded (importing only declares it; the first call loads).
    cache.purge_if_stale()
    forecast_blocks.warm_up(SyntheticData())
    print(f"compiled code ready in {time.perf_counter() - started:.1f} s")
    target = contract.current_version_dir(Path(args[0])) if args else None
    if target is not None:
        from server.areas import loaders  # the whole server: only when there is a build

        started = time.perf_counter()
        snapshot = Store(Path(args[0]), loaders(), 0.0).load(target)
        states = ", ".join(f"{a}={s.state}" for a, s in snapshot.areas.items())
        print(f"{target.name}: areas loaded in {time.perf_counter() - started:.1f} s ({states})")


if __name__ == "__main__":
    main()
