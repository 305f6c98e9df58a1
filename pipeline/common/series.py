"""Hourly series: model steps onto whole hours (interpolated, or NaN beyond the steps, or held
within a gap), accumulations de-accumulated to hourly rates, trailing window means (NaN-aware).

Arrays have time on axis 0 unless an `axis` is given; forecast times are Unix seconds (int64).
to_hours (air quality) leaves hours beyond the model steps unknown; interpolate (forecast) holds
the end values for up to MAX_GAP_S, because some forecast fields start an hour after the run
(averages and accumulations have no value at step 0).
"""

from __future__ import annotations

import numpy as np

from contract import HOUR_S

# A window mean needs at least this share of its hours known (EPA's 75 % completeness rule).
MIN_WINDOW_SHARE = 0.75
# A value is held or interpolated at most this far from the nearest model step.
MAX_GAP_S = 6 * HOUR_S


def to_hours(values: np.ndarray, step_hours: np.ndarray, hours: np.ndarray) -> np.ndarray:
    """Linear interpolation along axis 0 from steps at `step_hours` to whole `hours`."""
    # Hours outside the steps' range are NaN; an hour on a step takes that step's value alone
    # (so a NaN neighbour does not spoil it); between two steps a NaN end gives NaN.
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


def trailing_mean(
    values: np.ndarray, window: int, axis: int = 0, min_share: float = MIN_WINDOW_SHARE
) -> np.ndarray:
    """Mean of the `window` values ending at each index along `axis` (the index included)."""
    # Unknown (NaN) values are skipped; a mean over fewer than `min_share` of the window's
    # values is NaN, which also covers the first indices of the series, whose windows reach
    # before its start.
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


