"""The column-wise record renderer writes exactly what a dict per record through orjson writes."""

from __future__ import annotations

import numpy as np
import orjson

from server.areas.air_quality import NUMBERS
from server.areas.air_quality_json import Numbers, Records


def reference(keys, times, values, decimals) -> tuple[bytes, bytes]:
    """A dict per record, numbers rounded as numpy rounds, NaN as null, through orjson."""
    rows = []
    for t, row in zip(times, values):
        record = {keys[0]: t}
        for key, value, d in zip(keys[1:], row, decimals):
            rounded = float(np.round(value, d))
            record[key] = None if np.isnan(value) else (rounded if d else int(rounded))
        rows.append(record)
    return orjson.dumps(rows[0]), orjson.dumps(rows)


def test_records_match_dicts_through_orjson():
    rng = np.random.default_rng(5)
    keys = ("time", "a", "b", "x", "y", "z")
    decimals = (0, 0, 1, 3, 1)
    records = Records(keys, decimals, Numbers({0: 501, 1: 1000, 3: 1000}))
    steps = 50
    times = list(range(1_795_392_000, 1_795_392_000 + 3600 * steps, 3600))
    values = rng.uniform(0, 1, (steps, 5)) * np.array([500, 500, 150, 1.5, 150])
    values[3, 1] = np.nan
    values[5, 2:] = [0.05, 0.0005, 0.15]          # ties: half to even, as numpy
    values[6, 2:] = [99.96, 1.0, 100.04]          # at and beyond the table (100.0 is 1000th)
    values[7, 0], values[7, 2] = 600, 1e6         # beyond the tables: rendered one by one
    values[8] = np.nan
    assert records.render(times[0], values) == reference(keys, times, values, decimals)


def test_the_served_token_tables_are_what_orjson_writes():
    for decimals, limit in NUMBERS.limits.items():
        start = NUMBERS.offset[decimals]
        expected = [orjson.dumps(k / 10 ** decimals if decimals else k) for k in range(limit)]
        assert NUMBERS.table[start:start + limit].tolist() == expected
    assert NUMBERS.table[NUMBERS.null] == b"null"
