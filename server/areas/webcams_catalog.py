"""The webcam catalog: rows, pre-rendered JSON and the list query (interface 4.8, rules 36-38).

Filters are vectorised masks over the served rows (tens of thousands), the sort orders are
permutations precomputed by the pipeline, so a page is a slice of a permutation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contract import Webcams as W
from server.areas.geocoding_index import EARTH_RADIUS_KM, haversine_km
from server.mapped import arrow_table, bytes_map, column, npy, numbers


@dataclass(frozen=True)
class BBox:
    """min_lat,min_lng,max_lat,max_lng; min_lng > max_lng crosses the antimeridian."""

    min_lat: float
    min_lon: float
    max_lat: float
    max_lon: float

    def contains(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Mask of the points inside (edges included)."""
        inside = (lat >= self.min_lat) & (lat <= self.max_lat)
        if self.min_lon <= self.max_lon:
            return inside & (lon >= self.min_lon) & (lon <= self.max_lon)
        return inside & ((lon >= self.min_lon) | (lon <= self.max_lon))


@dataclass(frozen=True)
class Nearby:
    """Within radius_km of (lat, lon) by great-circle distance."""

    lat: float
    lon: float
    radius_km: float


@dataclass(frozen=True)
class ListQuery:
    """GET /webcams, parsed."""

    bbox: BBox | None = None
    nearby: Nearby | None = None
    country: str | None = None
    location: str | None = None
    limit: int = 50
    offset: int = 0
    sort: str = "views"


class Catalog:
    """The served webcams of one published version (rows in public_id order).

    The filter columns are also kept permuted into each sort order, so a filter's mask is
    computed directly in that order and a page is a slice of its true positions."""

    def __init__(self, root: Path):
        cams = arrow_table(root / W.CAMS_ARROW)
        self.size = cams.num_rows
        self.public_ids: list[str] = column(cams, "public_id").to_pylist()
        self.row_of = {public_id: row for row, public_id in enumerate(self.public_ids)}
        self.names = column(cams, "name")
        self.timezones: list[str] = column(cams, "timezone").to_pylist()
        self.lat = numbers(cams, "latitude")
        self.lon = numbers(cams, "longitude")
        self.json_blob = bytes_map(root / W.CAM_JSON)
        self.json_offsets = npy(root / W.CAM_JSON_OFFSETS)
        codes = npy(root / W.COUNTRY_CODES)
        self.country_index = {code.decode(): i for i, code in enumerate(codes.tolist())}
        self.location_ids = npy(root / W.LOCATION_IDS)
        row_country, row_location = npy(root / W.ROW_COUNTRY), npy(root / W.ROW_LOCATION)
        self.row_country, self.row_location = row_country, row_location
        self.orders = {}
        for sort, path in (("views", W.ORDER_DESC), ("views_asc", W.ORDER_ASC)):
            order = npy(root / path)
            rank = np.empty(self.size, dtype=np.int64)
            rank[order] = np.arange(self.size)
            self.orders[sort] = _Ordered(order, rank, self.lat[order], self.lon[order],
                                         row_country[order], row_location[order])
        # Rows by one-degree cell: a bbox or nearby query starts from the cells it covers.
        cell = _cells(self.lat, self.lon)
        self.by_cell = np.argsort(cell, kind="stable")
        self.cell_start = np.searchsorted(cell[self.by_cell], np.arange(180 * 360 + 1))

    def prefix(self, row: int) -> bytes:
        """The row's Webcam JSON without the request-dependent fields and the closing brace."""
        return self.json_blob[int(self.json_offsets[row]):int(self.json_offsets[row + 1])]

    def name(self, row: int) -> str:
        """The webcam's name."""
        return self.names[row].as_py()

    def location_index(self, location_id: str) -> int | None:
        """Position of a location id among those webcams link to, or None."""
        needle = location_id.encode()
        if len(needle) > W.LOCATION_ID_BYTES:
            return None
        i = int(np.searchsorted(self.location_ids, needle))
        return i if i < len(self.location_ids) and self.location_ids[i] == needle else None

    def select(self, query: ListQuery) -> tuple[np.ndarray, int]:
        """(rows of the requested page, total matches) in the requested order."""
        ordered = self.orders[query.sort]
        rows = self._candidates(query)
        if rows is not None:     # few candidates: filter those, then order them by rank
            lat, lon = self.lat[rows], self.lon[rows]
            keep = self._mask(query, lat, lon, self.row_country[rows], self.row_location[rows])
            if query.nearby is not None:
                keep &= _within(query.nearby, lat, lon)
            positions = np.sort(ordered.rank[rows[keep]])
        else:                    # many: masks over every row, already in the sort order
            keep = self._mask(query, ordered.lat, ordered.lon, ordered.country,
                              ordered.location)
            if keep is True:
                return ordered.rows[query.offset:query.offset + query.limit], self.size
            positions = np.flatnonzero(keep)
            if query.nearby is not None:     # exact distances for the band's candidates only
                positions = positions[_within(query.nearby, ordered.lat[positions],
                                              ordered.lon[positions])]
        page = positions[query.offset:query.offset + query.limit]
        return ordered.rows[page], len(positions)

    def _candidates(self, query: ListQuery) -> np.ndarray | None:
        """Rows of the one-degree cells a bbox or circle covers, when they are few (a tenth
        of the catalog at most); else None."""
        area = _area(query)
        if area is None:
            return None
        (south, north), lons = area
        starts = self.cell_start
        bounds = [(int(starts[row * 360 + w]), int(starts[row * 360 + e + 1]))
                  for row in range(south, north + 1) for w, e in lons]
        if sum(b - a for a, b in bounds) > self.size // 10:
            return None
        runs = [self.by_cell[a:b] for a, b in bounds if b > a]
        return np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)

    def _mask(self, query: ListQuery, lat: np.ndarray, lon: np.ndarray, country: np.ndarray,
              location: np.ndarray) -> np.ndarray | bool:
        """Rows (given by their columns) passing every filter, the radius only as a band (a
        superset: _within() is exact); True when there is no filter."""
        mask: np.ndarray | bool = True
        if query.country is not None:
            mask = mask & (country == self.country_index.get(query.country, -1))
        if query.location is not None:
            index = self.location_index(query.location)
            mask = mask & (location == (-2 if index is None else index))
        if query.bbox is not None:
            mask = mask & query.bbox.contains(lat, lon)
        if query.nearby is not None:
            mask = mask & _band(query.nearby, lat, lon)
        return mask


