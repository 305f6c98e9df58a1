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
from server.mapped import arrow_table, bytes_map, column, npy

KM_PER_DEGREE = math.pi * EARTH_RADIUS_KM / 180.0


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
    """The served webcams of one published version (rows in public_id order)."""

    def __init__(self, root: Path):
        cams = arrow_table(root / W.CAMS_ARROW)
        self.size = cams.num_rows
        self.public_ids: list[str] = column(cams, "public_id").to_pylist()
        self.row_of = {public_id: row for row, public_id in enumerate(self.public_ids)}
        self.names = column(cams, "name")
        self.timezones: list[str] = column(cams, "timezone").to_pylist()
        self.lat = column(cams, "latitude").to_numpy(zero_copy_only=True)
        self.lon = column(cams, "longitude").to_numpy(zero_copy_only=True)
        self.json_blob = bytes_map(root / W.CAM_JSON)
        self.json_offsets = npy(root / W.CAM_JSON_OFFSETS)
        self.order = {"views": npy(root / W.ORDER_DESC), "views_asc": npy(root / W.ORDER_ASC)}
        self.row_country = npy(root / W.ROW_COUNTRY)
        codes = npy(root / W.COUNTRY_CODES)
        self.country_index = {code.decode(): i for i, code in enumerate(codes.tolist())}
        self.row_location = npy(root / W.ROW_LOCATION)
        self.location_ids = npy(root / W.LOCATION_IDS)

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

    def mask(self, query: ListQuery) -> np.ndarray | None:
        """Rows matching every filter of `query` (None: no filter given)."""
        mask = None

        def both(more: np.ndarray) -> np.ndarray:
            return more if mask is None else mask & more

        if query.country is not None:
            mask = both(self.row_country == self.country_index[query.country])
        if query.location is not None:
            index = self.location_index(query.location)
            mask = both(self.row_location == (-2 if index is None else index))
        if query.bbox is not None:
            mask = both(query.bbox.contains(self.lat, self.lon))
        if query.nearby is not None:
            mask = both(self.within(query.nearby))
        return mask

    def within(self, nearby: Nearby) -> np.ndarray:
        """Mask of rows within the radius: a latitude band first, exact distances inside it."""
        band = nearby.radius_km / KM_PER_DEGREE + 1e-9
        candidates = np.flatnonzero(np.abs(self.lat - nearby.lat) <= band)
        distance = haversine_km(nearby.lat, nearby.lon, self.lat[candidates],
                                self.lon[candidates])
        mask = np.zeros(self.size, dtype=bool)
        mask[candidates[distance <= nearby.radius_km]] = True
        return mask

    def select(self, query: ListQuery) -> tuple[np.ndarray, int]:
        """(rows of the requested page, total matches) in the requested order."""
        order = self.order[query.sort]
        mask = self.mask(query)
        hits = order if mask is None else order[mask[order]]
        return hits[query.offset:query.offset + query.limit], len(hits)
