"""Search keys and the trigram (typo) index, built in bounded memory.

- keys.npy / keys.arrow / key_row.npy / key_rank.npy: every distinct (normalised key, place)
  pair, sorted by key then key rank (the place's rank, offset by the number of places when
  the key comes only from alternate names, unless the place outweighs every place whose own
  name it is: see OUTWEIGH_TIERS); an airport's IATA/ICAO codes count as its own name, and the
  distinctive words of its name ("heathrow" of "London Heathrow Airport") as alternate names;
- ukey_start.npy: where each distinct key starts in that order;
- trigrams: padded trigram -> distinct keys of at least TRIGRAM_MIN_CHARS characters.

At allCountries scale there are ~12 million (place, name) pairs, so nothing here holds all of
them as Python objects: distinct names are normalised in batches, DuckDB joins, deduplicates
and sorts the pairs (spilling to a temporary directory under the version beyond DUCKDB_MEMORY),
the sorted result is streamed to the files, and the trigram postings are built in blocks of keys.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import contract
from contract import Geocoding as G
from pipeline.common.io import (
    DUCKDB_WRITE_ERRORS,
    NpyWriter,
    fixed_width_bytes,
    naming,
    release_arrow_memory,
    release_c_heap,
    write_arrow,
    write_npy,
)

log = logging.getLogger("pipeline.geocoding")
DUCKDB_MEMORY = "512MB"
NAME_BATCH = 100_000  # distinct names normalised per Python batch
KEY_BATCH = 1_000_000  # sorted keys streamed per batch
TRIGRAM_BLOCK = 500_000  # distinct keys per trigram block
# An airport's IATA or ICAO code (as GeoNames and airportsdata list them among its names).
AIRPORT_CODE = r"^(?:[A-Z]{3}|[A-Z][A-Z0-9]{3})$"
# Words that say "airport" rather than which one (normalised): an airport's name without its
# leading (city) words and these is what people call it ("London Heathrow Airport": heathrow).
AIRPORT_WORDS = frozenset(
    """
    aerodrome aerodromo aeroport aeroporto aeropuerto afb air airfield airpark airport airstrip
    base city county domestic field flughafen havalimani international internacional
    internationale intl lotnisko luchthaven municipal national regional
    """.split()
)
AIRPORT_MIN_CHARS = 3  # shorter distinctive names ("Terminal B Airport": B) are not indexed
# An alternate name ranks as the place's own when the place has at least
# OUTWEIGH_MIN_POPULATION people and far more than the largest place whose own name it is:
# 8 times as many as a village (Bruges: Brugge, 118,509, before Bruges FR, 12,650), 100 times
# as many as a town (Calcutta: Kolkata, 4.6 million, before Calcutta ZA, 35,864; but
# Salisbury GB, 44,748, before Harare, whose old name it is). A city of OUTWEIGH_TIERS[-1][0]
# or more keeps its name (New Delhi, 317,797, is not found as Delhi), as do airports (their
# codes are their own) and keys shorter than OUTWEIGH_MIN_CHARS (mostly airport codes that
# cities list among their names). Population is all the packaged names tell (they have no
# language), so a village named like a big city's old or foreign name comes second.
OUTWEIGH_TIERS = ((15_000, 8), (50_000, 100))  # (own-name namesake below, times as many)
OUTWEIGH_MIN_POPULATION = 50_000
OUTWEIGH_MIN_CHARS = 4
_WORD_SPLIT = re.compile(r"[^\w'’`ʻʼ‘]+")


def write(
    version: Path,
    tables: dict[str, pl.DataFrame],
    *,
    memory: str = DUCKDB_MEMORY,
    threads: int | None = None,
) -> None:
    """Write the key and trigram files from tables["places"] (row, rank, name, id, is_airport,
    population) and tables["names"] (id, name, language, is_preferred); DuckDB sorts them in
    `memory` with `threads` (its default: one per CPU), spilling beyond.

    Pass the only references, in `tables`: they are taken out and freed once DuckDB is done
    with them (for allCountries some 700 MB that the trigram index would otherwise sit on).
    """
    places, names = tables.pop("places"), tables.pop("names")
    # String views: DuckDB scans the columns where polars keeps them, without a copy.
    newest = pl.CompatLevel.newest()
    place_names = places.select(
        "id", "row", "rank", "name", "is_airport", pl.col("population").fill_null(0)
    ).to_arrow(compat_level=newest)
    other_names = search_names(places, names).to_arrow(compat_level=newest)
    del places, names
    with tempfile.TemporaryDirectory(prefix=".keys-", dir=version) as spill:
        # Join filters pushed into Arrow scans become pyarrow compute calls, which have no
        # string_view kernels: keep them in DuckDB.
        con = duckdb.connect(
            config={
                "memory_limit": memory,
                "temp_directory": spill,
                "preserve_insertion_order": False,
                "disabled_optimizers": "join_filter_pushdown",
                **({"threads": threads} if threads else {}),
            }
        )
        try:
            # A failed spill names the spill directory (and the free space, counted before
            # closing deletes the spill).
            with naming(spill, DUCKDB_WRITE_ERRORS):
                con.register("place_names", place_names)
                con.register("other_names", other_names)
                _normalise_names(con)
                written = _write_sorted_keys(version, con)
        finally:
            con.close()
    del place_names, other_names
    release_arrow_memory()
    release_c_heap()
    unique = _write_key_strings(version, *written)
    _write_trigrams(version, unique)


def search_names(places: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """(id, name, alternate) of every name but the places' own: alternate names, except an
    airport's codes and a place's preferred name in a language (the name the API shows for it
    in that language: "Roma" is Rome's as much as "Rome" is), plus the distinctive names of
    airports (alternate)."""
    airports = places.filter(pl.col("is_airport")).select("id", "name")
    codes = (
        names.select("id", "name")
        .with_row_index("i")
        .filter(pl.col("id").is_in(airports["id"].implode()))
        .filter(pl.col("name").str.contains(AIRPORT_CODE))["i"]
        .to_numpy()
    )
    alternate = (
        ~(names["is_preferred"] & names["language"].is_not_null()).fill_null(False).to_numpy()
    )
    alternate[codes] = False
    derived = [(i, n) for i, name in airports.iter_rows() for n in airport_names(name)]
    return pl.concat(
        [
            names.select("id", "name").with_columns(alternate=pl.Series(alternate)),
            pl.DataFrame(
                derived, schema={"id": pl.String, "name": pl.String}, orient="row"
            ).with_columns(alternate=pl.lit(True)),
        ]
    )


def airport_names(name: str) -> list[str]:
    """What an airport is called without its leading words, and also without AIRPORT_WORDS.

    "London Heathrow Airport" -> "Heathrow Airport", "Heathrow"; "Amsterdam Airport
    Schiphol" -> "Schiphol"; "Zurich Airport" -> none (its own name already starts so).
    """
    words = [w for w in _WORD_SPLIT.split(name) if w]
    generic = [contract.normalise(w) in AIRPORT_WORDS for w in words]
    found = []
    for start in range(1, len(words)):
        if generic[start]:
            continue  # "International Airport" names no airport
        tail = words[start:]
        core = " ".join(w for w, g in zip(tail, generic[start:]) if not g)
        if len(contract.normalise(core)) < AIRPORT_MIN_CHARS:
            continue
        for text in (" ".join(tail), core):
            if text not in found:
                found.append(text)
    return found


def _normalise_names(con: duckdb.DuckDBPyConnection) -> None:
    """Table name_keys(name, key): every distinct name's search keys, normalised in batches."""
    con.execute("CREATE TABLE name_keys (name VARCHAR, key VARCHAR)")
    writer = con.cursor()  # a second connection, so inserting does not end the scan
    try:
        scan = con.execute(
            "SELECT DISTINCT name FROM (SELECT name FROM place_names UNION ALL "
            "SELECT name FROM other_names)"
        ).to_arrow_reader(NAME_BATCH)
        for batch in scan:
            names: list[str] = []
            keys: list[str] = []
            for s in batch.column(0).to_pylist():
                if s is None:
                    continue
                for k in contract.name_keys(s):
                    names.append(s)
                    keys.append(k)
            writer.from_arrow(
                pa.table({"name": pa.array(names, pa.string()), "key": pa.array(keys, pa.string())})
            ).insert_into("name_keys")
    finally:
        writer.close()


def _write_sorted_keys(version: Path, con: duckdb.DuckDBPyConnection) -> tuple:
    """Stream the sorted keys into the .npy files; return what keys.arrow and ukey_start need.

    That is the key strings, the distinct ones and where they start (as lists of chunks),
    and the number of keys.
    """
    key_chunks, unique_chunks, starts = [], [], []
    previous, total = None, 0
    with (
        NpyWriter(version / G.KEYS, f"S{G.KEY_BYTES}") as keys,
        NpyWriter(version / G.KEY_ROW, np.int32) as rows,
        NpyWriter(version / G.KEY_RANK, np.int32) as ranks,
    ):
        for batch in _sorted_keys(con):
            key = batch.column("key")
            keys.write(fixed_width_bytes(key, G.KEY_BYTES))
            rows.write(batch.column("row").to_numpy())
            ranks.write(batch.column("rank").to_numpy())
            first = _first_distinct(key, previous)
            starts.append(np.flatnonzero(first) + total)
            unique_chunks.append(key.filter(first))
            key_chunks.append(key)
            previous, total = key[-1].as_py(), total + len(key)
    return key_chunks, unique_chunks, starts, total


def _write_key_strings(
    version: Path, key_chunks: list, unique_chunks: list, starts: list, total: int
) -> pa.Array:
    """keys.arrow and ukey_start.npy; returns the distinct keys in order."""
    write_arrow(pa.table({"key": _concat_strings(key_chunks)}), version / G.KEYS_ARROW)
    write_npy(
        np.append(np.concatenate(starts or [np.zeros(0, np.int64)]), total).astype(np.int32),
        version / G.UKEY_START,
    )
    unique = _concat_strings(unique_chunks)
    log.info("search index: %d keys (%d distinct)", total, len(unique))
    return unique


def _concat_strings(chunks: list[pa.Array]) -> pa.Array:
    """One large_string array of the chunks, emptying the list so each chunk is freed once copied.

    combine_chunks would hold every chunk until the end: twice the ~200 MB of allCountries' keys.
    """
    n = sum(len(c) for c in chunks)
    offsets = np.zeros(n + 1, dtype=np.int64)
    data = np.empty(sum(c.buffers()[2].size if c.buffers()[2] else 0 for c in chunks), np.uint8)
    row = at = 0
    while chunks:
        chunk = chunks.pop(0)
        _, chunk_offsets, chunk_data = chunk.buffers()
        own = np.frombuffer(chunk_offsets, np.int64)[chunk.offset : chunk.offset + len(chunk) + 1]
        used = int(own[-1] - own[0])
        if used:
            data[at : at + used] = np.frombuffer(chunk_data, np.uint8)[own[0] : own[-1]]
        offsets[row + 1 : row + len(chunk) + 1] = own[1:] - own[0] + at
        row, at = row + len(chunk), at + used
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data[:at]))


