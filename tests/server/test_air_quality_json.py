"""The column-wise record renderer writes exactly what a dict per record through orjson writes."""

from __future__ import annotations

import numpy as np
import orjson

from server.areas.air_quality_json import Records, Tokens


def reference(keys, times, integers, values, decimals):
    """A dict per record, numbers rounded as numpy rounds, NaN as null, through orjson."""
    rows = []
    for i, t in enumerate(times):
        row = {keys[0]: t}
        for k in range(integers.shape[0]):
            v = integers[k, i]
            row[keys[1 + k]] = None if np.isnan(v) else int(v)
        for k, d in enumerate(decimals):
            v = values[i, k]
            row[keys[1 + integers.shape[0] + k]] = None if np.isnan(v) else float(np.round(v, d))
        rows.append(row)
    return orjson.dumps(rows[0]), orjson.dumps(rows)


def test_records_match_dicts_through_orjson():
    rng = np.random.default_rng(5)
    keys = ("time", "a", "b", "x", "y", "z")
    decimals = (1, 3, 1)
    tokens = {1: Tokens(1, 1000), 3: Tokens(3, 1000)}
    records = Records(keys, 2, (1, 3, 1), tokens, Tokens(0, 501))     # three one-column blocks
    steps = 50
    times = list(range(1_795_392_000, 1_795_392_000 + 3600 * steps, 3600))
    integers = np.floor(rng.uniform(0, 500, (2, steps)))
    integers[1, 3] = np.nan
    values = rng.uniform(0, 150, (steps, 3)) * np.array([1, 0.01, 1])
    values[5] = [0.05, 0.0005, 0.15]              # ties: half to even, as numpy
    values[6] = [99.96, 1.0, 100.04]              # at and beyond the table (100.0 is index 1000)
    values[7, 0] = 1e6
    values[8] = np.nan
    first, everything = records.render(times[0], integers, values[:, :1], values[:, 1:2],
                                       values[:, 2:])
    assert (first, everything) == reference(keys, times, integers, values, decimals)


def test_tokens_render_rounded_numbers_and_null():
    tokens = Tokens(1, 100)
    out = tokens.render(np.array([0.0, 0.04, 2.25, 9.95, np.nan, 123.4]))
    assert out.tolist() == [b"0.0", b"0.0", b"2.2", b"10.0", b"null", b"123.4"]


def test_the_served_token_tables_are_what_orjson_writes():
    from server.areas.air_quality import _INDEX_TOKENS, _TOKENS
    for tokens in (*_TOKENS.values(), _INDEX_TOKENS):
        decimals = round(np.log10(tokens.scale))
        expected = [orjson.dumps(k / tokens.scale if decimals else k)
                    for k in range(tokens.count)] + [b"null"]
        assert tokens.table.tolist() == expected
