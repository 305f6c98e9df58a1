"""Artifact columns read in place (server.artifacts.mapped)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from server.artifacts.mapped import NullableNumbers


@pytest.mark.parametrize("start", [0, 1, 3, 9])
def test_nullable_numbers_read_values_and_nulls_in_place(start):
    values = [5, None, 7, 0, None, 9, 11, None, 13, 2, None, 4]
    array = pa.array(values, pa.int64()).slice(start)  # a slice keeps its bit offset
    column = NullableNumbers(array)
    rows = np.arange(len(array))[::-1]
    expected = [values[start + r] if values[start + r] is not None else -1 for r in rows]
    assert column.take(rows, fill=-1).tolist() == expected
    assert NullableNumbers(pa.array([1, 2], pa.int32())).take(np.array([1, 0])).tolist() == [2, 1]
