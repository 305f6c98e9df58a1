"""The AQI tables the pipeline publishes (manifest "aqi"), as arrays for the compiled evaluation.

The server knows no breakpoints: it reads each index's inputs (concentration column, scale,
truncation, piecewise-linear table) from the manifest and applies them as contract.AirQuality
describes (kernels.evaluate), so that the index at a point is the index of the
interpolated concentrations.
"""

from __future__ import annotations

import numpy as np

from server.air_quality import kernels

NAN = float("nan")


class IndexTables:
    """Every published index as arrays for kernel.evaluate over (steps, nvar) blocks."""

    # One row of `inputs` and `limits` per input, grouped by index; the tables end to end in
    # xp/fp; a manifest without "only_above" (an older pipeline) does not load.

    def __init__(self, published: dict, variables: tuple[str, ...], names: tuple[str, ...]):
        column = {name: i for i, name in enumerate(variables)}
        self.names = tuple(names)
        inputs, limits, xs, ys = [], [], [], []
        start = 0
        for group, name in enumerate(self.names):
            rows = {}  # variable -> its input row (gates)
            for t in published[name]:
                stop = start + len(t["x"])
                gate = t["only_above"]
                if gate is not None and gate not in rows:
                    raise ValueError(
                        f"{name}: {t['variable']} is gated by {gate}, which no "
                        "earlier input of the index reads"
                    )
                rows[t["variable"]] = len(inputs)
                inputs.append(
                    (column[t["variable"]], group, start, stop, -1 if gate is None else rows[gate])
                )
                decimals = t["decimals"]
                limits.append(
                    (
                        float(t["scale"]),
                        0.0 if decimals is None else 10.0**decimals,
                        _value(t["below"]),
                        _value(t["above"]),
                        float(t["required"]),
                    )
                )
                xs += t["x"]
                ys += t["y"]
                start = stop
        if len(inputs) > kernels.MAX_INPUTS:
            raise ValueError(f"more than {kernels.MAX_INPUTS} index inputs")
        self.inputs = np.array(inputs, dtype=np.int64)
        self.limits = np.array(limits, dtype=np.float64)
        self.xp = np.array(xs, dtype=np.float64)
        self.fp = np.array(ys, dtype=np.float64)
        # np.interp's slope of each segment (the last of each table is never used)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.slopes = np.append(np.diff(self.fp) / np.diff(self.xp), np.nan)
        # The grid columns the indices read.
        self.columns = np.unique(self.inputs[:, 0])

    def arrays(self, targets: np.ndarray) -> tuple:
        """kernel.evaluate's arguments after the block, writing index k to targets[k]."""
        return self.inputs, self.limits, self.xp, self.fp, self.slopes, targets

    def evaluate(self, block: np.ndarray) -> np.ndarray:
        """The indices `names` of each row of block (steps, nvar): (len(names), steps)."""
        # Float, integer-valued, NaN when unknown.
        nvar = block.shape[1]
        work = np.empty((block.shape[0], nvar + len(self.names)))
        work[:, :nvar] = block
        kernels.evaluate(work, *self.arrays(np.arange(nvar, nvar + len(self.names))))
        return work[:, nvar:].T


def _value(limit: float | None) -> float:
    return NAN if limit is None else float(limit)