@dataclass(frozen=True)
class _Ordered:
    """Row numbers, each row's position, and filter columns in one sort order."""

    rows: np.ndarray
    rank: np.ndarray
    lat: np.ndarray
    lon: np.ndarray
    country: np.ndarray
    location: np.ndarray


def _cells(lat: np.ndarray | float, lon: np.ndarray | float) -> np.ndarray:
    """One-degree cell of each point: (floor(lat) + 90) * 360 + floor(lon) + 180."""
    row = np.clip(np.floor(np.asarray(lat)) + 90, 0, 179)
    col = np.clip(np.floor(np.asarray(lon)) + 180, 0, 359)
    return (row * 360 + col).astype(np.int64)


def _index(value: float, size: int, shift: int) -> int:
    return min(max(math.floor(value) + shift, 0), size - 1)


def _reach(near: Nearby) -> tuple[float, float, float | None]:
    """(south, north, half-width in longitude) of a band holding every point within the radius;
    the half-width is None when the band reaches a pole (every longitude).

    Latitudes within the angular radius; where the band stays off the poles, longitudes within
    2 asin(sin(radius / 2) / cos(edge)) of the centre, edge being the band's latitude farthest
    from the equator: from hav(d) >= cos(lat1) cos(lat2) hav(dlon)."""
    angle = near.radius_km / EARTH_RADIUS_KM
    dlat = math.degrees(angle) + 1e-6
    edge = math.radians(min(90.0, max(abs(near.lat - dlat), abs(near.lat + dlat))))
    ratio = math.sin(angle / 2) / max(math.cos(edge), 1e-12)
    dlon = math.degrees(2 * math.asin(ratio)) + 1e-6 if ratio < 1.0 else None
    return near.lat - dlat, near.lat + dlat, dlon


def _area(query: ListQuery) -> tuple[tuple[int, int], list[tuple[int, int]]] | None:
    """Cell rows (south, north) and column ranges that hold every possible match of a bbox or
    nearby filter (a superset: the exact tests follow), or None without either."""
    box = query.bbox
    if box is None and query.nearby is None:
        return None
    if box is not None:
        south, north = box.min_lat, box.max_lat
        spans = ([(box.min_lon, box.max_lon)] if box.min_lon <= box.max_lon
                 else [(box.min_lon, 180.0), (-180.0, box.max_lon)])
    else:
        south, north, spans = -90.0, 90.0, [(-180.0, 180.0)]
    if query.nearby is not None:
        near = query.nearby
        low, high, dlon = _reach(near)
        south, north = max(south, low), min(north, high)
        if box is None and dlon is not None:
            west, east = near.lon - dlon, near.lon + dlon
            spans = ([(west, east)] if -180.0 <= west and east <= 180.0 else
                     [(max(west, -180.0), min(east, 180.0)),
                      (west + 360.0, 180.0) if west < -180.0 else (-180.0, east - 360.0)])
    if south > north:
        return (0, -1), []
    return ((_index(south, 180, 90), _index(north, 180, 90)),
            [(_index(w, 360, 180), _index(e, 360, 180)) for w, e in spans])


def _band(near: Nearby, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Mask of points that may lie within the radius (a superset; _within() is exact)."""
    south, north, dlon = _reach(near)
    mask = (lat >= south) & (lat <= north)
    if dlon is not None:
        west, east = near.lon - dlon, near.lon + dlon
        if west < -180.0:
            mask &= (lon >= west + 360.0) | (lon <= east)
        elif east > 180.0:
            mask &= (lon >= west) | (lon <= east - 360.0)
        else:
            mask &= (lon >= west) & (lon <= east)
    return mask


def _within(near: Nearby, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Exact great-circle test of the radius."""
    return haversine_km(near.lat, near.lon, lat, lon) <= near.radius_km
