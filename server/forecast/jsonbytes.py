"""JSON written by compiled code: the bytes orjson writes for the same values.

A rounded number k / 10**d (k = rint(x * 10**d), |k| < 10**15) is the double nearest that
decimal, whose shortest round-trip form (orjson's, and repr's) is the decimal itself with
trailing zeros dropped: so digits are written straight from k. NaN and infinity are null, as
orjson writes them. Anything else (a number beyond 10**15, a phrase) leaves a hole: its
position and what goes there, for Python to fill (Out.holes; row 0 counts them).

Every writer takes the output `o` = (buffer, holes, numbers) and a position, and returns the
position after what it wrote.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

HOLE_WIDTH = 22                    # position, kind, then facts (facts.FACTS)
HOLE_NUMBER, HOLE_TEXT = 1, 2      # kinds: numbers[facts[0]] as orjson writes it; a phrase
EXACT = 1e15


def ascii(text: str) -> np.ndarray:
    """Constant bytes for compiled code."""
    return np.frombuffer(text.encode(), dtype=np.uint8)


NULL, TRUE, FALSE = ascii("null"), ascii("true"), ascii("false")
SCALE = np.array([10.0 ** d for d in range(8)])         # 10**d, d decimals
UNIT = np.array([10 ** d for d in range(19)], dtype=np.int64)


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
def _digits(o, n, value, width):
    """A non-negative integer in decimal, zero-padded to width digits."""
    buf = o[0]
    count = width
    while count < 18 and value >= UNIT[count]:
        count += 1
    rest = np.uint64(value)       # unsigned: division by 10 compiles to a multiplication
    for i in range(count - 1, -1, -1):
        buf[n + i] = 48 + rest % np.uint64(10)
        rest //= np.uint64(10)
    return n + count


@njit(cache=True, nogil=True)
def put_int(o, n, value):
    """An integer."""
    if value < 0:
        o[0][n] = 45
        return _digits(o, n + 1, -value, 1)
    return _digits(o, n, value, 1)


@njit(cache=True, nogil=True, inline="always")
def put_bool(o, n, value):
    return put(o, n, TRUE if value else FALSE)


@njit(cache=True, nogil=True)
def put_whole(o, n, x):
    """rint(x) as an integer, null when x is NaN (times, degrees)."""
    if x != x or math.isinf(x):
        return put(o, n, NULL)
    return put_int(o, n, np.int64(np.rint(x)))


@njit(cache=True, nogil=True)
def put_rounded(o, n, k, decimals):
    """The float k / 10**decimals, k integral (from rint); null for NaN and infinity."""
    if k != k or math.isinf(k):
        return put(o, n, NULL)
    if abs(k) >= EXACT:
        return hole_number(o, n, k / SCALE[decimals])
    buf = o[0]
    if math.copysign(1.0, k) < 0:
        buf[n] = 45
        n += 1
    rest = np.uint64(abs(k))
    count = decimals + 1                 # digits: at least one before the point
    while count < 18 and rest >= UNIT[count]:
        count += 1
    end = n + count + 1                  # and the point
    ten = np.uint64(10)
    for i in range(end - 1, n - 1, -1):
        if i == end - 1 - decimals:
            buf[i] = 46
        else:
            buf[i] = 48 + rest % ten
            rest //= ten
    if decimals == 0:
        buf[end] = 48
        return end + 1
    while buf[end - 1] == 48 and buf[end - 2] != 46:    # trailing zeros, one digit kept
        end -= 1
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
