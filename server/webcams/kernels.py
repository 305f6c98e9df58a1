"""The webcam answers' per-request loops, compiled with numba: snapshot histories written as
JSON bytes.

A 24-hour history is some hundred and fifty snapshots, each an object with its capture time
twice (in captured_at and in the image link) around the same pieces: as Python string
formatting that was most of a request; one compiled pass writes the whole body. Compiled once
per machine (cache=True writes next to this file, or to NUMBA_CACHE_DIR) and warmed by the
loader (warm_up()), so no request waits for the compiler.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba import uint64 as _u

from contract import DAY_S, HOUR_S
from contract import Webcams as W

STAMP = 19  # YYYY-MM-DDTHH:MM:SS
MAX_LAT = W.MAX_MERCATOR_LAT


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
    out[_u(at + 4)] = 45  # '-'
    _pair(out, at + 5, month)
    out[_u(at + 7)] = 45
    _pair(out, at + 8, day)


@njit(cache=True, nogil=True)
def _time(out, at, seconds):
    """THH:MM:SS of seconds into the day at out[at:at + 9]."""
    out[_u(at)] = 84  # 'T'
    _pair(out, at + 1, seconds // HOUR_S)
    out[_u(at + 3)] = 58  # ':'
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
    out = np.empty(c0 + n * (c3 - c0 + 2 * STAMP) + max(n - 1, 0) + len(parts) - c3, dtype=np.uint8)
    date = np.empty(10, dtype=np.uint8)  # of the day last seen (times ascend)
    last_day = -1
    at = _copy(out, 0, parts, 0, c0)
    for i in range(n):
        if i:
            out[_u(at)] = 44  # ','
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


def stamped_body(
    times: np.ndarray, start: bytes, head: bytes, mid: bytes, tail: bytes, end: bytes
) -> bytes:
    """start, the items `head STAMP mid STAMP tail` of each capture time comma-separated, end."""
    c0 = len(start)
    c1 = c0 + len(head)
    c2 = c1 + len(mid)
    parts = np.frombuffer(b"".join((start, head, mid, tail, end)), dtype=np.uint8)
    return stamped_items(times, parts, (c0, c1, c2, c2 + len(tail))).tobytes()


def warm_up() -> None:
    """Compile (or load from the cache) the kernels for the array types requests pass."""
    times = np.array([0, 86_399], dtype=np.uint32)
    for array in (times, np.frombuffer(times.tobytes(), dtype=np.uint32)):  # and read-only
        stamped_body(array, b"[", b"", b"", b"", b"]")


@njit(cache=True, nogil=True)
def _inside(lat, lon, box):
    """Inside box = (min_lat, min_lon, max_lat, max_lon), edges included; min_lon > max_lon
    crosses the antimeridian."""
    if not box[0] <= lat <= box[2]:
        return False
    if box[1] <= box[3]:
        return box[1] <= lon <= box[3]
    return lon >= box[1] or lon <= box[3]


@njit(cache=True, nogil=True)
def _cell_state(c, bounds, box, world):
    """0 when cell c lies wholly outside the box, 1 when it straddles its edge, 2 when wholly
    inside; bounds = (min_lat, max_lat, min_lon, max_lon) columns of the cells."""
    if world:
        return 2
    min_lat, max_lat, min_lon, max_lon = bounds[0][c], bounds[1][c], bounds[2][c], bounds[3][c]
    lat_in = min_lat >= box[0] and max_lat <= box[2]
    if box[1] <= box[3]:
        if lat_in and min_lon >= box[1] and max_lon <= box[3]:
            return 2
        touching = (
            max_lat >= box[0] and min_lat <= box[2] and max_lon >= box[1] and min_lon <= box[3]
        )
        return 1 if touching else 0
    # Across the antimeridian: inside is lon >= min_lon or lon <= max_lon.
    if lat_in and (min_lon >= box[1] or max_lon <= box[3]):
        return 2
    lat_out = max_lat < box[0] or min_lat > box[2]
    lon_out = min_lon > box[3] and max_lon < box[1]
    return 0 if lat_out or lon_out else 1


@njit(cache=True, nogil=True)
def _block_sum(x, a, n):
    """numpy's pairwise summation of x[a:a + n] for n <= 128 (umath loops_utils: eight
    running sums, then the rest one by one)."""
    if n < 8:
        total = 0.0
        for i in range(a, a + n):
            total += x[_u(i)]
        return total
    r0, r1, r2, r3 = x[_u(a)], x[_u(a + 1)], x[_u(a + 2)], x[_u(a + 3)]
    r4, r5, r6, r7 = x[_u(a + 4)], x[_u(a + 5)], x[_u(a + 6)], x[_u(a + 7)]
    i = 8
    while i < n - n % 8:
        j = a + i
        r0, r1, r2, r3 = r0 + x[_u(j)], r1 + x[_u(j + 1)], r2 + x[_u(j + 2)], r3 + x[_u(j + 3)]
        r4, r5, r6, r7 = r4 + x[_u(j + 4)], r5 + x[_u(j + 5)], r6 + x[_u(j + 6)], r7 + x[_u(j + 7)]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for k in range(a + i, a + n):
        total += x[_u(k)]
    return total


@njit(cache=True, nogil=True)
def _pairwise_sum(x, a, n):
    """numpy's pairwise summation of x[a:a + n], the same additions in the same order: above
    128 elements, the sum of the halves (the first a multiple of 8). numpy recurses; this
    walks the same tree with a stack (numba's cache cannot hold a recursive function)."""
    if n <= 128:
        return _block_sum(x, a, n)
    starts, sizes = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    lefts = np.empty(64)  # a frame's left half's sum, once known
    done = np.zeros(64, dtype=np.bool_)  # whether it is known
    starts[0], sizes[0], top = a, n, 0
    while True:
        size = sizes[top]
        if size > 128:  # descend into the left half
            half = size // 2 - size // 2 % 8
            done[top] = False
            top += 1
            starts[top], sizes[top] = starts[top - 1], half
            continue
        total = _block_sum(x, starts[top], size)
        top -= 1
        while top >= 0 and done[top]:  # right halves complete their frames
            total = lefts[top] + total
            top -= 1
        if top < 0:
            return total
        lefts[top], done[top] = total, True  # then the frame's right half
        half = sizes[top] // 2 - sizes[top] // 2 % 8
        starts[top + 1], sizes[top + 1] = starts[top] + half, sizes[top] - half
        top += 1


@njit(cache=True, nogil=True)
def _reduceat_sum(x, n):
    """The sum np.add.reduceat gives for x[:n]: the first element plus the pairwise sum of the
    rest (so centroids round exactly as the numpy code they replace did)."""
    return x[0] if n == 1 else x[0] + _pairwise_sum(x, 1, n - 1)


@njit(cache=True, nogil=True)
def _tile_xy(lat, lon, level):
    """contract.Webcams.tile_xy, the same arithmetic."""
    size = 1 << level
    phi = math.radians(max(-MAX_LAT, min(MAX_LAT, lat)))
    x = math.floor((lon + 180.0) / 360.0 * size)
    y = math.floor((1.0 - math.log(math.tan(phi) + 1.0 / math.cos(phi)) / math.pi) / 2.0 * size)
    return min(max(x, 0), size - 1), min(max(y, 0), size - 1)


@njit(cache=True, nogil=True)
def _morton(x, y):
    """contract.Webcams.morton."""
    key = np.uint64(0)
    for bit in range(32):
        key |= np.uint64((x >> bit) & 1) << np.uint64(2 * bit)
        key |= np.uint64((y >> bit) & 1) << np.uint64(2 * bit + 1)
    return key


@njit(cache=True, nogil=True)
def _candidates(keys, a, b, level, box):
    """Clusters.candidates: the cells of [a, b) (one zoom, in Z-order) that can touch the box:
    every cell inside its tile rectangle has a key between its corners' keys (one cell of
    margin each way absorbs rounding at the edges)."""
    if box[1] > box[3] or (box[1] <= -180 and box[3] >= 180):
        return a, b  # across the antimeridian (no single range), or every cell
    last = (1 << level) - 1
    x0, y0 = _tile_xy(box[2], box[1], level)
    x1, y1 = _tile_xy(box[0], box[3], level)
    low = _morton(max(0, x0 - 1), max(0, y0 - 1))
    high = _morton(min(last, x1 + 1), min(last, y1 + 1))
    return (
        a + np.searchsorted(keys[a:b], low, side="left"),
        a + np.searchsorted(keys[a:b], high, side="right"),
    )


@njit(cache=True, nogil=True)
def clusters(keys, a, b, level, bounds, count, start, end, offsets, rows, lat, lon, box, world):
    """The clusters inside a box of the cells [a, b) of one zoom (grid level `level`), for
    Clusters.answer: (runs of
    whole cells of several webcams as (first, end) byte ranges of the cells' JSON; whole cells
    of one webcam as (first, end, row); for each cell straddling the box's edge with members
    inside, (count, row of its first such member) and (latitude, longitude) of their mean;
    the number of whole cells)."""
    a, b = _candidates(keys, a, b, level, box)
    n = b - a
    runs = np.empty(2 * n, dtype=np.int64)
    singles = np.empty(3 * n, dtype=np.int64)
    edges = np.empty(2 * n, dtype=np.int64)
    centroids = np.empty(2 * n, dtype=np.float64)
    nr = ns = ne = whole = 0
    lat_buf, lon_buf = np.empty(64), np.empty(64)  # an edge cell's members (0 if outside)
    last = -2  # the last cell of several appended
    for c in range(a, b):
        u = _u(c)
        state = _cell_state(u, bounds, box, world)
        whole += state == 2
        if state == 2 and count[u] == 1:
            singles[_u(ns)], singles[_u(ns + 1)] = offsets[u], offsets[u + 1]
            singles[_u(ns + 2)] = rows[_u(start[u])]
            ns += 3
        elif state == 2:
            if c == last + 1:  # consecutive cells: one slice
                runs[_u(nr - 1)] = offsets[u + 1]
            else:
                runs[_u(nr)], runs[_u(nr + 1)] = offsets[u], offsets[u + 1]
                nr += 2
            last = c
        elif state == 1:
            m = end[u] - start[u]
            if len(lat_buf) < m:
                lat_buf, lon_buf = np.empty(m), np.empty(m)
            kept, first = 0, -1
            for i in range(m):
                row = rows[_u(start[u] + i)]
                r = _u(row)
                inside = _inside(lat[r], lon[r], box)
                lat_buf[_u(i)] = lat[r] if inside else 0.0
                lon_buf[_u(i)] = lon[r] if inside else 0.0
                if inside:
                    first = row if kept == 0 else first
                    kept += 1
            if kept:
                edges[_u(ne)], edges[_u(ne + 1)] = kept, first
                centroids[_u(ne)] = _reduceat_sum(lat_buf, m) / kept
                centroids[_u(ne + 1)] = _reduceat_sum(lon_buf, m) / kept
                ne += 2
    return runs[:nr], singles[:ns], edges[:ne], centroids[:ne], whole
