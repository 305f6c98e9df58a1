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
import pyarrow as pa
import pyarrow.compute as pc

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
    del keys
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
    names: list[str] = []
    keys: list[str] = []
    for s in strings.unique().drop_nulls().to_list():
        for k in contract.name_keys(s):
            names.append(s)
            keys.append(k)
    return pl.DataFrame({"name": names, "key": keys}, schema={"name": pl.String, "key": pl.String})


def _fixed_width_bytes(strings: pl.Series, width: int) -> np.ndarray:
    """UTF-8 bytes of each string truncated to `width`, as a numpy S<width> array.

    Same result as ``np.array([s.encode()[:width] ...], dtype=f"S{width}")`` without making
    a Python object per string.
    """
    arr = strings.cast(pl.Binary).to_arrow().cast(pa.large_binary())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    out = np.zeros((n, width), dtype=np.uint8)
    if n:
        _, offsets_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset:arr.offset + n + 1]
        data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
                else np.zeros(0, dtype=np.uint8))
        starts = offsets[:-1]
        lengths = np.minimum(np.diff(offsets), width)
        if arr.null_count:
            lengths[~np.asarray(arr.is_valid())] = 0
        for j in range(int(lengths.max(initial=0))):
            rows = np.flatnonzero(lengths > j)
            out[rows, j] = data[starts[rows] + j]
    return out.view(f"S{width}").reshape(n)


def _write_keys(version: Path, places: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """Sorted (key, row) pairs for exact and prefix search; returns the key table."""
    other = names.join(places.select("id", "row"), on="id").select("row", "name",
                                                                   primary=pl.lit(False))
    every = pl.concat([places.select("row", "name", primary=pl.lit(True)), other])
    del other
    name_keys = _name_keys(every["name"])
    keys = (every.join(name_keys, on="name")
            .group_by("key", "row").agg(pl.col("primary").max())
            .join(places.select("row", "rank"), on="row")
            .sort(["key", "rank"]))
    del every, name_keys
    log.info("search index: %d keys (%d distinct)", keys.height, keys["key"].n_unique())
    write_npy(_fixed_width_bytes(keys["key"], G.KEY_BYTES), version / G.KEYS)
    write_arrow(keys.select("key").to_arrow(), version / G.KEYS_ARROW)
    write_npy(keys["row"].to_numpy().astype(np.int32), version / G.KEY_ROW)
    write_npy(keys["rank"].to_numpy().astype(np.int32), version / G.KEY_RANK)
    return keys


# A trigram is packed into one integer as three 21-bit code points; integer order is then
# code point order, which is the byte order of the UTF-8 strings.
_CP_BITS = 21
_CP_MASK = (1 << _CP_BITS) - 1


def _write_trigrams(version: Path, keys: pl.DataFrame) -> None:
    """Inverted index: padded trigram -> distinct keys of at least TRIGRAM_MIN_CHARS chars.

    Keys are sorted, so distinct key number i (its "ukey") starts at the i-th change of key.
    Trigrams are computed on integer code points, never as one string per trigram.
    """
    key = keys["key"]
    starts = np.flatnonzero(key.is_first_distinct().to_numpy())
    ukey_start = np.append(starts, keys.height).astype(np.int32)
    write_npy(ukey_start, version / G.UKEY_START)
    unique = key.gather(starts)
    del starts, ukey_start
    long = (unique.str.len_chars() >= G.TRIGRAM_MIN_CHARS).to_numpy()
    ukeys = np.flatnonzero(long)
    selected = unique.filter(pl.Series(long))
    del unique, long
    # Padded lengths (chars) and the code points of all padded keys, concatenated.
    padded_len = selected.str.len_chars().to_numpy().astype(np.int64) + 2
    text = selected.to_frame("key").select(
        (pl.lit(" ") + pl.col("key") + pl.lit(" ")).str.join("")).item()
    del selected
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    del text
    per_key = padded_len - 2
    total = int(per_key.sum())
    # Trigram i of key k starts at (k's offset in codepoints) + i = position + 2 * k.
    ordinal = np.repeat(np.arange(len(per_key), dtype=np.int64), per_key)
    position = np.arange(total, dtype=np.int64) + 2 * ordinal
    owner = ukeys[ordinal].astype(np.int32)
    del ordinal, ukeys, padded_len, per_key
    packed = codepoints[position].astype(np.uint64)
    for _ in range(2):
        packed <<= np.uint64(_CP_BITS)
        position += 1
        packed |= codepoints[position]
    del position, codepoints
    # Dense trigram ids in sorted order (hash-encode, then sort only the distinct trigrams).
    encoded = pc.dictionary_encode(pa.array(packed))
    del packed
    first_seen = encoded.dictionary.to_numpy()
    by_value = np.argsort(first_seen)
    grams = first_seen[by_value]
    dense = np.empty(len(by_value), dtype=np.uint32)
    dense[by_value] = np.arange(len(by_value), dtype=np.uint32)
    gram_id = dense[encoded.indices.to_numpy()]
    del encoded, first_seen, by_value, dense
    n_grams = len(grams)
    # Owners are nondecreasing, so a stable sort by trigram orders pairs by (trigram, key).
    order = _stable_argsort(gram_id)
    gram_id, owner = gram_id[order], owner[order]
    del order
    keep = np.ones(len(gram_id), dtype=bool)
    keep[1:] = (gram_id[1:] != gram_id[:-1]) | (owner[1:] != owner[:-1])
    postings = owner[keep].astype(np.int32)
    counts = np.bincount(gram_id[keep], minlength=n_grams)
    del keep, gram_id, owner
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    strings = [(chr(int(g) >> 2 * _CP_BITS) + chr((int(g) >> _CP_BITS) & _CP_MASK)
                + chr(int(g) & _CP_MASK)).encode() for g in grams]
    write_npy(np.array(strings, dtype=f"S{G.TRIGRAM_BYTES}"), version / G.TRIGRAMS)
    write_npy(offsets, version / G.TRIGRAM_OFFSETS)
    write_npy(postings, version / G.TRIGRAM_POSTINGS)
    log.info("trigram index: %d trigrams, %d postings", n_grams, len(postings))


def _stable_argsort(values: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative integers < 2**32: LSD radix on 16-bit digits."""
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    if len(values) and int(values.max()) > 0xFFFF:
        high = (values[order] >> 16).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order


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