def hours(start_s: int, stop_s: int) -> np.ndarray:
    """Whole hours from the first at or after start_s to the last at or before stop_s."""
    first = -(-int(start_s) // HOUR_S) * HOUR_S
    return np.arange(first, int(stop_s) + 1, HOUR_S, dtype=np.int64)


def _bracket(times_s: np.ndarray, out_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each output time: the step at or before it, the next step, and the weight of the
    next one (0 on a step); out-of-range times clamp to the end steps."""
    right = (
        np.clip(np.searchsorted(times_s, out_s, side="right"), 1, len(times_s) - 1)
        if len(times_s) > 1
        else np.zeros(len(out_s), dtype=np.intp)
    )
    left = np.maximum(right - 1, 0)
    span = (times_s[right] - times_s[left]).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(span > 0, (out_s - times_s[left]) / span, 0.0)
    return left, right, np.clip(weight, 0.0, 1.0).astype(np.float32)


def _outside(times_s: np.ndarray, out_s: np.ndarray, max_gap_s: int) -> np.ndarray:
    """Output times too far before the first step or after the last one."""
    return (out_s < times_s[0] - max_gap_s) | (out_s > times_s[-1] + max_gap_s)


def interpolate(
    times_s: np.ndarray, values: np.ndarray, out_s: np.ndarray, max_gap_s: int = MAX_GAP_S
) -> np.ndarray:
    """Values linear in time between steps (states such as temperature or wind), held within
    max_gap_s beyond the first and last step, NaN further out."""
    left, right, weight = _bracket(times_s, out_s)
    # A time on a step (or held beyond the ends) takes that step's value alone, and only times
    # between two steps blend them: NaN * 0 is NaN, so a blend everywhere would let an unknown
    # neighbouring step blank a known one (as to_hours avoids too).
    out = values[left].astype(np.result_type(values.dtype, np.float32), copy=False)
    after = np.flatnonzero(weight == 1)
    out[after] = values[right[after]]
    between = np.flatnonzero((weight > 0) & (weight < 1))
    w = weight[between].reshape((-1,) + (1,) * (values.ndim - 1))
    out[between] = values[left[between]] * (np.float32(1) - w) + values[right[between]] * w
    out[_outside(times_s, out_s, max_gap_s)] = np.nan
    return out


def interval_rates(
    times_s: np.ndarray, amounts: np.ndarray, out_s: np.ndarray, max_gap_s: int = MAX_GAP_S
) -> np.ndarray:
    """Hourly rates from amounts per interval: amounts[k] fell between times_s[k] and
    times_s[k + 1]; every hour starting inside that interval gets amounts[k] / its length in
    hours (totals are conserved on whole-hour intervals). The last interval's rate is held
    up to max_gap_s after its end, NaN further out."""
    index = np.clip(np.searchsorted(times_s, out_s, side="right") - 1, 0, len(times_s) - 2)
    length_h = (np.diff(times_s).astype(np.float32) / HOUR_S).reshape(
        (-1,) + (1,) * (amounts.ndim - 1)
    )
    rates = amounts / length_h
    out = rates[index]
    out[_outside(times_s, out_s, max_gap_s)] = np.nan
    return out


def reset_steps(totals: np.ndarray, tolerance: float = 1e-3) -> np.ndarray:
    """Steps where an accumulation was reset: its field total fell (a true accumulation never
    decreases anywhere). `totals` holds each step's total over the whole field."""
    totals = np.asarray(totals, dtype=np.float64)
    resets = np.zeros(len(totals), dtype=bool)
    previous = totals[:-1]
    resets[1:] = totals[1:] < previous - tolerance * np.maximum(np.abs(previous), 1.0)
    return resets


def bucket_resets(times_s: np.ndarray, run_s: int, detected: np.ndarray) -> np.ndarray:
    """Resets at every step that follows a bucket boundary, the bucket length being the
    greatest common divisor of the boundaries found (a new bucket whose first amount exceeds
    the previous bucket's total is not seen as a fall, but its boundary is one of these)."""
    offsets = [int(times_s[k - 1] - run_s) for k in np.flatnonzero(detected) if k > 0]
    if not offsets:
        return detected
    period = int(np.gcd.reduce(np.asarray(offsets, dtype=np.int64)))
    if period <= 0:
        return detected
    resets = np.zeros(len(times_s), dtype=bool)
    resets[1:] = (times_s[:-1] - run_s) % period == 0
    return resets


def deaccumulate(accumulated: np.ndarray, resets: np.ndarray) -> np.ndarray:
    """Amounts per interval (len - 1 of them) from values accumulated since the run start or
    since the last bucket reset; after a reset the value is the amount since the previous step
    (GFS 6-hour buckets reset on a model step). Small negative noise is clipped to zero."""
    current = accumulated[1:]
    since = np.where(
        resets[1:].reshape((-1,) + (1,) * (accumulated.ndim - 1)), np.float32(0), accumulated[:-1]
    )
    return np.maximum(current - since, np.float32(0))


def bucket_averages_to_accumulations(
    times_s: np.ndarray, run_s: int, averages_mmh: np.ndarray, bucket_s: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rates averaged since the start of each step's bucket (GFS prate: 0-1, 0-2 ... 0-6,
    then 6-7 ... h averages; 120-123, 120-126 h in the 3-hourly range) as the amounts
    accumulated in the bucket (mm) and the resets of deaccumulate (steps whose bucket began
    at or after the step before)."""
    elapsed = np.asarray(times_s, dtype=np.int64) - int(run_s)
    start = np.where(elapsed > 0, (elapsed - 1) // bucket_s * bucket_s, 0)
    hours_in = (
        ((elapsed - start) / HOUR_S)
        .astype(np.float32)
        .reshape((-1,) + (1,) * (averages_mmh.ndim - 1))
    )
    # At the run time nothing has accumulated yet (GFS has no average at step 0).
    amounts = np.where(hours_in > 0, averages_mmh * hours_in, np.float32(0))
    resets = np.zeros(len(elapsed), dtype=bool)
    resets[1:] = start[1:] != start[:-1]
    return amounts.astype(np.float32), resets
