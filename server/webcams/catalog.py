"""The webcam catalog: rows, pre-rendered JSON and the list query (docs/api/webcams.md#list).

The sort orders are permutations precomputed by the pipeline; per order the catalog keeps
the filter columns and each country's, location's and one-degree cell's positions in it, and
selection finds a query's matches and page among them in one compiled pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contract import EARTH_RADIUS_KM
from contract import Webcams as W
from server.artifacts.mapped import arrow_table, bytes_map, column, npy, numbers
from server.geocoding.nearest import unit_vector
from server.webcams import selection

NO_ROWS = np.zeros(0, dtype=np.int64)
# selection's shape of no bbox or circle, and its circle when none is given.
EVERYWHERE = (-math.inf, math.inf, -math.inf, math.inf, math.inf, -math.inf)
NOWHERE_NEAR = (0.0,) * 9
# Chords (on the unit sphere) this close to the radius's are checked by haversine: far more
# than the rounding of either (~1e-15), far less than a metre (1.6e-7).
CHORD_MARGIN = 1e-9


@dataclass(frozen=True)
class BBox:
    """min_lat,min_lng,max_lat,max_lng; min_lng > max_lng crosses the antimeridian."""

    min_lat: float
    min_lon: float
    max_lat: float
    max_lon: float


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
    """The served webcams of one published version (rows in public_id order)."""

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
        # Rows by one-degree cell: a bbox or nearby query starts from the cells it covers.
        cell = _cells(self.lat, self.lon)
        by_cell = np.argsort(cell, kind="stable")
        self.cell_start = np.searchsorted(cell[by_cell], np.arange(180 * 360 + 1))
        self.positions = np.arange(self.size, dtype=np.int64)  # every one, in order
        # The filter values in cell order (as _Ordered.geo, country, location).
        self.cells = (
            np.vstack(
                [self.lat[by_cell], self.lon[by_cell], *_unit(self.lat[by_cell], self.lon[by_cell])]
            ),
            row_country[by_cell],
            row_location[by_cell],
        )
        self.orders = {
            sort: _Ordered.of(npy(root / path), self, by_cell)
            for sort, path in (("views", W.ORDER_DESC), ("views_asc", W.ORDER_ASC))
        }
        self.select(ListQuery(bbox=BBox(0.0, 0.0, 1.0, 1.0)))  # compile before the area is ready

    def prefix(self, row: int) -> bytes:
        """The row's Webcam JSON without the request-dependent fields and the closing brace."""
        return self.json_blob[int(self.json_offsets[row]) : int(self.json_offsets[row + 1])]

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
        box, near = query.bbox, query.nearby
        if query.country is None and query.location is None and box is None and near is None:
            return ordered.rows[query.offset : query.offset + query.limit], self.size
        found = self._group(query, ordered)
        if found is None:
            return NO_ROWS, 0  # no webcam in the country or location
        group, wanted = found
        return selection.select(
            ordered.rows,
            ordered.geo,
            ordered.country,
            ordered.location,
            self.positions if group is NO_ROWS else group,
            group is NO_ROWS,
            self.cells,
            ordered.by_cell,
            self.cell_start,
            wanted,
            EVERYWHERE if box is None else _box_shape(box),
            EVERYWHERE if near is None else _band_shape(near),
            NOWHERE_NEAR if near is None else _near(near),
            query.offset,
            query.limit,
        )

    def _group(
        self, query: ListQuery, ordered: _Ordered
    ) -> tuple[np.ndarray, tuple[int, int]] | None:
        """(positions of the smaller of the country's and the location's webcams, empty for
        neither; their indices, -1 for none), or None when either has no webcam."""
        country = location = -1
        group = NO_ROWS
        if query.country is not None:
            country = self.country_index.get(query.country, -1)
            group = ordered.country_group(country) if country >= 0 else NO_ROWS
            if len(group) == 0:
                return None
        if query.location is not None:
            index = self.location_index(query.location)
            if index is None:
                return None
            location, located = index, ordered.location_group(index)
            group = located if country < 0 or len(located) < len(group) else group
        return group, (country, location)


