"""The air-quality answer's per-request loops, compiled with numba.

An answer is about a hundred hours of some twenty values: bilinear at the point, two indices
from the published tables, and some 1,500 numbers written as JSON. As numpy expressions that
was a few hundred small array operations and a Python object per number, whose fixed costs
were most of a request; as compiled loops over the memory-mapped grid it is a few tens of
microseconds. The tables and the record layout stay in air_quality_index and
air_quality_json, which pass them here as arrays. Compiled once per machine (cache=True writes
next to this file, or to NUMBA_CACHE_DIR) and warmed by the loader, so no request waits for the
compiler.

Indices are cast to unsigned (_u) in the loops: numba then skips its negative-index check,
which otherwise costs more than the byte copies and table look-ups themselves.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, uint64 as _u

from contract import AirQuality as AQ

_SLACK, _HALF_UP, _CAP = AQ.TRUNCATION_SLACK, AQ.HALF_UP_SLACK, AQ.INDEX_CAP
# Numbers are written digit by digit while they scale to integers below this (15 significant
# digits: the digits are then the shortest round-trip form, which orjson writes); beyond it
# render() reports failure and the caller writes the answer through orjson.
DIGITS_LIMIT = 1e15
_NULL = np.frombuffer(b"null", dtype=np.uint8)
_POWERS = 10 ** np.arange(16, dtype=np.int64)


@njit(cache=True, nogil=True)
def bilinear(values, rows, cols, weights, first, stop, columns, out):
    """out[t - first, c] = the grid's column c at the point for steps [first, stop), for c in
    `columns` (other columns untouched): PointGrid.series element by element, a NaN corner
    dropping out and the others' weights renormalised, NaN where all four are unknown."""
    w0, w1, w2, w3 = weights[0], weights[1], weights[2], weights[3]
    c0, c1 = values[rows[0], cols[0]], values[rows[1], cols[1]]      # (ntime, nvar) each
    c2, c3 = values[rows[2], cols[2]], values[rows[3], cols[3]]
    for t in range(first, stop):
        row = out[_u(t - first)]
        for c in columns:
            i, j = _u(t), _u(c)
            total = w0 * c0[i, j] + w1 * c1[i, j] + w2 * c2[i, j] + w3 * c3[i, j]
            if math.isnan(total):              # some corner unknown (rare): renormalise
                total = _known(w0, c0[i, j], w1, c1[i, j], w2, c2[i, j], w3, c3[i, j])
            row[j] = total


@njit(cache=True, nogil=True, inline="always")
def _known(w0, x0, w1, x1, w2, x2, w3, x3):
    """The weighted mean of the known corners (NaN when their weights sum to ~0)."""
    total = weight = 0.0
    for w, x in ((w0, x0), (w1, x1), (w2, x2), (w3, x3)):
        if not math.isnan(x):
            total += w * x
            weight += w
    return total / weight if weight > 1e-12 else np.nan


@njit(cache=True, nogil=True)
def evaluate(block, inputs, limits, xp, fp, slopes, targets):
    """Each index g of every row of block into block[:, targets[g]] (float, integer-valued,
    NaN when unknown). Input i reads column inputs[i, 0] for index inputs[i, 1] through the
    table xp/fp[inputs[i, 2]:inputs[i, 3]] (slopes: numpy's slope of each segment);
    limits[i] = (scale, truncation factor or 0, below, above, required) as
    contract.AirQuality.AQI_TABLES describes. Inputs are grouped by index."""
    for t in range(block.shape[0]):
        i = 0
        for g in range(len(targets)):
            best = np.nan
            unknown = False
            while i < inputs.shape[0] and inputs[_u(i), 1] == g:
                r = _u(i)
                i += 1
                x = block[_u(t), _u(inputs[r, 0])] * limits[r, 0]
                if math.isnan(x):
                    unknown = unknown or limits[r, 4] != 0.0
                    continue
                if limits[r, 1] != 0.0:
                    x = np.floor(x * limits[r, 1] + _SLACK) / limits[r, 1]
                # np.interp(x, xp[a:b], fp[a:b], below, above) with numpy's arithmetic,
                # inline: a call passing the arrays costs more than the look-up
                a, b = inputs[r, 2], inputs[r, 3] - 1
                if x < xp[_u(a)]:
                    part = limits[r, 2]
                elif x >= xp[_u(b)]:
                    part = fp[_u(b)] if x == xp[_u(b)] else limits[r, 3]
                else:
                    while xp[_u(a + 1)] <= x:       # tables are short, values mostly low
                        a += 1
                    j = _u(a)
                    part = fp[j] if x == xp[j] else slopes[j] * (x - xp[j]) + fp[j]
                if part > best or math.isnan(best):
                    best = part
            if best > _CAP:
                best = _CAP
            block[_u(t), _u(targets[g])] = (np.nan if unknown
                                            else np.floor(best + 0.5 + _HALF_UP))


