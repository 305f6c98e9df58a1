"""JSON of a point's hourly records, assembled from columns without a dict per record.

A hundred hours of sixteen numbers is the bulk of an air-quality answer. Rounded values are
looked up in tables of pre-rendered number tokens (the bytes orjson writes for them), placed
between the keys in one object array and joined once: the same bytes as a dict per record
through orjson, for a fraction of the cost.
"""

from __future__ import annotations

import numpy as np
import orjson

NULL = b"null"


class Tokens:
    """Pre-rendered JSON numbers k / 10**decimals for k in [0, count), and null."""

    def __init__(self, decimals: int, count: int):
        self.scale = 10.0 ** decimals
        self.count = count
        table = [orjson.dumps(k / self.scale if decimals else k) for k in range(count)]
        self.table = np.array(table + [NULL], dtype=object)

    def render(self, values: np.ndarray) -> np.ndarray:
        """Tokens of `values` rounded to the decimals (half to even, as numpy rounds)."""
        scaled = np.rint(values * self.scale)
        unknown = np.isnan(scaled)
        index = np.where(unknown, self.count, scaled)
        outside = ~unknown & ((index < 0) | (index >= self.count))
        index[outside] = self.count
        out = self.table.take(index.astype(np.intp))
        for at in zip(*np.nonzero(outside)):   # rare: beyond the table, rendered one by one
            out[at] = orjson.dumps(float(scaled[at] / self.scale))
        return out


class Records:
    """Renders records with fixed keys: time, then integer columns, then decimal columns."""

    def __init__(self, keys: tuple[str, ...], n_integers: int, decimals: tuple[int, ...],
                 tokens: dict[int, Tokens], integers: Tokens):
        self.keys = keys
        self.n_integers = n_integers
        self.prefixes = np.array([b'},{"%b":' % keys[0].encode()]
                                 + [b',"%b":' % k.encode() for k in keys[1:]], dtype=object)
        self.groups = [(d, [1 + n_integers + i for i, x in enumerate(decimals) if x == d],
                        [i for i, x in enumerate(decimals) if x == d])
                       for d in sorted(set(decimals))]
        self.tokens, self.integers = tokens, integers

    def render(self, times: list[int], integers: np.ndarray, values: np.ndarray
               ) -> tuple[bytes, bytes]:
        """(JSON of the first record, JSON array of all): integers is (n_integers, steps),
        values (steps, ncolumns)."""
        steps = len(times)
        cells = np.empty((steps, 2 * len(self.keys)), dtype=object)
        cells[:, 0::2] = self.prefixes
        cells[:, 1] = orjson.dumps(times)[1:-1].split(b",")
        cells[:, 3:2 + 2 * self.n_integers:2] = self.integers.render(integers.T)
        for decimals, at, columns in self.groups:
            cells[:, [2 * k + 1 for k in at]] = self.tokens[decimals].render(values[:, columns])
        cells[0, 0] = cells[0, 0][2:]           # no "}," before the first record
        parts = cells.ravel().tolist()
        width = cells.shape[1]
        return b"".join(parts[:width]) + b"}", b"[" + b"".join(parts) + b"}]"
