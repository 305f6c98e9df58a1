"""JSON of a point's hourly records, assembled from columns without a dict per record.

A hundred hours of fifteen numbers is the bulk of an air-quality answer. Every number is
rounded and looked up in one table of pre-rendered tokens (the bytes orjson writes for it), the
tokens are placed between the keys in one object array, and the whole is joined once: the same
bytes as a dict per record through orjson, for a fraction of the cost.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import orjson

NULL = b"null"


class Numbers:
    """Pre-rendered JSON of k / 10**d for 0 <= k < limits[d], each d end to end; null last."""

    def __init__(self, limits: dict[int, int]):
        tokens: list[bytes] = []
        self.offset = {}
        for decimals, limit in sorted(limits.items()):
            self.offset[decimals] = len(tokens)
            scale = 10.0 ** decimals
            # repr is orjson's shortest round-trip form here (no exponent below 1e16), and
            # unlike orjson.dumps it keeps no 4 KiB buffer behind each token.
            tokens += [repr(k / scale if decimals else k).encode() for k in range(limit)]
        self.limits = dict(limits)
        self.table = np.array(tokens + [NULL], dtype=object)
        self.null = len(tokens)


class Records:
    """Renders records with fixed keys: the time, then numeric columns, each rounded to its
    own number of decimals (0: an integer)."""

    def __init__(self, keys: tuple[str, ...], decimals: tuple[int, ...], numbers: Numbers):
        assert len(decimals) == len(keys) - 1
        self.keys, self.decimals, self.numbers = keys, decimals, numbers
        self.scale = np.array([10.0 ** d for d in decimals])
        self.limit = np.array([numbers.limits[d] for d in decimals], dtype=np.float64)
        self.offset = np.array([numbers.offset[d] for d in decimals], dtype=np.float64)
        self.prefixes = np.array([b'},{"%b":' % keys[0].encode()]
                                 + [b',"%b":' % k.encode() for k in keys[1:]], dtype=object)

    def tokens(self, values: np.ndarray) -> np.ndarray:
        """The JSON of each non-negative value (steps, columns), rounded half to even as numpy
        rounds; NaN is null."""
        scaled = values * self.scale
        np.rint(scaled, out=scaled)
        # NaN compares false: it takes the null entry, like values beyond the tables.
        index = np.where(scaled < self.limit, scaled + self.offset, self.numbers.null)
        out = self.numbers.table.take(index.astype(np.intp))
        beyond = scaled >= self.limit
        if beyond.any():                       # rare: rendered one by one
            for row, col in zip(*np.nonzero(beyond)):
                number = float(scaled[row, col] / self.scale[col])
                out[row, col] = orjson.dumps(number if self.decimals[col] else int(number))
        return out

    def render(self, first: int, values: np.ndarray) -> tuple[bytes, bytes]:
        """(JSON of the first record, JSON array of all) for the hours from `first` (Unix s),
        values holding one row per hour and one column per key after the time."""
        steps = values.shape[0]
        cells = np.empty((steps, 2 * len(self.keys)), dtype=object)
        cells[:, 0::2] = self.prefixes
        cells[:, 1] = _times(first, steps)
        cells[:, 3::2] = self.tokens(values)
        cells[0, 0] = cells[0, 0][2:]           # no "}," before the first record
        parts = cells.ravel().tolist()
        return b"".join(parts[:cells.shape[1]]) + b"}", b"[" + b"".join(parts) + b"}]"


@lru_cache(maxsize=16)
def _times(first: int, steps: int) -> list[bytes]:
    """Hourly Unix times from `first` as JSON (the same for every request of an hour)."""
    return orjson.dumps(list(range(first, first + steps * 3600, 3600)))[1:-1].split(b",")
