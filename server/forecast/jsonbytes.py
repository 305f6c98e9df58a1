"""JSON written by compiled code: the bytes orjson writes for the same values.

Numbers are written by server.kernels.json_numbers, as floats (a rounded number k / 10**d is
written as orjson writes that float: "12.0", "-0.0"); NaN and infinity are null, as orjson
writes them. Anything else (a number beyond its DIGITS_LIMIT, a phrase) leaves a hole: its
position and what goes there, for Python to fill (Out.holes; row 0 counts them).

Every writer takes the output `o` = (buffer, holes, numbers) and a position, and returns the
position after what it wrote.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from server.kernels import json_numbers

HOLE_WIDTH = 22  # position, kind, then facts (facts.FACTS)
HOLE_NUMBER, HOLE_TEXT = 1, 2  # kinds: numbers[facts[0]] as orjson writes it; a phrase


def ascii(text: str) -> np.ndarray:
    """Constant bytes for compiled code."""
    return np.frombuffer(text.encode(), dtype=np.uint8)


NULL, TRUE, FALSE = ascii("null"), ascii("true"), ascii("false")
SCALE = np.array([10.0**d for d in range(8)])  # 10**d, d decimals


@njit(cache=True, nogil=True, inline="always")
def put(o, n, src):
    """Copy bytes."""
    return put_slice(o, n, src, 0, src.shape[0])


@njit(cache=True, nogil=True, inline="always")
def put_slice(o, n, src, a, b):
    """Copy src[a:b]."""
    # unsigned indices: no negative-index checks, so the copy compiles to a tight loop
    buf, to, at = o[0], np.uint64(n), np.uint64(a)
    for i in range(np.uint64(b - a)):
        buf[to + i] = src[at + i]
    return n + b - a


@njit(cache=True, nogil=True)
def put_int(o, n, value):
    """An integer."""
    return json_numbers.put_int(o[0], n, value)


@njit(cache=True, nogil=True, inline="always")
def put_bool(o, n, value):
    return put(o, n, TRUE if value else FALSE)


@njit(cache=True, nogil=True)
def put_whole(o, n, x):
    """rint(x) as an integer, null when x is NaN (times, degrees)."""
    if x != x or math.isinf(x):
        return put(o, n, NULL)
    return put_int(o, n, np.int64(np.rint(x)))


@njit(cache=True, nogil=True, inline="always")
def put_rounded(o, n, k, decimals):
    """The float k / 10**decimals, k integral (from rint); null for NaN and infinity."""
    end = json_numbers.put_rounded(o[0], n, k, decimals, True)
    if end < 0:  # beyond the digits written exactly
        return hole_number(o, n, k / SCALE[decimals])
    return end


@njit(cache=True, nogil=True)
def put_number(o, n, x, factor, offset, decimals):
    """x converted (x * factor + offset) and rounded to `decimals` as the API rounds."""
    return put_rounded(o, n, np.rint((x * factor + offset) * SCALE[decimals]), decimals)


@njit(cache=True, nogil=True)
def hole_number(o, n, value):
    """Leave a number for Python to write."""
    holes, numbers = o[1], o[2]
    h = holes[0, 0] + 1
    holes[0, 0] = h
    slot = holes[0, 1] + 1
    holes[0, 1] = slot
    numbers[slot] = value
    holes[h, 0], holes[h, 1], holes[h, 2] = n, HOLE_NUMBER, slot
    return n


@njit(cache=True, nogil=True)
def hole_text(o, n, facts):
    """Leave a phrase (its facts) for Python to render."""
    holes = o[1]
    h = holes[0, 0] + 1
    holes[0, 0] = h
    holes[h, 0], holes[h, 1] = n, HOLE_TEXT
    for i in range(len(facts)):
        holes[h, 2 + i] = facts[i]
    return n
