"""The air-quality answer's per-request loops, compiled with numba.

An answer is about a hundred hours of some twenty values: bilinear at the point, two indices
from the published tables, and some 1,500 numbers written as JSON. As numpy expressions that
was a few hundred small array operations and a Python object per number, whose fixed costs
were most of a request; as compiled loops over the point's four cells (read from the grid) it
is a few tens of microseconds. The tables and the record layout stay in index and
records, which pass them here as arrays. Compiled once per machine (cache=True writes
next to this file, or to NUMBA_CACHE_DIR) and warmed by the loader, so no request waits for the
compiler.

Indices are cast to unsigned (_u) in the loops: numba then skips its negative-index check,
which otherwise costs more than the look-ups themselves. Helpers take scalars, not arrays
(passing an array to a compiled call costs more than a table look-up).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types, uint64 as _u
from numba.core import cgutils
from numba.extending import intrinsic

from contract import AirQuality as AQ
from server.kernels import json_numbers

_SLACK, _HALF_UP, _CAP = AQ.TRUNCATION_SLACK, AQ.HALF_UP_SLACK, AQ.INDEX_CAP
# Keys are copied KEY_BYTES at a time: the key table and the output have that much room after
# their ends (a key is at most that long; the bytes copied past a key are overwritten).
KEY_BYTES = 32
# evaluate() keeps one bit per index input (which were above their table) in an int64.
MAX_INPUTS = 63
# Geometry of a grid as corners() takes it (PointGrid's attributes).
GEOMETRY = ("lat0", "dlat", "nlat", "lon0", "dlon", "nlon", "wraps")


@njit(cache=True, nogil=True)
def corners(geometry, lat, lon):
    """PointGrid.corners, the same arithmetic."""
    # Returns rows i0, i1, columns j0, j1 and the weights of (i0, j0), (i0, j1), (i1, j0),
    # (i1, j1).
    lat0, dlat, nlat, lon0, dlon, nlon, wraps = geometry
    y = min(max((lat - lat0) / dlat, 0.0), nlat - 1.0)
    i0 = min(int(y), int(nlat) - 2) if nlat > 1 else 0
    i1, fy = min(i0 + 1, int(nlat) - 1), y - i0
    x = ((lon - lon0) % 360.0) / dlon
    if wraps:
        j0 = int(x) % int(nlon)
        j1, fx = (j0 + 1) % int(nlon), x - math.floor(x)
    else:
        if x > nlon - 1 + (360.0 / dlon - nlon + 1) / 2:
            x -= 360.0 / dlon  # just west of lon0, within half a cell
        x = min(max(x, 0.0), nlon - 1.0)
        j0 = min(int(x), int(nlon) - 2) if nlon > 1 else 0
        j1, fx = min(j0 + 1, int(nlon) - 1), x - j0
    return (i0, i1, j0, j1,
            (1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx)


@njit(cache=True, nogil=True)
def bilinear(cell, weights, first, stop, columns, out):
    """out[t - first, c] = column c at the point, for steps [first, stop), from its four cells
    (PointGrid.block of the rows and columns corners() gives) and their weights."""
    # For c in `columns` (other columns untouched): PointGrid.series element by element, a NaN
    # corner dropping out and the others' weights renormalised, NaN where all four are unknown.
    w0, w1, w2, w3 = weights
    c0, c1 = cell[0, 0], cell[0, 1]                    # (ntime, nvar) each
    c2, c3 = cell[1, 0], cell[1, 1]
    for t in range(first, stop):
        row = out[_u(t - first)]
        for c in columns:
            i, j = _u(t), _u(c)
            total = w0 * c0[i, j] + w1 * c1[i, j] + w2 * c2[i, j] + w3 * c3[i, j]
            if math.isnan(total):              # some corner unknown (rare): renormalise
                total = _known(w0, c0[i, j], w1, c1[i, j], w2, c2[i, j], w3, c3[i, j])
            row[j] = total


@njit(cache=True, nogil=True)
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
    """Each index g of every row of block into block[:, targets[g]] (NaN when unknown)."""
    # The result is float, integer-valued. Input i reads column inputs[i, 0] for index
    # inputs[i, 1] through the table xp/fp[inputs[i, 2]:inputs[i, 3]] (slopes: numpy's slope
    # of each segment), and counts only where input inputs[i, 4] was above its table (-1:
    # always); limits[i] = (scale, truncation factor or 0, below, above, required) as
    # contract.AirQuality.AQI_TABLES describes. Inputs are grouped by index.
    for t in range(block.shape[0]):
        i = 0
        above = 0                                      # bit r: input r was above its table
        for g in range(len(targets)):
            best = np.nan
            unknown = False
            while i < inputs.shape[0] and inputs[_u(i), 1] == g:
                r = _u(i)
                i += 1
                gate = inputs[r, 4]
                if gate >= 0 and not (above >> gate) & 1:
                    continue                           # counts only above the gate's table
                x = block[_u(t), _u(inputs[r, 0])] * limits[r, 0]
                if math.isnan(x):
                    unknown = unknown or limits[r, 4] != 0.0
                    continue
                if limits[r, 1] != 0.0:
                    x = np.floor(x * limits[r, 1] + _SLACK) / limits[r, 1]
                # np.interp(x, xp[a:b], fp[a:b], below, above) with numpy's arithmetic
                a, b = inputs[r, 2], inputs[r, 3] - 1
                if x < xp[_u(a)]:
                    part = limits[r, 2]
                elif x >= xp[_u(b)]:
                    if x == xp[_u(b)]:
                        part = fp[_u(b)]
                    else:
                        part = limits[r, 3]
                        above |= 1 << (i - 1)          # i - 1 is r, signed
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


@intrinsic
def _copy_key(typingctx, out, at, keys, start):
    """out[at:at + KEY_BYTES] = keys[start:start + KEY_BYTES], as one memcpy."""
    # A byte loop, or a slice assignment, costs several times more.
    def codegen(context, builder, signature, args):
        out_array = context.make_array(signature.args[0])(context, builder, args[0])
        keys_array = context.make_array(signature.args[2])(context, builder, args[2])
        cgutils.raw_memcpy(builder, builder.gep(out_array.data, [args[1]]),
                           builder.gep(keys_array.data, [args[3]]),
                           context.get_constant(types.intp, KEY_BYTES), 1)
        return context.get_dummy_value()
    return types.void(out, at, keys, start), codegen


@njit(cache=True, nogil=True)
def render(block, sources, decimals, keys, key_end, time0, dt_s, out):
    """The JSON array of block's rows as records in out; returns (end, end of first record)."""
    # Each record is '{"time":' time0 + row * dt_s, then for each field f its key
    # keys[key_end[f]:key_end[f + 1]] (with its leading comma) and column sources[f] (-1:
    # null) rounded to decimals[f], as Records.orjson writes them (json_numbers.put_rounded
    # not as_float: non-finite as null, an integer for 0 decimals, a rounded zero without a
    # sign). (-1, -1) when a number is beyond json_numbers.DIGITS_LIMIT or a time is
    # negative. keys and out need KEY_BYTES of room past their ends.
    if min(time0, time0 + (block.shape[0] - 1) * dt_s) < 0:
        return -1, -1                                  # times are written without a sign
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
        _copy_key(out, n, keys, 0)
        n = json_numbers.put_digits(out, n + key_end[0], time0 + t * dt_s, 0)
        row = block[_u(t)]
        for f in range(len(sources)):
            a, b = key_end[_u(f)], key_end[_u(f + 1)]
            _copy_key(out, n, keys, a)
            n += b - a
            source = sources[_u(f)]
            value = row[_u(source)] if source >= 0 else np.nan
            n = json_numbers.put_rounded(out, n, np.rint(value * power[_u(f)]),
                                         decimals[_u(f)], False)
            if n < 0:
                return -1, -1
        out[_u(n)] = 125                               # "}"
        n += 1
        if t == 0:
            first_end = n
    out[_u(n)] = 93                                    # "]"
    return n + 1, first_end


@njit(cache=True, nogil=True)
def answer(cell, weights, first, columns, inputs, limits, xp, fp, slopes, targets, sources,
           decimals, keys, key_end, time0, dt_s, out):
    """bilinear, evaluate and render in one call; returns render()'s (end, first end)."""
    # The point's records from step `first` to the end of the grid as a JSON array in out;
    # the indices go to the block's columns after the grid's (targets are those).
    block = np.empty((cell.shape[2] - first, cell.shape[3] + len(targets)))
    bilinear(cell, weights, first, cell.shape[2], columns, block)
    evaluate(block, inputs, limits, xp, fp, slopes, targets)
    return render(block, sources, decimals, keys, key_end, time0, dt_s, out)