def _sorted_keys(con: duckdb.DuckDBPyConnection) -> Iterator[pa.RecordBatch]:
    """Distinct (key, row, rank) batches in (key, rank) order (rank is unique: a total order)."""
    # Each (key, place) pair once, with the place's rank offset when no own name gives the key.
    con.execute("""
        CREATE TEMP TABLE key_pairs AS
        WITH pairs AS (
            SELECT row, rank, name, population, is_airport, 0 AS alternate FROM place_names
            UNION ALL
            SELECT p.row, p.rank, o.name, p.population, p.is_airport, o.alternate::INTEGER
            FROM other_names o JOIN place_names p USING (id)),
        places AS (SELECT count(*) AS n FROM place_names)
        SELECT k.key, p.row::INTEGER AS row,
               min(p.rank + p.alternate * (SELECT n FROM places))::INTEGER AS rank,
               any_value(p.population) AS population, any_value(p.is_airport) AS is_airport
        FROM pairs p JOIN name_keys k USING (name)
        GROUP BY k.key, p.row""")
    reader = con.execute(f"""
        WITH places AS (SELECT count(*) AS n FROM place_names),
        own AS (
            SELECT key, max(population) AS population, bool_or(is_airport) AS airport
            FROM key_pairs WHERE rank < (SELECT n FROM places) GROUP BY key)
        SELECT k.key, k.row,
               (CASE WHEN {_outweighs("k", "o", "(SELECT n FROM places)")}
                     THEN k.rank - (SELECT n FROM places) ELSE k.rank END)::INTEGER AS rank
        FROM key_pairs k LEFT JOIN own o USING (key)
        ORDER BY key, rank""").to_arrow_reader(KEY_BATCH)
    for batch in reader:
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays(
                [batch.column(0).cast(pa.large_string()), batch.column(1), batch.column(2)],
                names=["key", "row", "rank"],
            )