@dataclass(frozen=True)
class _Ordered:
    """One sort order: its rows, the filter values by position (latitude, longitude and unit
    vector as rows of `geo`; country and location indices), and positions grouped by
    country, by location (positions ascending within each) and by one-degree cell."""

    rows: np.ndarray
    geo: np.ndarray
    country: np.ndarray
    location: np.ndarray
    by_country: np.ndarray
    country_start: np.ndarray
    by_location: np.ndarray
    location_start: np.ndarray
    by_cell: np.ndarray

    @classmethod
    def of(cls, order: np.ndarray, catalog: Catalog, by_cell: np.ndarray) -> _Ordered:
        """The order's arrays, from the rows in that order and the rows by cell."""
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        lat, lon = catalog.lat[order], catalog.lon[order]
        country, location = catalog.row_country[order], catalog.row_location[order]
        by_country, country_start = _groups(country, len(catalog.country_index))
        # Locations from -1 (none): grouped by index + 1.
        by_location, location_start = _groups(location + 1, len(catalog.location_ids) + 1)
        return cls(
            order,
            np.vstack([lat, lon, *_unit(lat, lon)]),
            country,
            location,
            by_country,
            country_start,
            by_location,
            location_start,
            rank[by_cell],
        )

    def country_group(self, index: int) -> np.ndarray:
        """Positions of the country's webcams, ascending."""
        return self.by_country[self.country_start[index] : self.country_start[index + 1]]

    def location_group(self, index: int) -> np.ndarray:
        """Positions of the location's webcams, ascending."""
        return self.by_location[self.location_start[index + 1] : self.location_start[index + 2]]


def _unit(lat: np.ndarray | float, lon: np.ndarray | float) -> tuple:
    """(x, y, z) on the unit sphere of points in degrees."""
    phi, lam = np.radians(lat), np.radians(lon)
    return np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)


def _groups(keys: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions sorted by key (ascending within a key), and where each key 0..count-1 starts
    among them (count + 1 bounds)."""
    by_key = np.argsort(keys, kind="stable")
    return by_key, np.searchsorted(keys[by_key], np.arange(count + 1))


def _cells(lat: np.ndarray | float, lon: np.ndarray | float) -> np.ndarray:
    """One-degree cell of each point: (floor(lat) + 90) * 360 + floor(lon) + 180."""
    row = np.clip(np.floor(np.asarray(lat)) + 90, 0, 179)
    col = np.clip(np.floor(np.asarray(lon)) + 180, 0, 359)
    return (row * 360 + col).astype(np.int64)


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


def _box_shape(box: BBox) -> tuple[float, ...]:
    """A bbox as a selection shape: (south, north, west, east, west2, east2)."""
    if box.min_lon <= box.max_lon:
        return box.min_lat, box.max_lat, box.min_lon, box.max_lon, math.inf, -math.inf
    return box.min_lat, box.max_lat, box.min_lon, math.inf, -math.inf, box.max_lon


def _band_shape(near: Nearby) -> tuple[float, ...]:
    """A selection shape holding every point within the radius (a superset: the exact
    great-circle test follows), from _reach()."""
    south, north, dlon = _reach(near)
    if dlon is None:
        return south, north, -math.inf, math.inf, math.inf, -math.inf
    west, east = near.lon - dlon, near.lon + dlon
    if west < -180.0:
        return south, north, west + 360.0, math.inf, -math.inf, east
    if east > 180.0:
        return south, north, west, math.inf, -math.inf, east - 360.0
    return south, north, west, east, math.inf, -math.inf


def _near(near: Nearby) -> tuple[float, ...]:
    """A nearby filter as selection takes it: (lat, lon, radius_km, 1.0, the centre's
    unit vector, the squared chords below which a point is certainly within the radius and
    above which it is certainly not)."""
    chord = 2.0 * math.sin(near.radius_km / EARTH_RADIUS_KM / 2.0)
    return (
        near.lat,
        near.lon,
        near.radius_km,
        1.0,
        *unit_vector(near.lat, near.lon),
        max(chord - CHORD_MARGIN, 0.0) ** 2,
        (chord + CHORD_MARGIN) ** 2,
    )