@njit(cache=True, nogil=True, inline="always")
def _copy(out, n, source, a, b):
    """Write source[a:b] at out[n:]; return the end."""
    for i in range(b - a):
        out[_u(n + i)] = source[_u(a + i)]
    return n + b - a


@njit(cache=True, nogil=True, inline="always")
def _number(out, n, value, decimals, power):
    """Write value rounded half to even to `decimals` (0: an integer; power = 10**decimals)
    as orjson writes it; return the end, or -1 when it is beyond DIGITS_LIMIT."""
    if math.isnan(value):
        return _copy(out, n, _NULL, 0, 4)
    scaled = np.rint(value * power)
    if not abs(scaled) < DIGITS_LIMIT:
        return -1
    k = int(scaled)
    if k < 0 or (decimals > 0 and math.copysign(1.0, scaled) < 0.0):
        out[_u(n)] = 45                                # "-" (also "-0.0", as orjson)
        n += 1
        k = -k
    size = 1                                           # digits of k
    while size < 16 and k >= _POWERS[_u(size)]:
        size += 1
    shown = decimals                                   # fraction digits: no trailing zeros
    while shown > 1 and k % 10 == 0:
        k //= 10
        shown -= 1
    whole = max(size - decimals, 1)
    end = n + whole + (shown + 1 if decimals else 0)
    p = end - 1
    if decimals:
        for _ in range(shown):
            out[_u(p)] = 48 + k % 10
            k //= 10
            p -= 1
        out[_u(p)] = 46                                # "."
        p -= 1
    for _ in range(whole):
        out[_u(p)] = 48 + k % 10
        k //= 10
        p -= 1
    return end


@njit(cache=True, nogil=True)
def render(block, sources, decimals, keys, key_end, time0, dt_s, out):
    """The JSON array of block's rows as records: '{"time":' time0 + row * dt_s, then for
    each field f its key keys[key_end[f]:key_end[f + 1]] (with its leading comma) and column
    sources[f] (-1: null) rounded to decimals[f]. Returns (end, end of the first record) in
    out, or (-1, -1) when a number is beyond DIGITS_LIMIT."""
    power = np.empty(len(decimals))
    for f in range(len(decimals)):
        power[f] = 10.0 ** decimals[f]
    n = 1
    first_end = 0
    out[0] = 91                                        # "["
    for t in range(block.shape[0]):
        if t:
            out[_u(n)] = 44                            # ","
            n += 1
        n = _copy(out, n, keys, 0, key_end[0])
        n = _number(out, n, float(time0 + t * dt_s), 0, 1.0)
        row = block[_u(t)]
        for f in range(len(sources)):
            n = _copy(out, n, keys, key_end[_u(f)], key_end[_u(f + 1)])
            source = sources[_u(f)]
            value = row[_u(source)] if source >= 0 else np.nan
            n = _number(out, n, value, decimals[_u(f)], power[_u(f)])
            if n < 0:
                return -1, -1
        out[_u(n)] = 125                               # "}"
        n += 1
        if t == 0:
            first_end = n
    out[_u(n)] = 93                                    # "]"
    return n + 1, first_end


@njit(cache=True, nogil=True)
def answer(values, rows, cols, weights, first, stop, columns, inputs, limits, xp, fp, slopes,
           targets, sources, decimals, keys, key_end, time0, dt_s, out):
    """bilinear, evaluate and render in one call: the point's records as a JSON array in out;
    returns render()'s (end, end of the first record)."""
    block = np.empty((stop - first, values.shape[3]))
    bilinear(values, rows, cols, weights, first, stop, columns, block)
    evaluate(block, inputs, limits, xp, fp, slopes, targets)
    return render(block, sources, decimals, keys, key_end, time0, dt_s, out)
