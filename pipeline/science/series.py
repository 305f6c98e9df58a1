"""Hourly series: model steps interpolated to hours, trailing window means (NaN-aware)."""

from __future__ import annotations

import numpy as np

# A window mean needs at least this share of its hours known (EPA's 75 % completeness rule).
MIN_WINDOW_SHARE = 0.75


def to_hours(values: np.ndarray, step_hours: np.ndarray, hours: np.ndarray) -> np.ndarray:
    """Linear interpolation along axis 0 from steps at `step_hours` to whole `hours`.

    Hours outside the steps' range are NaN; an hour on a step takes that step's value alone
    (so a NaN neighbour does not spoil it); between two steps a NaN end gives NaN."""
    steps = np.asarray(step_hours, dtype=np.float64)
    hours = np.asarray(hours, dtype=np.float64)
    out_shape = (len(hours),) + values.shape[1:]
    if len(steps) == len(hours) and np.array_equal(steps, hours):
        return np.asarray(values, dtype=np.float32)
    out = np.full(out_shape, np.nan, dtype=np.float32)
    inside = (hours >= steps[0]) & (hours <= steps[-1])
    for k in np.flatnonzero(inside):
        i = min(int(np.searchsorted(steps, hours[k], side="right")) - 1, len(steps) - 1)
        if steps[i] == hours[k] or i == len(steps) - 1:
            out[k] = values[i]
            continue
        f = (hours[k] - steps[i]) / (steps[i + 1] - steps[i])
        out[k] = values[i] * np.float32(1 - f) + values[i + 1] * np.float32(f)
    return out


def trailing_mean(values: np.ndarray, window: int, axis: int = 0,
                  min_share: float = MIN_WINDOW_SHARE) -> np.ndarray:
    """Mean of the `window` values ending at each index along `axis` (the index included).

    Unknown (NaN) values are skipped; a mean over fewer than `min_share` of the window's
    values is NaN, which also covers the first indices of the series, whose windows reach
    before its start."""
    values = np.moveaxis(np.asarray(values), axis, 0)
    known = ~np.isnan(values)
    sums = np.cumsum(np.where(known, values, 0.0), axis=0, dtype=np.float64)
    counts = np.cumsum(known, axis=0, dtype=np.int32)
    sums[window:] -= sums[:-window].copy()
    counts[window:] -= counts[:-window].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    mean[counts < int(np.ceil(min_share * window))] = np.nan
    return np.moveaxis(mean.astype(np.float32), 0, axis)