def _outweighs(pair: str, own: str, places: str) -> str:
    """SQL: whether the alternate-name `pair` ranks as an own name (see OUTWEIGH_TIERS), given
    `own`, its key's own-name places (population, airport; NULL when there are none)."""
    needed = " ".join(
        f"WHEN {own}.population < {below} THEN {ratio} * {own}.population"
        for below, ratio in OUTWEIGH_TIERS
    )
    return (
        f"{pair}.rank >= {places} AND {own}.key IS NOT NULL AND NOT {own}.airport "
        f"AND length({pair}.key) >= {OUTWEIGH_MIN_CHARS} "
        f"AND {pair}.population >= {OUTWEIGH_MIN_POPULATION} "
        f"AND {pair}.population >= (CASE {needed} END)"
    )


def _first_distinct(key: pa.Array, previous: str | None) -> np.ndarray:
    """True where a key differs from the one before it (the batch before for the first)."""
    first = np.ones(len(key), dtype=bool)
    if len(key) > 1:
        first[1:] = pc.not_equal(key.slice(1), key.slice(0, len(key) - 1)).to_numpy(
            zero_copy_only=False
        )
    if len(key) and previous is not None:
        first[0] = key[0].as_py() != previous
    return first


# A trigram is packed into one integer as three 21-bit code points; integer order is then
# code point order, which is the byte order of the UTF-8 strings.
_CP_BITS = 21
_CP_MASK = (1 << _CP_BITS) - 1


