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
from numba import njit, types
from numba import uint64 as _u
from numba.core import cgutils
from numba.extending import intrinsic

from contract import AirQuality as AQ
from server.kernels import json_numbers
from server.kernels.bilinear import series

_SLACK, _HALF_UP, _CAP = AQ.TRUNCATION_SLACK, AQ.HALF_UP_SLACK, AQ.INDEX_CAP
# Keys are copied KEY_BYTES at a time: the key table and the output have that much room after
# their ends (a key is at most that long; the bytes copied past a key are overwritten).
KEY_BYTES = 32
# evaluate() keeps one bit per index input (which were above their table) in an int64.
MAX_INPUTS = 63


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
        above = 0  # bit r: input r was above its table
        for g in range(len(targets)):
            best = np.nan
            unknown = False
            while i < inputs.shape[0] and inputs[_u(i), 1] == g:
                r = _u(i)
                i += 1
                gate = inputs[r, 4]
                if gate >= 0 and not (above >> gate) & 1:
                    continue  # counts only above the gate's table
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
                        above |= 1 << (i - 1)  # i - 1 is r, signed
                else:
                    while xp[_u(a + 1)] <= x:  # tables are short, values mostly low
                        a += 1
                    j = _u(a)
                    part = fp[j] if x == xp[j] else slopes[j] * (x - xp[j]) + fp[j]
                if part > best or math.isnan(best):
                    best = part
            if best > _CAP:
                best = _CAP
            block[_u(t), _u(targets[g])] = np.nan if unknown else np.floor(best + 0.5 + _HALF_UP)


@intrinsic
def _copy_key(typingctx, out, at, keys, start):
    """out[at:at + KEY_BYTES] = keys[start:start + KEY_BYTES], as one memcpy."""

    # A byte loop, or a slice assignment, costs several times more.
    def codegen(context, builder, signature, args):
        out_array = context.make_array(signature.args[0])(context, builder, args[0])
        keys_array = context.make_array(signature.args[2])(context, builder, args[2])
        cgutils.raw_memcpy(
            builder,
            builder.gep(out_array.data, [args[1]]),
            builder.gep(keys_array.data, [args[3]]),
            context.get_constant(types.intp, KEY_BYTES),
            1,
        )
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
        return -1, -1  # times are written without a sign
    power = np.empty(len(decimals))
    for f in range(len(decimals)):
        power[f] = 10.0 ** decimals[f]
    n = 1
    first_end = 0
    out[0] = 91  # "["
    for t in range(block.shape[0]):
        if t:
            out[_u(n)] = 44  # ","
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
            n = json_numbers.put_rounded(
                out, n, np.rint(value * power[_u(f)]), decimals[_u(f)], False
            )
            if n < 0:
                return -1, -1
        out[_u(n)] = 125  # "}"
        n += 1
        if t == 0:
            first_end = n
    out[_u(n)] = 93  # "]"
    return n + 1, first_end


@njit(cache=True, nogil=True)
def answer(
    cell,
    weights,
    first,
    columns,
    inputs,
    limits,
    xp,
    fp,
    slopes,
    targets,
    sources,
    decimals,
    keys,
    key_end,
    time0,
    dt_s,
    out,
):
    """The bilinear series (server.kernels.bilinear), evaluate and render in one call;
    returns render()'s (end, first end)."""
    # The point's records from step `first` to the end of the grid as a JSON array in out;
    # the indices go to the block's columns after the grid's (targets are those).
    block = np.empty((cell.shape[2] - first, cell.shape[3] + len(targets)))
    series(cell, weights, first, cell.shape[2], columns, block)
    evaluate(block, inputs, limits, xp, fp, slopes, targets)
    return render(block, sources, decimals, keys, key_end, time0, dt_s, out)
