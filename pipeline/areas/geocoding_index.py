"""Server indexes for geocoding, precomputed so workers only memory-map and look up.

- places.arrow: served fields in id order (row = position), with rank and region ids;
- ids.npy: fixed-width sorted ids for lookup by id;
- xyz.npy: unit vectors for exact nearest-neighbour search;
- keys.npy / key_row.npy / key_rank.npy: every normalised name key, sorted, with its place;
- trigrams: an inverted index from padded trigrams to unique keys, for typo tolerance;
- regions: country and admin1 names -> place rows by rank, for field=all and "city, region";
- local_names.arrow / country_names.arrow: display names by language.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl

import contract
from contract import Geocoding as G
from pipeline.io import write_arrow, write_npy

log = logging.getLogger("pipeline.geocoding")


def write(version: Path, places: pl.DataFrame, names: pl.DataFrame, countries: pl.DataFrame,
          country_names: pl.DataFrame) -> list[str]:
    """Write every index file; return their paths relative to the version directory."""
    places = places.with_row_index("row").with_columns(pl.col("row").cast(pl.Int32))
    places, admin1 = _region_ids(places, countries)
    write_arrow(places.select(G.PLACE_INDEX_COLUMNS).to_arrow(), version / G.PLACES_ARROW)
    write_npy(np.array(places["id"].to_list(), dtype=f"S{G.ID_BYTES}"), version / G.IDS)
    write_npy(unit_vectors(places["lat"].to_numpy(), places["lon"].to_numpy()), version / G.XYZ)
    keys = _write_keys(version, places, names)
    _write_trigrams(version, keys)
    _write_regions(version, places, admin1, countries, country_names)
    _write_local_names(version, places, names)
    write_arrow(countries.select("code", "name", "flag", "population", "continent", "capital",
                                 "timezone").to_arrow(), version / G.COUNTRIES_ARROW)
    write_arrow(country_names.select("language", "code", "name").sort("language", "code")
                .to_arrow(), version / G.COUNTRY_NAMES_ARROW)
    return [G.PLACES_ARROW, G.IDS, G.XYZ, G.KEYS, G.KEYS_ARROW, G.KEY_ROW, G.KEY_RANK,
            G.UKEY_START, G.TRIGRAMS, G.TRIGRAM_OFFSETS, G.TRIGRAM_POSTINGS, G.REGIONS_ARROW,
            G.REGION_ROWS, G.LOCAL_NAMES_ARROW, G.COUNTRIES_ARROW, G.COUNTRY_NAMES_ARROW]


def unit_vectors(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    """(N, 3) unit vectors; chord distance orders points exactly as great-circle distance."""
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    return np.column_stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])


def _region_ids(places: pl.DataFrame, countries: pl.DataFrame):
    """Attach country_idx (position in countries by code) and admin1_idx (cc + admin1 name)."""
    codes = countries.select(country_code="code").with_row_index("country_idx")
    admin1 = (places.filter(pl.col("admin1_name").is_not_null() & pl.col("country_code").is_not_null())
              .group_by("country_code", "admin1_name")
              .agg(admin1_code=pl.col("admin1_code").drop_nulls().mode().sort().first())
              .sort("country_code", "admin1_name").with_row_index("admin1_idx"))
    places = (places.join(codes, on="country_code", how="left", maintain_order="left")
              .join(admin1.select("country_code", "admin1_name", "admin1_idx"),
                    on=["country_code", "admin1_name"], how="left", maintain_order="left")
              .with_columns(country_idx=pl.col("country_idx").fill_null(-1).cast(pl.Int16),
                            admin1_idx=pl.col("admin1_idx").fill_null(-1).cast(pl.Int32)))
    return places.sort("row"), admin1


def _name_keys(strings: pl.Series) -> pl.DataFrame:
    """Map each distinct name to its search keys (normalised once per distinct string)."""
    unique = strings.unique().drop_nulls().to_list()
    pairs = [(s, k) for s in unique for k in contract.name_keys(s)]
    return pl.DataFrame(pairs, schema={"name": pl.String, "key": pl.String}, orient="row")


def _write_keys(version: Path, places: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """Sorted (key, row) pairs for exact and prefix search; returns the key table."""
    other = names.join(places.select("id", "row"), on="id").select("row", "name",
                                                                   primary=pl.lit(False))
    every = pl.concat([places.select("row", "name", primary=pl.lit(True)), other])
    keys = (every.join(_name_keys(every["name"]), on="name")
            .group_by("key", "row").agg(pl.col("primary").max())
            .join(places.select("row", "rank"), on="row")
            .sort(["key", "rank"]))
    log.info("search index: %d keys (%d distinct)", keys.height, keys["key"].n_unique())
    encoded = [k.encode() for k in keys["key"].to_list()]
    write_npy(np.array([k[:G.KEY_BYTES] for k in encoded], dtype=f"S{G.KEY_BYTES}"),
              version / G.KEYS)
    write_arrow(keys.select("key").to_arrow(), version / G.KEYS_ARROW)
    write_npy(keys["row"].to_numpy().astype(np.int32), version / G.KEY_ROW)
    write_npy(keys["rank"].to_numpy().astype(np.int32), version / G.KEY_RANK)
    return keys


def _write_trigrams(version: Path, keys: pl.DataFrame) -> None:
    """Inverted index: padded trigram -> distinct keys of at least TRIGRAM_MIN_CHARS chars."""
    starts = keys.with_row_index("pos").group_by("key", maintain_order=True).agg(
        start=pl.col("pos").first())
    ukey_start = np.append(starts["start"].to_numpy(), keys.height).astype(np.int32)
    write_npy(ukey_start, version / G.UKEY_START)
    grams = (starts.with_row_index("ukey")
             .filter(pl.col("key").str.len_chars() >= G.TRIGRAM_MIN_CHARS)
             .select("ukey", padded=pl.lit(" ") + pl.col("key") + pl.lit(" "))
             .with_columns(offset=pl.int_ranges(0, pl.col("padded").str.len_chars() - 2))
             .explode("offset")
             .select("ukey", gram=pl.col("padded").str.slice(pl.col("offset"), 3))
             .unique().sort(["gram", "ukey"]))
    counts = grams.group_by("gram", maintain_order=True).len()
    offsets = np.concatenate([[0], np.cumsum(counts["len"].to_numpy())]).astype(np.int64)
    write_npy(np.array([g.encode() for g in counts["gram"].to_list()], dtype=f"S{G.TRIGRAM_BYTES}"),
              version / G.TRIGRAMS)
    write_npy(offsets, version / G.TRIGRAM_OFFSETS)
    write_npy(grams["ukey"].to_numpy().astype(np.int32), version / G.TRIGRAM_POSTINGS)
    log.info("trigram index: %d trigrams, %d postings", counts.height, grams.height)


def _write_regions(version: Path, places: pl.DataFrame, admin1: pl.DataFrame,
                   countries: pl.DataFrame, country_names: pl.DataFrame) -> None:
    """Region keys (country and admin1 names, codes flagged) with their places by rank."""
    by_country = places.filter(pl.col("country_idx") >= 0).sort("country_idx", "rank")
    by_admin1 = places.filter(pl.col("admin1_idx") >= 0).sort("admin1_idx", "rank")
    rows = np.concatenate([by_country["row"].to_numpy(), by_admin1["row"].to_numpy()])
    write_npy(rows.astype(np.int32), version / G.REGION_ROWS)
    spans = []
    for kind, frame, column, base in (("country", by_country, "country_idx", 0),
                                      ("admin1", by_admin1, "admin1_idx", by_country.height)):
        bounds = frame.with_row_index("pos").group_by(column, maintain_order=True).agg(
            start=pl.col("pos").first() + base, end=pl.col("pos").last() + base + 1)
        spans.append(bounds.select(kind=pl.lit(kind), region=pl.col(column).cast(pl.Int32),
                                   start=pl.col("start").cast(pl.Int64),
                                   end=pl.col("end").cast(pl.Int64)))
    entries = []
    for i, row in enumerate(countries.iter_rows(named=True)):
        entries.append(("country", i, row["name"], False))
        entries.append(("country", i, row["code"], True))
        if row.get("iso3"):
            entries.append(("country", i, row["iso3"], True))
    idx = {c: i for i, c in enumerate(countries["code"].to_list())}
    for code, name in country_names.select("code", "name").unique().iter_rows():
        entries.append(("country", idx[code], name, False))
    for row in admin1.iter_rows(named=True):
        entries.append(("admin1", row["admin1_idx"], row["admin1_name"], False))
        code = row["admin1_code"]
        if code and code.isalpha() and len(code) == 2:
            entries.append(("admin1", row["admin1_idx"], code, True))
    regions = pl.DataFrame(
        [(kind, region, key, is_code) for kind, region, name, is_code in entries
         for key in contract.name_keys(name)],
        schema={"kind": pl.String, "region": pl.Int32, "key": pl.String, "is_code": pl.Boolean},
        orient="row").unique()
    regions = (regions.join(pl.concat(spans), on=["kind", "region"])
               .sort("key", "kind", "region", "is_code"))
    write_arrow(regions.to_arrow(), version / G.REGIONS_ARROW)


def _write_local_names(version: Path, places: pl.DataFrame, names: pl.DataFrame) -> None:
    """One display name per (language, place): preferred, then short, then first listed."""
    local = (names.with_row_index("order")
             .filter(pl.col("language").is_not_null() & ~pl.col("is_historic")
                     & ~pl.col("is_colloquial"))
             .join(places.select("id", "row"), on="id")
             .sort(["language", "row", "is_preferred", "is_short", "order"],
                   descending=[False, False, True, True, False])
             .unique(["language", "row"], keep="first", maintain_order=True)
             .select("language", "row", "name"))
    write_arrow(local.to_arrow(), version / G.LOCAL_NAMES_ARROW)
