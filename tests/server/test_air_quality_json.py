"""The compiled record writer writes exactly what a dict per record through orjson writes."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from server.areas import air_quality_kernel as kernel
from server.areas.air_quality_json import Records

TIME0 = 1_795_392_000


def reference(keys, times, values, decimals, sources=None) -> tuple[bytes, bytes]:
    """A dict per record, numbers rounded as numpy rounds, NaN as null, through orjson."""
    sources = range(len(decimals)) if sources is None else sources
    rows = []
    for t, row in zip(times, values):
        record = {keys[0]: t}
        for key, source, d in zip(keys[1:], sources, decimals):
            value = row[source] if source >= 0 else np.nan
            rounded = float(np.round(value, d))
            record[key] = None if np.isnan(value) else (rounded if d else int(rounded))
        rows.append(record)
    return orjson.dumps(rows[0]), orjson.dumps(rows)


def rendered(records: Records, first: int, values: np.ndarray) -> tuple[bytes, bytes]:
    current, hourly = records.render(first, values)
    return bytes(current), bytes(hourly)


def test_records_match_dicts_through_orjson():
    rng = np.random.default_rng(5)
    keys = ("time", "a", "b", "x", "y", "z")
    decimals = (0, 0, 1, 3, 1)
    records = Records(keys, decimals)
    steps = 50
    times = list(range(TIME0, TIME0 + 3600 * steps, 3600))
    values = rng.uniform(0, 1, (steps, 5)) * np.array([500, 500, 150, 1.5, 150])
    values[3, 1] = np.nan
    values[5, 2:] = [0.05, 0.0005, 0.15]          # ties: half to even, as numpy
    values[6, 2:] = [99.96, 1.0, 100.04]
    values[7, 0], values[7, 2] = 600, 1e6
    values[8] = np.nan
    values[9] = [-3.0, -0.4, -0.04, -0.0004, -12.34]   # negative, and "-0.0" as orjson
    assert rendered(records, times[0], values) == reference(keys, times, values, decimals)


def test_fields_read_their_source_columns_and_absent_ones_are_null():
    keys, decimals, sources = ("time", "b", "a", "none"), (1, 0, 1), (1, 0, -1)
    values = np.array([[1.0, 2.25], [3.5, np.nan]])
    records = Records(keys, decimals, sources)
    assert rendered(records, TIME0, values) == reference(keys, [TIME0, TIME0 + 3600], values,
                                                         decimals, sources)


@pytest.mark.parametrize("decimals, limit", [(0, 100_001), (1, 200_001), (3, 100_001)])
def test_every_number_is_written_as_orjson_writes_it(decimals, limit):
    """Every multiple of the last decimal up to `limit` of them, and random values up to the
    kernel's digit limit (15 significant digits)."""
    rng = np.random.default_rng(decimals)
    exact = np.arange(limit) / 10.0 ** decimals
    large = 10.0 ** rng.uniform(0, np.log10(kernel.DIGITS_LIMIT) - decimals - 0.01, 100_000)
    values = np.concatenate([exact, large, -large[:1000]])[:, None]
    records = Records(("time", "v"), (decimals,))
    times = list(range(TIME0, TIME0 + 3600 * len(values), 3600))
    assert rendered(records, TIME0, values) == reference(("time", "v"), times, values,
                                                         (decimals,))


def test_numbers_beyond_the_digits_go_through_orjson():
    keys, decimals = ("time", "v", "w"), (1, 3)
    values = np.array([[1.5, 0.25], [3e20, 1e13], [2.0, -5e14]])
    records = Records(keys, decimals)
    out = records.buffer(len(values))
    assert kernel.render(values, *records.arrays, TIME0, 3600, out) == (-1, -1)
    assert rendered(records, TIME0, values) == reference(
        keys, [TIME0 + 3600 * k for k in range(3)], values, decimals)
