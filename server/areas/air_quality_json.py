"""JSON of a point's hourly records, assembled from columns without a dict per record.

A hundred hours of sixteen numbers is the bulk of an air-quality answer. Rounded values are
looked up in tables of pre-rendered number tokens (the bytes orjson writes for them), placed
between the keys in one object array and joined once: the same bytes as a dict per record
through orjson, for a fraction of the cost.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import orjson

NULL = b"null"


class Tokens:
    """Pre-rendered JSON numbers k / 10**decimals for k in [0, count), and null."""

    def __init__(self, decimals: int, count: int):
        self.scale = 10.0 ** decimals
        self.count = count
        # repr is orjson's shortest round-trip form in this range (no exponents below 1e16);
        # orjson.dumps itself would keep a 4 KiB buffer behind every token.
        table = [repr(k / self.scale if decimals else k).encode() for k in range(count)]
        self.table = np.array(table + [NULL], dtype=object)

    def render(self, values: np.ndarray) -> np.ndarray:
        """Tokens of non-negative `values` rounded to the decimals (half to even, as numpy
        rounds); NaN is null."""
        scaled = values * self.scale
        np.rint(scaled, out=scaled)
        # NaN compares false: it takes the last entry, null, like values beyond the table.
        out = self.table.take(np.where(scaled < self.count, scaled, self.count).astype(np.intp))
        beyond = scaled >= self.count
        if beyond.any():                       # rare: rendered one by one
            for at in zip(*np.nonzero(beyond)):
                out[at] = orjson.dumps(float(scaled[at] / self.scale))
        return out


@lru_cache(maxsize=16)
def _times(first: int, steps: int) -> list[bytes]:
    """Hourly Unix times from `first` as JSON (the same for every request of an hour)."""
    return orjson.dumps(list(range(first, first + steps * 3600, 3600)))[1:-1].split(b",")


class Records:
    """Renders records with fixed keys: time, integer columns, then blocks of decimal columns
    (each block with its own number of decimals)."""

    def __init__(self, keys: tuple[str, ...], n_integers: int, block_decimals: tuple[int, ...],
                 tokens: dict[int, Tokens], integers: Tokens):
        self.keys = keys
        self.n_integers = n_integers
        self.block_decimals = block_decimals     # decimals of each block of decimal columns
        self.prefixes = np.array([b'},{"%b":' % keys[0].encode()]
                                 + [b',"%b":' % k.encode() for k in keys[1:]], dtype=object)
        self.tokens, self.integers = tokens, integers

    def render(self, first: int, integers: np.ndarray, *values: np.ndarray
               ) -> tuple[bytes, bytes]:
        """(JSON of the first record, JSON array of all) for hours from `first` (Unix s):
        integers is (n_integers, steps), then the decimal columns as (steps, k) blocks."""
        steps = integers.shape[1]
        cells = np.empty((steps, 2 * len(self.keys)), dtype=object)
        cells[:, 0::2] = self.prefixes
        cells[:, 1] = _times(first, steps)
        cells[:, 3:2 + 2 * self.n_integers:2] = self.integers.render(integers.T)
        at = 3 + 2 * self.n_integers
        for block, decimals in zip(values, self.block_decimals):
            width = block.shape[1]
            cells[:, at:at + 2 * width:2] = self.tokens[decimals].render(block)
            at += 2 * width
        cells[0, 0] = cells[0, 0][2:]           # no "}," before the first record
        parts = cells.ravel().tolist()
        width = cells.shape[1]
        return b"".join(parts[:width]) + b"}", b"[" + b"".join(parts) + b"}]"
