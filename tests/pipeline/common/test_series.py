"""Hourly series: model steps to hours, and the trailing window means behind the US AQI."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.common.series import to_hours, trailing_mean


def test_three_hourly_steps_become_hours():
    steps = np.array([0, 3, 6])
    values = np.array([[0.0], [3.0], [9.0]], dtype=np.float32)
    out = to_hours(values, steps, np.arange(-1, 8))
    assert np.isnan(out[0, 0]) and np.isnan(out[-1, 0])  # outside the steps
    np.testing.assert_allclose(out[1:8, 0], [0, 1, 2, 3, 5, 7, 9])


def test_hours_on_steps_keep_their_value_next_to_unknown_steps():
    values = np.array([[1.0], [np.nan], [4.0]], dtype=np.float32)
    out = to_hours(values, np.array([0, 3, 6]), np.arange(7))
    assert out[0, 0] == 1.0 and out[6, 0] == 4.0
    assert np.isnan(out[1:6, 0]).all()


def test_hourly_steps_pass_through():
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert np.array_equal(to_hours(values, np.arange(3), np.arange(3)), values)


def test_trailing_mean_includes_the_hour_itself():
    values = np.arange(1.0, 11.0)
    out = trailing_mean(values, window=4, min_share=0.75)
    # index 3: mean of 1..4; index 9: mean of 7..10; index 2: 3 of 4 values (75 %) known
    assert out[3] == pytest.approx(2.5) and out[9] == pytest.approx(8.5)
    assert out[2] == pytest.approx(2.0) and np.isnan(out[1])


def test_trailing_mean_skips_unknown_hours_and_needs_three_quarters():
    values = np.full(30, 10.0)
    values[5:10] = np.nan  # five of the last 24 unknown at index 23
    values[10:12] = 40.0
    out = trailing_mean(values, window=24)
    assert out[23] == pytest.approx((17 * 10 + 2 * 40) / 19)
    sparse = np.full(30, np.nan)
    sparse[::2] = 1.0  # half known: below 75 %
    assert np.isnan(trailing_mean(sparse, window=24)[29])


def test_trailing_mean_along_another_axis():
    values = np.stack([np.arange(8.0), np.arange(8.0) * 2])  # (2, 8): time on axis 1
    out = trailing_mean(values, window=8, axis=1)
    assert out.shape == (2, 8) and out[0, 7] == pytest.approx(3.5) and out[1, 7] == 7.0
    assert out.dtype == np.float32
