"""Geocoding indexes, memory-mapped from the artifacts, and the queries over them.

Everything large is a memory map shared by all worker processes; per worker there is only a
KD-tree over the mapped unit vectors and a small dict of region names.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from scipy.spatial import cKDTree

import contract
from contract import Geocoding as G
from server.areas.geocoding_nearest import (EARTH_RADIUS_KM, NearestIndex, chord_km,
                                            unit_vector)
from server.mapped import arrow_table as _arrow
from server.mapped import ByteFile
from server.mapped import column as _column
from server.mapped import npy as _npy
from server.mapped import numbers


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
        self.lat = numbers(places, "lat")
        self.lon = numbers(places, "lon")
        self.rank = numbers(places, "rank")
        self.country_idx = numbers(places, "country_idx")
        self.admin1_idx = numbers(places, "admin1_idx")
        self.ids = _npy(root / G.IDS)
        self.xyz = _npy(root / G.XYZ)
        self.tree = cKDTree(self.xyz)
        self.nearest_index = NearestIndex(root, self.xyz)
        self.keys = _npy(root / G.KEYS)
        self.keys_full = _column(_arrow(root / G.KEYS_ARROW), "key")
        self.key_row, self.key_rank = _npy(root / G.KEY_ROW), _npy(root / G.KEY_RANK)
        self.ukey_start = _npy(root / G.UKEY_START)
        self.trigrams = _npy(root / G.TRIGRAMS)
        self.tri_offsets = _npy(root / G.TRIGRAM_OFFSETS)
        self.postings = _npy(root / G.TRIGRAM_POSTINGS)
        self.region_rows = _npy(root / G.REGION_ROWS)
        self.json_blob = ByteFile(root / G.PLACE_JSON)
        self.json_offsets = _npy(root / G.PLACE_JSON_OFFSETS)
        self.json_split = _npy(root / G.PLACE_JSON_SPLIT)
        self.regions = self._load_regions(_arrow(root / G.REGIONS_ARROW))
        self._load_local_names(_arrow(root / G.LOCAL_NAMES_ARROW))
        self._load_countries(_arrow(root / G.COUNTRIES_ARROW),
                             _arrow(root / G.COUNTRY_NAMES_ARROW))

    # ---- loading -------------------------------------------------------------------------

    @staticmethod
    def _load_regions(table: pa.Table) -> dict[str, list[tuple]]:
        regions: dict[str, list[tuple]] = {}
        for key, kind, region, is_code, start, end in zip(*(table.column(c).to_pylist() for c in (
                "key", "kind", "region", "is_code", "start", "end"))):
            regions.setdefault(key, []).append((kind, region, is_code, start, end))
        return regions

    def _load_local_names(self, table: pa.Table) -> None:
        langs = _column(table, "language")
        self.local_rows = numbers(table, "row")
        self.local_names = _column(table, "name")
        self.local_bounds: dict[str, tuple[int, int]] = {}
        if table.num_rows:
            runs = pc.run_end_encode(langs)
            ends = runs.run_ends.to_pylist()
            for start, end, lang in zip([0] + ends[:-1], ends, runs.values.to_pylist()):
                self.local_bounds[lang] = (start, end)

    def _load_countries(self, countries: pa.Table, names: pa.Table) -> None:
        rows = countries.to_pylist()
        self.country_codes = [r["code"] for r in rows]
        self.country_english = {r["code"]: r["name"] for r in rows}
        listing = sorted(rows, key=lambda r: (contract.normalise(r["name"]), r["code"]))
        fields = ("code", "name", "flag", "population", "continent")
        items = [{f: r[f] for f in fields} for r in listing]
        self.countries_body = orjson.dumps({"results": items, "count": len(items)})
        self.country_bodies = {r["code"]: orjson.dumps(
            {f: r[f] for f in fields + ("timezone", "capital")}) for r in rows}
        self._country_names: dict[str, dict[str, str]] = {}
        for lang, code, name in zip(*(names.column(c).to_pylist() for c in (
                "language", "code", "name"))):
            self._country_names.setdefault(lang, {})[code] = name

    # ---- lookups -------------------------------------------------------------------------

    def find_id(self, place_id: str) -> int | None:
        """Row of a place id, or None."""
        needle = place_id.encode()
        if len(needle) > G.ID_BYTES:
            return None
        row = int(np.searchsorted(self.ids, needle))
        return row if row < self.size and self.ids[row] == needle else None

    def country_name(self, code: str | None, langs: tuple[str, ...]) -> str | None:
        """CLDR country name in the first available language, else English."""
        if code is None:
            return None
        for lang in langs:
            name = self._country_names.get(lang, {}).get(code)
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
