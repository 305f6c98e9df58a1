"""JSON numbers written by compiled code, the bytes orjson writes: the one number writer of the
forecast's and air quality's answers.

A value rounded to d decimals is held as k = rint(x * 10**d), an integral float. While |k| is
below DIGITS_LIMIT (10**15: 15 significant digits) the double nearest k / 10**d has that
decimal as its shortest round-trip form (orjson's, and repr's), so the digits are written
straight from k, trailing zeros after the point dropped (one digit kept). Beyond it
put_rounded writes nothing and returns -1: the caller writes that number otherwise (the
forecast leaves a hole for Python, air quality sends the whole answer through orjson). Up to
5 decimals (the answers use 4 at most): orjson writes some smaller numbers, 1e-6, with an
exponent.

The two areas promise different things of a rounded value, and both answers stay as they are:
`as_float` (the forecast: Dark Sky's fields are floats, written as orjson writes
float(k / 10**d)) keeps ".0" after a whole number and writes the sign whenever k has one,
"-0.0" included; otherwise (air quality: the API's rounded value, server.air_quality.records
.number) a value of 0 decimals is an integer, without a point, and a value that rounds to zero
is 0 without a sign. NaN and infinities are null either way.

Every writer takes the output bytes and a position, and returns the position after what it
wrote. Indices are unsigned (_u): numba then skips its negative-index checks, and division by
10 compiles to a multiplication.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba import uint64 as _u

DIGITS_LIMIT = 1e15
_POWERS = 10 ** np.arange(20, dtype=np.uint64)
_PAIRS = np.frombuffer(b"".join(b"%02d" % k for k in range(100)), dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)


@njit(cache=True, nogil=True, inline="always")
def put_null(out, n):
    """null."""
    for i in range(4):
        out[_u(n + i)] = _NULL[i]
    return n + 4


@njit(cache=True, nogil=True, inline="always")
def put_digits(out, n, k, decimals):
    """k / 10**decimals (k a non-negative integer) in its shortest form: no trailing zeros after
    the point but one digit, no point when decimals is 0."""
    k = _u(k)
    ten, hundred = _u(10), _u(100)
    size = 1
    while size < 20 and k >= _POWERS[size]:
        size += 1
    shown = decimals  # digits after the point
    while shown > 1 and k % ten == _u(0):
        k //= ten
        shown -= 1
    whole = max(size - decimals, 1)
    end = n + whole + (shown + 1 if decimals else 0)
    p = end
    if decimals:
        for _ in range(shown):
            p -= 1
            out[_u(p)] = _u(48) + k % ten
            k //= ten
        p -= 1
        out[_u(p)] = 46  # "."
    while p - n >= 2:  # the whole part, two digits at a time
        pair = _u(2) * (k % hundred)
        out[_u(p - 1)] = _PAIRS[pair + _u(1)]
        out[_u(p - 2)] = _PAIRS[pair]
        k //= hundred
        p -= 2
    if p > n:
        out[_u(n)] = _u(48) + k
    return end


@njit(cache=True, nogil=True)
def put_int(out, n, value):
    """An integer."""
    if value < 0:
        out[_u(n)] = 45  # "-"
        return put_digits(out, n + 1, -value, 0)
    return put_digits(out, n, value, 0)


@njit(cache=True, nogil=True, inline="always")
def put_rounded(out, n, k, decimals, as_float):
    """k / 10**decimals, k = rint(x * 10**decimals), as orjson writes it (as a float, or as the
    API's rounded value: see the module's docstring); null when k is NaN or infinite. -1, and
    nothing written, when |k| >= DIGITS_LIMIT."""
    if not math.isfinite(k):
        return put_null(out, n)
    if not abs(k) < DIGITS_LIMIT:
        return -1
    if (math.copysign(1.0, k) < 0.0) if as_float else (k < 0.0):
        out[_u(n)] = 45  # "-"
        n += 1
    n = put_digits(out, n, abs(k), decimals)
    if as_float and decimals == 0:  # a whole float: "12.0"
        out[_u(n)] = 46
        out[_u(n + 1)] = 48
        n += 2
    return n
