"""A list query's matches, total and page in one compiled pass (catalog.Catalog.select).

Positions are places in one sort order (views or views_asc): a page is the matches' smallest
positions from `offset`. Candidates come from the smallest source the filters allow: the
webcams of the filtered country or location (positions ascending, so the page needs no sort),
the one-degree cells a bbox or circle covers (sorted after filtering), or every position. As
numpy masks over every row this was a dozen array operations, whose fixed costs were most of
a request. Compiled once per machine (cache=True) and warmed by the catalog's loader.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba import uint64 as _u

from contract import EARTH_RADIUS_KM

CELL_COLS = 360
# Cells are the source while they hold at most this share of the catalog: a sort of their
# matches costs less than a pass over every position.
CELLS_SHARE = 10
# A circle's cells are the source up to a larger share: the pass over every position costs more
# with a circle, the vectorised count only serves a bbox alone.
CELLS_SHARE_NEAR = 3
SORT_MAX = 256  # more matches in cells are put in order by marks, not a sort


@njit(cache=True, nogil=True)
def _km(lat1, lon1, lat2, lon2):
    """server.geocoding.index.haversine_km for one point, the same arithmetic."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2) - math.radians(lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(min(max(a, 0.0), 1.0)))


@njit(cache=True, nogil=True)
def _in(lat, lon, shape):
    """In shape = (south, north, west, east, west2, east2): a latitude range and two longitude
    ranges (a bbox across the antimeridian, or a circle's band, needs both). Without branches:
    the comparisons are cheaper than mispredicted jumps."""
    return (
        (lat >= shape[0])
        & (lat <= shape[1])
        & (((lon >= shape[2]) & (lon <= shape[3])) | ((lon >= shape[4]) & (lon <= shape[5])))
    )


@njit(cache=True, nogil=True)
def _passes(geo, country, location, u, wanted, box, band, near):
    """Position u passes every filter. geo: latitude, longitude and the unit vector (x, y, z)
    by position; wanted = (country, location) indices (-1: any); box and band (the circle's)
    as _in() shapes; near = (lat, lon, radius_km, 1.0 for a circle given, the centre's unit
    vector, squared chords certainly inside and certainly outside the radius)."""
    lat, lon = geo[0, u], geo[1, u]
    if not (
        _in(lat, lon, box)
        & _in(lat, lon, band)
        & ((wanted[0] < 0) | (country[u] == wanted[0]))
        & ((wanted[1] < 0) | (location[u] == wanted[1]))
    ):
        return False
    if near[3] == 0.0:
        return True
    # The chord to the centre decides but within a hair of the radius: three products instead
    # of the haversine's five transcendental functions.
    chord2 = (geo[2, u] - near[4]) ** 2 + (geo[3, u] - near[5]) ** 2 + (geo[4, u] - near[6]) ** 2
    if chord2 <= near[7] or chord2 >= near[8]:
        return chord2 <= near[7]
    return _km(near[0], near[1], lat, lon) <= near[2]


@njit(cache=True, nogil=True)
def _cell(degrees, shift, size):
    """The one-degree cell row (shift 90, size 180) or column (180, 360) of a bound, clamped."""
    return min(max(int(math.floor(min(max(degrees, -1e3), 1e3))) + shift, 0), size - 1)


@njit(cache=True, nogil=True)
def _area(box, band):
    """The cells holding every possible match of the bbox and the circle's band (a superset:
    the exact tests follow): (south, north, west, east, west2, east2) cell rows and column
    ranges, the second range empty (west2 > east2) unless the area crosses the antimeridian;
    south > north when the two do not meet. The columns are the bbox's, else the band's."""
    south, north = max(box[0], band[0]), min(box[1], band[1])
    if south > north:
        return 0, -1, 1, 0, 1, 0
    shape = box if box[0] > -math.inf else band
    west2, east2 = (
        (_cell(shape[4], 180, 360), _cell(shape[5], 180, 360)) if shape[4] <= shape[5] else (1, 0)
    )
    return (
        _cell(south, 90, 180),
        _cell(north, 90, 180),
        _cell(shape[2], 180, 360),
        _cell(shape[3], 180, 360),
        west2,
        east2,
    )


@njit(cache=True, nogil=True)
def _cell_count(cell_start, area):
    """Rows in the cells of an _area()."""
    total = 0
    for r in range(area[0], area[1] + 1):
        for w, e in ((area[2], area[3]), (area[4], area[5])):
            if w <= e:
                total += cell_start[_u(r * CELL_COLS + e + 1)] - cell_start[_u(r * CELL_COLS + w)]
    return total


