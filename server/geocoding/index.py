"""Geocoding indexes, memory-mapped from the artifacts, and the queries over them.

Everything large is a memory map shared by all worker processes; per worker there is only a
KD-tree over the mapped unit vectors and a small dict of region names.
"""

from __future__ import annotations

import bisect
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from scipy.spatial import cKDTree

import contract
from contract import EARTH_RADIUS_KM
from contract import Geocoding as G
from server.artifacts.mapped import ByteFile, NpyFile, NullableNumbers, numbers
from server.artifacts.mapped import arrow_table as _arrow
from server.artifacts.mapped import column as _column
from server.artifacts.mapped import npy as _npy
from server.geocoding.nearest import NearestIndex, chord_km, unit_vector

OLD_BUILD_NEIGHBOURS = 8


class GeocodingIndex:
    """The loaded geocoding area of one published version."""

    def __init__(self, root: Path):
        places = _arrow(root / G.PLACES_ARROW)
        self.size = places.num_rows
        col = lambda name: _column(places, name)  # noqa: E731
        self.id, self.name, self.cc = col("id"), col("name"), col("country_code")
        self.admin1, self.admin2, self.tz = col("admin1_name"), col("admin2_name"), col("timezone")
        self.population, self.elevation = col("population"), col("elevation")
        self.feature = col("feature_code")
        self.populations = NullableNumbers(self.population)  # search compares sizes
        self.lat = numbers(places, "lat")
        self.lon = numbers(places, "lon")
        self.rank = numbers(places, "rank")
        self.country_idx = numbers(places, "country_idx")
        self.admin1_idx = numbers(places, "admin1_idx")
        self.ids = _npy(root / G.IDS)
        self.xyz = _npy(root / G.XYZ)
        # Sliding-midpoint splits, nodes not shrunk to their points: over 4.9 million places
        # the tree builds in 1.7 s instead of 4.8 s (every worker builds its own at start) and
        # answers a k=10 query as fast or faster.
        self.tree = cKDTree(self.xyz, balanced_tree=False, compact_nodes=False)
        self.nearest_index = NearestIndex(root, self.xyz)
        elevated = (G.NEAREST_ELEVATED_A, G.NEAREST_ELEVATED_B, G.NEAREST_ELEVATED_ROWS)
        # Builds before geocoding revision 9 have no such tree (see nearest_with_elevation).
        self.nearest_elevated = (
            NearestIndex(root, self.xyz, elevated)
            if all((root / name).exists() for name in elevated)
            else None
        )
        self.keys = _npy(root / G.KEYS)
        self.keys_full = _column(_arrow(root / G.KEYS_ARROW), "key")
        self.key_row, self.key_rank = _npy(root / G.KEY_ROW), _npy(root / G.KEY_RANK)
        self.ukey_start = _npy(root / G.UKEY_START)
        self.trigrams = _npy(root / G.TRIGRAMS)
        self.tri_offsets = _npy(root / G.TRIGRAM_OFFSETS)
        self.postings = NpyFile(root / G.TRIGRAM_POSTINGS)  # read: typo searches touch it all over
        self.region_rows = _npy(root / G.REGION_ROWS)
        self.json_blob = ByteFile(root / G.PLACE_JSON)
        self.json_offsets = _npy(root / G.PLACE_JSON_OFFSETS)
        self.json_split = _npy(root / G.PLACE_JSON_SPLIT)
        self.regions = Regions(_arrow(root / G.REGIONS_ARROW))
        self._load_local_names(_arrow(root / G.LOCAL_NAMES_ARROW))
        self._load_countries(_arrow(root / G.COUNTRIES_ARROW), _arrow(root / G.COUNTRY_NAMES_ARROW))

    # ---- loading -------------------------------------------------------------------------

    def _load_local_names(self, table: pa.Table) -> None:
        self.local_rows = numbers(table, "row")
        self.local_names = _column(table, "name")
        self.local_bounds = _runs(_column(table, "language"))

    def _load_countries(self, countries: pa.Table, names: pa.Table) -> None:
        rows = countries.to_pylist()
        self.country_codes = [r["code"] for r in rows]
        self.country_english = {r["code"]: r["name"] for r in rows}
        listing = sorted(rows, key=lambda r: (contract.normalise(r["name"]), r["code"]))
        fields = ("code", "name", "flag", "population", "continent")
        items = [{f: r[f] for f in fields} for r in listing]
        self.countries_body = orjson.dumps({"results": items, "count": len(items)})
        self.country_bodies = {
            r["code"]: orjson.dumps({f: r[f] for f in fields + ("timezone", "capital")})
            for r in rows
        }
        # Each language's names become a dict when first asked for: all 300-odd at load took
        # some 15 MiB a worker, and few are ever asked for.
        self._names_table, self._names_bounds = names, _runs(_column(names, "language"))
        self._country_names: dict[str, dict[str, str]] = {}

    def _names_in(self, lang: str) -> dict[str, str]:
        """CLDR country names in one language, by code (empty when it has none)."""
        found = self._country_names.get(lang)
        if found is None:
            bounds = self._names_bounds.get(lang)
            if bounds is None:
                return {}
            rows = self._names_table.slice(bounds[0], bounds[1] - bounds[0])
            found = self._country_names[lang] = dict(
                zip(rows.column("code").to_pylist(), rows.column("name").to_pylist())
            )
        return found

    # ---- lookups -------------------------------------------------------------------------

    def find_id(self, place_id: str) -> int | None:
        """Row of a place id, or None."""
        needle = place_id.encode()
        if len(needle) > G.ID_BYTES:
            return None
        row = int(self.ids.searchsorted(needle))  # the method: np.searchsorted wraps it
        return row if row < self.size and self.ids[row] == needle else None

    def country_name(self, code: str | None, langs: tuple[str, ...]) -> str | None:
        """CLDR country name in the first available language, else English."""
        if code is None:
            return None
        for lang in langs:
            name = self._names_in(lang).get(code)
            if name:
                return name
        return self.country_english.get(code)

    def local_name(self, row: int, langs: tuple[str, ...]) -> str | None:
        """The place's display name in the first available language, if the data has one."""
        for lang in langs:
            bounds = self.local_bounds.get(lang)
            if bounds:
                start, end = bounds
                i = start + int(np.searchsorted(self.local_rows[start:end], row))
                if i < end and self.local_rows[i] == row:
                    return self.local_names[i].as_py()
        return None

    def location_json(self, row: int, detail: bool) -> bytes:
        """The pipeline-rendered Location JSON in the default language."""
        start = int(self.json_offsets[row])
        if detail:
            return self.json_blob.read_bytes(start, int(self.json_offsets[row + 1]))
        return self.json_blob.read_bytes(start, start + int(self.json_split[row])) + b"}"

    def location(self, row: int, langs: tuple[str, ...], detail: bool) -> dict:
        """One Location object in `langs`; `detail` adds admin2_name and elevation (last, as in
        the pre-rendered JSON)."""
        cc = self.cc[row].as_py()
        item = {
            "id": self.id[row].as_py(),
            "name": self.local_name(row, langs) or self.name[row].as_py(),
            "lat": round(float(self.lat[row]), 5),
            "lon": round(float(self.lon[row]), 5),
            "country_code": cc,
            "country_name": self.country_name(cc, langs),
            "admin1_name": self.admin1[row].as_py(),
            "timezone": self.tz[row].as_py(),
            "population": self.population[row].as_py(),
            "feature_code": self.feature[row].as_py(),
        }
        if detail:
            item["admin2_name"] = self.admin2[row].as_py()
            item["elevation"] = self.elevation[row].as_py()
        return item

    def country_index(self, code: str) -> int:
        """Position of a country code, or -2 (matches no place) when unknown."""
        try:
            return self.country_codes.index(code)
        except ValueError:
            return -2

    # ---- reverse geocoding ---------------------------------------------------------------

    def nearest_with_elevation(self, lat: float, lon: float) -> tuple[int, float]:
        """(row, km) of the nearest place that has an elevation when it lies within
        G.NEAREST_ELEVATED_KM; farther, another such place or (-1, inf). Over an older build,
        without the tree, the nearest such place among the OLD_BUILD_NEIGHBOURS nearest."""
        if self.nearest_elevated is not None:
            return self.nearest_elevated.nearest(lat, lon)
        for row, km in self.nearest(lat, lon, OLD_BUILD_NEIGHBOURS):
            if self.elevation[row].is_valid:
                return row, km
        return -1, math.inf

    def nearest(self, lat: float, lon: float, k: int) -> list[tuple[int, float]]:
        """The k nearest places by great-circle distance, exact, nearest first (ties by rank).

        Chord length orders places exactly as the central angle does, and gives the
        great-circle distance exactly: 2 R asin(chord / 2)."""
        if k == 1:
            return [self.nearest_index.nearest(lat, lon)]
        point = unit_vector(lat, lon)
        k = min(k, self.size)
        chords, rows = self.tree.query(point, k=k)
        if k == 1:
            chords, rows = (chords,), (rows,)
        found = [(chord_km(c), int(self.rank[r]), int(r)) for c, r in zip(chords, rows)]
        found.sort()
        return [(row, distance) for distance, _, row in found]


