"""The AQI tables the pipeline publishes (manifest "aqi"), evaluated on a point's series.

The server knows no breakpoints: it reads each index's inputs (concentration column, scale,
truncation, piecewise-linear table) from the manifest and applies them as contract.AirQuality
describes, so that the index at a point is the index of the interpolated concentrations.

For speed every input of every index is evaluated in one pass: the tables are laid end to end
on one axis (each shifted past the previous one) and each input's value, clamped to its own
table, is looked up with a single np.interp.
"""

from __future__ import annotations

import numpy as np

from contract import AirQuality as AQ

NAN = float("nan")


class IndexTables:
    """Every published index, ready to evaluate over a (steps, nvar) block of a grid."""

    def __init__(self, published: dict, variables: tuple[str, ...], names: tuple[str, ...]):
        column = {name: i for i, name in enumerate(variables)}
        self.names = list(names)
        # Truncated inputs first (truncation then works on one slice), then by index, so that
        # each index's inputs are usually one slice too.
        inputs = sorted(((k, t) for k, name in enumerate(self.names) for t in published[name]),
                        key=lambda item: (item[1]["decimals"] is None, item[0]))
        self.members = [columns([i for i, (k, _) in enumerate(inputs) if k == group])
                        for group in range(len(self.names))]
        self.columns = np.array([column[t["variable"]] for _, t in inputs])
        self.scale = np.array([float(t["scale"]) for _, t in inputs])
        self.truncated = sum(t["decimals"] is not None for _, t in inputs)
        self.factor = np.array([10.0 ** t["decimals"] for _, t in inputs[:self.truncated]])
        required = [(k, column[t["variable"]]) for k, t in inputs if t["required"]]
        self.required = np.array([c for _, c in required], dtype=np.intp)
        self.required_of = [columns([i for i, (k, _) in enumerate(required) if k == group])
                            for group in range(len(self.names))]
        # Each table with flat ends for `below` and `above` (NaN ends give NaN there), laid
        # end to end on one axis: table k's span [x0 - 2, xn + 2] is shifted by shift[k].
        xs, ys = [], []
        for _, t in inputs:
            x, below, above = t["x"], _value(t["below"]), _value(t["above"])
            xs.append([x[0] - 2, x[0] - EDGE, *x, x[-1] + EDGE, x[-1] + 2])
            ys.append([below, below, *t["y"], above, above])
        self.low = np.array([x[0] for x in xs])
        self.high = np.array([x[-1] for x in xs])
        widths = self.high - self.low + 1.0
        self.shift = np.concatenate(([0.0], np.cumsum(widths)[:-1])) - self.low
        self.xp = np.concatenate([np.asarray(x) + s for x, s in zip(xs, self.shift)])
        self.fp = np.concatenate([np.asarray(y, dtype=np.float64) for y in ys])

    def evaluate(self, block: np.ndarray) -> np.ndarray:
        """The indices `names` (float, integer-valued, NaN when unknown) for each row of
        `block`: shape (len(names), steps). Works on one row per input (reductions over
        inputs are then element-wise over whole rows)."""
        value = block.T[self.columns]                       # (inputs, steps), a copy
        value *= self.scale[:, None]
        cut = value[:self.truncated]
        cut *= self.factor[:, None]
        cut += AQ.TRUNCATION_SLACK
        np.floor(cut, out=cut)
        cut /= self.factor[:, None]
        np.maximum(value, self.low[:, None], out=value)
        np.minimum(value, self.high[:, None], out=value)
        value += self.shift[:, None]
        part = np.interp(value, self.xp, self.fp)
        best = np.empty((len(self.names), block.shape[0]))
        for k, members in enumerate(self.members):
            np.fmax.reduce(part[members], axis=0, out=best[k])
        np.minimum(best, AQ.INDEX_CAP, out=best)
        best += 0.5 + AQ.HALF_UP_SLACK
        np.floor(best, out=best)
        unknown = np.isnan(block.T[self.required])
        for k, members in enumerate(self.required_of):
            best[k, unknown[members].any(axis=0)] = NAN
        return best


def columns(indices: list[int]) -> slice | np.ndarray:
    """Column indices as a slice when consecutive (indexing then makes a view, not a copy),
    else as an index array."""
    if indices and indices == list(range(indices[0], indices[-1] + 1)):
        return slice(indices[0], indices[-1] + 1)
    return np.array(indices, dtype=np.intp)


# Below the first breakpoint by more than this, an input takes its `below` value.
# Truncated inputs are multiples of at least 0.001; the EEA tables are continuous there.
EDGE = 1e-9


def _value(limit: float | None) -> float:
    return NAN if limit is None else float(limit)