@njit(cache=True, nogil=True)
def _coarse(geo, box, band):
    """Positions inside the bbox and the circle's band, in order."""
    out = np.empty(geo.shape[1], dtype=np.int64)
    m = 0
    for k in range(geo.shape[1]):
        lat, lon = geo[0, _u(k)], geo[1, _u(k)]
        if _in(lat, lon, box) & _in(lat, lon, band):
            out[_u(m)] = k
            m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def _scan(order, geo, country, location, positions, every, wanted, box, band, near, offset, limit):
    """select() over candidate positions in ascending order (`every`: all of them, in order):
    the page is the matches from `offset`, the rest are only counted."""
    if every and near[3] != 0.0:  # a circle: its band's positions first
        positions, every = _coarse(geo, box, band), False
    # No conditional index in the loops: it costs more than the tests.
    n = len(positions)
    page = np.empty(max(min(limit, len(order) - offset), 0), dtype=np.int64)
    total = taken = i = 0
    while i < n and total < offset + limit:
        u = _u(positions[_u(i)])
        if _passes(geo, country, location, u, wanted, box, band, near):
            if total >= offset:
                page[_u(taken)] = order[u]
                taken += 1
            total += 1
        i += 1
    if every and near[3] == 0.0:
        # Only the bbox: a loop without jumps, which the compiler vectorises.
        for k in range(i, n):
            total += _in(geo[0, _u(k)], geo[1, _u(k)], box)
        return page[:taken], total
    for k in range(i, n):
        total += _passes(geo, country, location, _u(positions[_u(k)]), wanted, box, band, near)
    return page[:taken], total


@njit(cache=True, nogil=True)
def _from_cells(
    order, cells, by_cell, cell_start, area, count, wanted, box, band, near, offset, limit
):
    """select() over the rows of an area's cells (`count` of them): the matches' positions
    sorted, then the page. `cells` holds the filter values in cell order (geo, country,
    location), so the pass reads memory in sequence; `by_cell` their positions."""
    geo, country, location = cells
    found = np.empty(count, dtype=np.int64)
    total = 0
    for r in range(area[0], area[1] + 1):
        for w, e in ((area[2], area[3]), (area[4], area[5])):
            if w > e:
                continue
            first = cell_start[_u(r * CELL_COLS + w)]
            for i in range(first, cell_start[_u(r * CELL_COLS + e + 1)]):
                if _passes(geo, country, location, _u(i), wanted, box, band, near):
                    found[_u(total)] = by_cell[_u(i)]
                    total += 1
    page = np.empty(max(min(limit, total - offset), 0), dtype=np.int64)
    if len(page) == 0:
        return page, total
    if total <= SORT_MAX:
        found = np.sort(found[:total])
        for k in range(len(page)):
            page[_u(k)] = order[_u(found[_u(offset + k)])]
        return page, total
    # Many matches: mark them, then walk the positions up to the page's last (a sort of
    # thousands costs more than the walk).
    marked = np.zeros(len(order), dtype=np.bool_)
    for k in range(total):
        marked[_u(found[_u(k)])] = True
    seen = taken = 0
    p = 0
    while taken < len(page):
        if marked[_u(p)]:
            if seen >= offset:
                page[_u(taken)] = order[_u(p)]
                taken += 1
            seen += 1
        p += 1
    return page, total


@njit(cache=True, nogil=True)
def select(
    order,
    geo,
    country,
    location,
    positions,
    every,
    cells,
    by_cell,
    cell_start,
    wanted,
    box,
    band,
    near,
    offset,
    limit,
):
    """(rows of the page, total matches) of a query in one sort order (`order`: its rows; the
    filter columns by position): from the cells of the bbox or the circle when they hold fewer
    rows than `positions` (the filtered country's or location's, or `every` one) and a share
    of the catalog, else over `positions`."""
    count = len(order) + 1
    if box[0] > -math.inf or band[0] > -math.inf:
        area = _area(box, band)
        if area[0] > area[1]:
            return np.empty(0, dtype=np.int64), 0  # a bbox and a circle that do not meet
        count = _cell_count(cell_start, area)
        share = CELLS_SHARE if near[3] == 0.0 else CELLS_SHARE_NEAR
        if count <= len(order) // share and count < len(positions):
            return _from_cells(
                order,
                cells,
                by_cell,
                cell_start,
                area,
                count,
                wanted,
                box,
                band,
                near,
                offset,
                limit,
            )
    return _scan(
        order, geo, country, location, positions, every, wanted, box, band, near, offset, limit
    )
