"""The compiled record writer writes exactly what a dict per record through orjson writes."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from server.air_quality import kernels
from server.air_quality.records import Records
from server.kernels import json_numbers

TIME0 = 1_795_392_000


def reference(keys, times, values, decimals, sources=None) -> tuple[bytes, bytes]:
    """A dict per record through orjson: numbers rounded as numpy rounds, a rounded zero
    without a sign, NaN and infinities as null."""
    sources = range(len(decimals)) if sources is None else sources
    rows = []
    for t, row in zip(times, values):
        record = {keys[0]: t}
        for key, source, d in zip(keys[1:], sources, decimals):
            value = row[source] if source >= 0 else np.nan
            rounded = float(np.round(value, d)) if np.isfinite(value) else None
            rounded = 0.0 if rounded == 0 else rounded
            record[key] = rounded if d or rounded is None else int(rounded)
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
    values[5, 2:] = [0.05, 0.0005, 0.15]  # ties: half to even, as numpy
    values[6, 2:] = [99.96, 1.0, 100.04]
    values[7, 0], values[7, 2] = 600, 1e6
    values[8] = np.nan
    values[9] = [-3.0, -0.4, -0.04, -0.0004, -12.34]  # negative; rounded zeros unsigned
    assert rendered(records, times[0], values) == reference(keys, times, values, decimals)


def test_fields_read_their_source_columns_and_absent_ones_are_null():
    keys, decimals, sources = ("time", "b", "a", "none"), (1, 0, 1), (1, 0, -1)
    values = np.array([[1.0, 2.25], [3.5, np.nan]])
    records = Records(keys, decimals, sources)
    assert rendered(records, TIME0, values) == reference(
        keys, [TIME0, TIME0 + 3600], values, decimals, sources
    )


@pytest.mark.parametrize("decimals, limit", [(0, 100_001), (1, 200_001), (3, 100_001)])
def test_every_number_is_written_as_orjson_writes_it(decimals, limit):
    """Every multiple of the last decimal up to `limit` of them, and random values up to the
    kernel's digit limit (15 significant digits)."""
    rng = np.random.default_rng(decimals)
    exact = np.arange(limit) / 10.0**decimals
    large = 10.0 ** rng.uniform(0, np.log10(json_numbers.DIGITS_LIMIT) - decimals - 0.01, 100_000)
    values = np.concatenate([exact, large, -large[:1000]])[:, None]
    records = Records(("time", "v"), (decimals,))
    times = list(range(TIME0, TIME0 + 3600 * len(values), 3600))
    assert rendered(records, TIME0, values) == reference(("time", "v"), times, values, (decimals,))


def test_numbers_beyond_the_digits_go_through_orjson():
    keys, decimals = ("time", "v", "w"), (1, 3)
    values = np.array([[1.5, 0.25], [3e20, 1e13], [2.0, -5e14]])
    records = Records(keys, decimals)
    out = records.buffer(len(values))
    assert kernels.render(values, *records.arrays, TIME0, 3600, out) == (-1, -1)
    assert rendered(records, TIME0, values) == reference(
        keys, [TIME0 + 3600 * k for k in range(3)], values, decimals
    )


NEGATIVE = np.array(
    [
        [-5.3, -1234.56, -0.0004],
        [-0.4, -0.04, -0.0],
        [-np.inf, np.inf, np.nan],
        [-3.5, -2.25, -0.0015],
        [-499.6, -0.05, -9.9996],
    ]
)
NEGATIVE_JSON = (
    b'[{"time":1795392000,"a":-5,"b":-1234.6,"c":0.0},'
    b'{"time":1795395600,"a":0,"b":0.0,"c":0.0},'
    b'{"time":1795399200,"a":null,"b":null,"c":null},'
    b'{"time":1795402800,"a":-4,"b":-2.2,"c":-0.002},'
    b'{"time":1795406400,"a":-500,"b":0.0,"c":-10.0}]'
)


def test_negative_and_infinite_values_render_as_themselves_or_null():
    """A negative value renders as its own rounded value (a rounded zero as 0), never as
    another number; infinities are null (docs/api/conventions.md#numbers); both paths write
    the same."""
    records = Records(("time", "a", "b", "c"), (0, 1, 3))
    current, hourly = rendered(records, TIME0, NEGATIVE)
    assert hourly == NEGATIVE_JSON and current == orjson.dumps(orjson.loads(hourly)[0])
    assert (
        hourly
        == reference(records.keys, [TIME0 + 3600 * k for k in range(5)], NEGATIVE, (0, 1, 3))[1]
    )
    assert records.orjson(TIME0, NEGATIVE, 3600)[1] == hourly  # the fallback path


def test_negative_times_and_huge_negative_values_go_through_orjson_correctly():
    records = Records(("time", "a", "b"), (0, 1))
    huge = np.array([[-1e16, -2.5], [-np.inf, -7e14]])
    for time0, values in ((TIME0, huge), (-7200, NEGATIVE[:, :2])):
        times = [time0 + 3600 * k for k in range(len(values))]
        assert kernels.render(
            values, *records.arrays, time0, 3600, records.buffer(len(values))
        ) == (-1, -1)
        assert rendered(records, time0, values) == reference(records.keys, times, values, (0, 1))
