"""JSON of a point's hourly records, written from the columns of a block by compiled code.

A hundred hours of fifteen numbers is the bulk of an air-quality answer. kernels
writes them digit by digit into one byte buffer: the same bytes as a dict per record through
orjson (numbers rounded half to even as numpy rounds, NaN and infinities as null, a negative
value that rounds to zero as 0 without a sign), without a Python object per number. A number
too large for that (beyond server.kernels.json_numbers.DIGITS_LIMIT), or a negative time,
sends the answer through orjson (Records.orjson, the same rules).
"""

from __future__ import annotations

import math

import numpy as np
import orjson

from server.air_quality import kernels

NUMBER_BYTES = 20  # "-", 15 digits, "0", "." and room: any number render writes


class Records:
    """Records with fixed keys: the time, then one field per further key."""

    # Field f reads column sources[f] of a block (-1: always null), rounded to decimals[f]
    # (0: an integer).

    def __init__(
        self,
        keys: tuple[str, ...],
        decimals: tuple[int, ...],
        sources: tuple[int, ...] | None = None,
    ):
        assert len(decimals) == len(keys) - 1
        self.keys = keys
        self.decimals = np.array(decimals, dtype=np.int64)
        self.sources = np.array(
            range(len(decimals)) if sources is None else sources, dtype=np.int64
        )
        parts = [b'{"%b":' % keys[0].encode()] + [b',"%b":' % k.encode() for k in keys[1:]]
        if max(map(len, parts)) > kernels.KEY_BYTES:
            raise ValueError(f"a key is longer than {kernels.KEY_BYTES - 4} characters")
        self.key_bytes = np.frombuffer(b"".join(parts) + bytes(kernels.KEY_BYTES), dtype=np.uint8)
        self.key_end = np.cumsum([len(p) for p in parts]).astype(np.int64)
        self.record_bytes = int(self.key_end[-1]) + NUMBER_BYTES * len(keys) + 2
        # kernel.render's arguments after the block
        self.arrays = (self.sources, self.decimals, self.key_bytes, self.key_end)

    def buffer(self, steps: int) -> np.ndarray:
        """Room for `steps` records as a JSON array."""
        return np.empty(2 + steps * self.record_bytes + kernels.KEY_BYTES, dtype=np.uint8)

    def render(self, first: int, block: np.ndarray, dt_s: int = 3600) -> tuple[bytes, bytes]:
        """(JSON of the first record, JSON array of all) of block's rows; bytes-like."""
        # block is (steps, columns); row k is the time first + k * dt_s (Unix s).
        out = self.buffer(block.shape[0])
        end, first_end = kernels.render(
            np.ascontiguousarray(block, dtype=np.float64), *self.arrays, first, dt_s, out
        )
        return self.split(out, end, first_end) if end >= 0 else self.orjson(first, block, dt_s)

    @staticmethod
    def split(out: np.ndarray, end: int, first_end: int) -> tuple[memoryview, memoryview]:
        """(first record, whole array) of what kernel.render wrote, as views of out."""
        view = memoryview(out)
        return view[1:first_end], view[:end]

    def orjson(self, first: int, block: np.ndarray, dt_s: int) -> tuple[bytes, bytes]:
        """The same through a dict per record (numbers beyond the kernel's)."""
        records = []
        for k, row in enumerate(block):
            record = {self.keys[0]: first + k * dt_s}
            for key, source, decimals in zip(self.keys[1:], self.sources, self.decimals):
                value = float(row[source]) if source >= 0 else math.nan
                record[key] = number(value, int(decimals))
            records.append(record)
        return orjson.dumps(records[0]), orjson.dumps(records)


def number(value: float, decimals: int) -> float | int | None:
    """A value rounded to decimals as numpy rounds (an int when 0); None when not finite."""
    if not math.isfinite(value):
        return None
    rounded = float(np.rint(value * 10.0**decimals) / 10.0**decimals) + 0.0  # no -0.0
    return rounded if decimals else int(rounded)