def _write_trigrams(version: Path, unique: pa.Array) -> None:
    """Inverted index: padded trigram -> distinct keys (ukeys) of at least TRIGRAM_MIN_CHARS.

    Blocks of keys give runs of (trigram, ukey) pairs; ukeys grow from block to block, so
    placing each run after the previous ones within every trigram keeps postings in
    (trigram, ukey) order.
    """
    long = pc.greater_equal(pc.utf8_length(unique), G.TRIGRAM_MIN_CHARS)
    ukeys = np.flatnonzero(long.to_numpy(zero_copy_only=False)).astype(np.int32)
    selected = unique.filter(long)
    del unique, long
    runs = [
        _trigram_run(selected.slice(start, TRIGRAM_BLOCK), ukeys[start : start + TRIGRAM_BLOCK])
        for start in range(0, len(selected), TRIGRAM_BLOCK)
    ]
    del selected, ukeys
    grams = np.unique(np.concatenate([r[0] for r in runs] or [np.zeros(0, np.uint64)]))
    counts = np.zeros(len(grams), dtype=np.int64)
    for run_grams, run_counts, _ in runs:
        counts[np.searchsorted(grams, run_grams)] += run_counts
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    postings = np.empty(int(offsets[-1]), dtype=np.int32)
    cursor = offsets[:-1].copy()
    while runs:
        run_grams, run_counts, owners = runs.pop(0)
        ids = np.searchsorted(grams, run_grams)
        run_starts = np.concatenate([[0], np.cumsum(run_counts)[:-1]])
        postings[np.repeat(cursor[ids] - run_starts, run_counts) + np.arange(len(owners))] = owners
        cursor[ids] += run_counts
    strings = [
        (
            chr(int(g) >> 2 * _CP_BITS)
            + chr((int(g) >> _CP_BITS) & _CP_MASK)
            + chr(int(g) & _CP_MASK)
        ).encode()
        for g in grams
    ]
    write_npy(np.array(strings, dtype=f"S{G.TRIGRAM_BYTES}"), version / G.TRIGRAMS)
    write_npy(offsets, version / G.TRIGRAM_OFFSETS)
    write_npy(postings, version / G.TRIGRAM_POSTINGS)
    log.info("trigram index: %d trigrams, %d postings", len(grams), len(postings))


def _trigram_run(keys: pa.Array, ukeys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (trigram, ukey) pairs of a block: sorted trigrams, their counts, the ukeys.

    Trigrams are computed on integer code points, never as one string per trigram.
    """
    selected = pl.Series(keys, dtype=pl.String)
    padded_len = selected.str.len_chars().to_numpy().astype(np.int64) + 2
    text = (
        selected.to_frame("key")
        .select((pl.lit(" ") + pl.col("key") + pl.lit(" ")).str.join(""))
        .item()
    )
    del selected
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    del text
    per_key = padded_len - 2
    # Trigram i of key k starts at (k's offset in codepoints) + i = position + 2 * k.
    ordinal = np.repeat(np.arange(len(per_key), dtype=np.int64), per_key)
    position = np.arange(int(per_key.sum()), dtype=np.int64) + 2 * ordinal
    owner = ukeys[ordinal]
    del ordinal
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
    dense = np.empty(len(by_value), dtype=np.uint32)
    dense[by_value] = np.arange(len(by_value), dtype=np.uint32)
    gram_id = dense[encoded.indices.to_numpy()]
    grams = first_seen[by_value]
    del encoded, first_seen, by_value, dense
    # Owners are nondecreasing, so a stable sort by trigram orders pairs by (trigram, key).
    order = _stable_argsort(gram_id)
    gram_id, owner = gram_id[order], owner[order]
    del order
    keep = np.ones(len(gram_id), dtype=bool)
    keep[1:] = (gram_id[1:] != gram_id[:-1]) | (owner[1:] != owner[:-1])
    counts = np.bincount(gram_id[keep], minlength=len(grams))
    return grams, counts.astype(np.int64), owner[keep]


def _stable_argsort(values: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative integers < 2**32: LSD radix on 16-bit digits."""
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    if len(values) and int(values.max()) > 0xFFFF:
        high = (values[order] >> 16).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order
