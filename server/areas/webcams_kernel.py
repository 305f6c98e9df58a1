"""The webcam answers' per-request loops, compiled with numba: snapshot histories written as
JSON bytes.

A 24-hour history is some hundred and fifty snapshots, each an object with its capture time
twice (in captured_at and in the image link) around the same pieces: as Python string
formatting that was most of a request; one compiled pass writes the whole body. Compiled once
per machine (cache=True writes next to this file, or to NUMBA_CACHE_DIR) and warmed by the
loader (warm_up()), so no request waits for the compiler.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64 as _u

DAY_S = 86_400
STAMP = 19                      # YYYY-MM-DDTHH:MM:SS


@njit(cache=True, nogil=True)
def _civil(days):
    """(year, month, day) of days since 1970-01-01 (proleptic Gregorian; H. Hinnant's
    civil_from_days)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


@njit(cache=True, nogil=True)
def _pair(out, at, value):
    """Two digits of 0 <= value < 100 at out[at:at + 2]."""
    out[_u(at)] = 48 + value // 10
    out[_u(at + 1)] = 48 + value % 10


@njit(cache=True, nogil=True)
def _date(out, at, days):
    """YYYY-MM-DD of days since 1970-01-01 at out[at:at + 10]."""
    year, month, day = _civil(days)
    _pair(out, at, year // 100)
    _pair(out, at + 2, year % 100)
    out[_u(at + 4)] = 45                                # '-'
    _pair(out, at + 5, month)
    out[_u(at + 7)] = 45
    _pair(out, at + 8, day)


@njit(cache=True, nogil=True)
def _time(out, at, seconds):
    """THH:MM:SS of seconds into the day at out[at:at + 9]."""
    out[_u(at)] = 84                                    # 'T'
    _pair(out, at + 1, seconds // 3600)
    out[_u(at + 3)] = 58                                # ':'
    _pair(out, at + 4, seconds // 60 % 60)
    out[_u(at + 6)] = 58
    _pair(out, at + 7, seconds % 60)


@njit(cache=True, nogil=True)
def _copy(out, at, source, a, b):
    """out[at:] = source[a:b], returning the end: a loop over unsigned indices (a slice
    assignment, or signed indices with their wraparound checks, cost many times more)."""
    for k in range(b - a):
        out[_u(at + k)] = source[_u(a + k)]
    return at + b - a


@njit(cache=True, nogil=True)
def stamped_items(times, parts, cuts):
    """parts[:cuts[0]], then per time: parts[cuts[0]:cuts[1]] (the item's head), its stamp,
    parts[cuts[1]:cuts[2]], its stamp again, parts[cuts[2]:cuts[3]], items separated by commas;
    then parts[cuts[3]:] (the body's end)."""
    c0, c1, c2, c3 = cuts[0], cuts[1], cuts[2], cuts[3]
    n = len(times)
    out = np.empty(c0 + n * (c3 - c0 + 2 * STAMP) + max(n - 1, 0) + len(parts) - c3,
                   dtype=np.uint8)
    date = np.empty(10, dtype=np.uint8)                 # of the day last seen (times ascend)
    last_day = -1
    at = _copy(out, 0, parts, 0, c0)
    for i in range(n):
        if i:
            out[_u(at)] = 44                            # ','
            at += 1
        unix_s = np.int64(times[_u(i)])
        days, seconds = unix_s // DAY_S, unix_s % DAY_S
        if days != last_day:
            _date(date, 0, days)
            last_day = days
        at = _copy(out, at, parts, c0, c1)
        first = at
        at = _copy(out, at, date, 0, 10)
        _time(out, at, seconds)
        at = _copy(out, at + 9, parts, c1, c2)
        at = _copy(out, at, out, first, first + STAMP)
        at = _copy(out, at, parts, c2, c3)
    _copy(out, at, parts, c3, len(parts))
    return out


def stamped_body(times: np.ndarray, start: bytes, head: bytes, mid: bytes, tail: bytes,
                 end: bytes) -> bytes:
    """start, the items `head STAMP mid STAMP tail` of each capture time comma-separated, end."""
    cuts = np.cumsum((len(start), len(head), len(mid), len(tail)))
    parts = np.frombuffer(b"".join((start, head, mid, tail, end)), dtype=np.uint8)
    return stamped_items(times, parts, cuts).tobytes()


def warm_up() -> None:
    """Compile (or load from the cache) the kernels for the array types requests pass."""
    times = np.array([0, 86_399], dtype=np.uint32)
    for array in (times, np.frombuffer(times.tobytes(), dtype=np.uint32)):    # and read-only
        stamped_body(array, b"[", b"", b"", b"", b"]")