class Regions:
    """Countries and admin1 regions by name key: (kind, region, is_code, start, end) entries
    from the table sorted by key, found by bisection (a dict of every key's tuples cost some
    16 MiB a worker)."""

    def __init__(self, table: pa.Table):
        self.keys = table.column("key").to_pylist()
        self.table = table

    def get(self, key: str, default: list[tuple] | tuple = ()) -> list[tuple] | tuple:
        """The key's entries in table order, or `default`."""
        lo = bisect.bisect_left(self.keys, key)
        hi = bisect.bisect_right(self.keys, key, lo)
        if lo == hi:
            return default
        rows = self.table.slice(lo, hi - lo)
        return list(
            zip(
                *(rows.column(c).to_pylist() for c in ("kind", "region", "is_code", "start", "end"))
            )
        )


def _runs(values: pa.Array) -> dict[str, tuple[int, int]]:
    """(start, end) of each run of equal values of a sorted column."""
    if not len(values):
        return {}
    runs = pc.run_end_encode(values)
    ends = runs.run_ends.to_pylist()
    return {
        value: (start, end)
        for start, end, value in zip([0] + ends[:-1], ends, runs.values.to_pylist())
    }


def haversine_km(lat: float, lon: float, lats: np.ndarray, lons: np.ndarray) -> np.ndarray:
    """Great-circle distances from one point to many (haversine, mean Earth radius)."""
    p1, p2 = math.radians(lat), np.radians(lats)
    dp, dl = p2 - p1, np.radians(lons) - math.radians(lon)
    a = np.sin(dp / 2) ** 2 + math.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


@lru_cache(maxsize=4096)
def query_key(text: str) -> str:
    """Normalised query text (cached: the same queries recur)."""
    return contract.normalise(text)
