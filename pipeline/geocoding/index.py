"""Server indexes for geocoding, precomputed so workers only memory-map and look up.

- places.arrow: served fields in id order (row = position), with rank and region ids;
- ids.npy: fixed-width sorted ids for lookup by id;
- xyz.npy: unit vectors for exact nearest-neighbour search; nearest_*.npy: see nearest;
- keys and trigrams: see keys;
- regions: country and admin1 names -> place rows by rank, for field=all and "city, region";
- local_names.arrow / country_names.arrow: display names by language.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

import contract
from contract import Geocoding as G
from pipeline.common.io import fixed_width_bytes, write_arrow, write_npy
from pipeline.common.sphere import unit_vectors
from pipeline.geocoding import nearest
from pipeline.geocoding.sources import iso3166

log = logging.getLogger("pipeline.geocoding")
FILES = [
    G.PLACES_ARROW,
    G.IDS,
    G.XYZ,
    G.KEYS,
    G.KEYS_ARROW,
    G.KEY_ROW,
    G.KEY_RANK,
    G.UKEY_START,
    G.TRIGRAMS,
    G.TRIGRAM_OFFSETS,
    G.TRIGRAM_POSTINGS,
    G.REGIONS_ARROW,
    G.REGION_ROWS,
    G.LOCAL_NAMES_ARROW,
    G.COUNTRIES_ARROW,
    G.COUNTRY_NAMES_ARROW,
    *nearest.FILES,
    *nearest.ELEVATED_FILES,
]
# Words saying what kind of region an admin1 name is ("Waikato Region", "Moscow Oblast",
# "State of Berlin"): people leave them out, so the rest of the name also names the region.
REGION_KINDS = frozenset(
    """
    canton county department district division emirate governorate krai kraj municipality
    oblast parish prefecture province region republic state territory voivodeship
    """.split()
)
# ... unless the rest only says where ("North Province", "Central Region", "Capital District").
REGION_PLACES = frozenset(
    """
    capital central north south east west northern southern eastern western northeast
    northwest southeast southwest northeastern northwestern southeastern southwestern
    """.split()
)
# What the later indexes need of a place: write_places returns only these columns, so that
# the caller can drop the full table (about a gigabyte for allCountries) before going on.
SLIM_COLUMNS = (
    "row",
    "id",
    "name",
    "rank",
    "country_idx",
    "admin1_idx",
    "is_airport",
    "population",
)


def write_places(
    version: Path, places: pl.DataFrame, countries: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """places.arrow, ids.npy and xyz.npy; returns the places' SLIM_COLUMNS and admin1 regions.

    Pass the only reference to `places`: each column is freed once converted for places.arrow,
    so the table never exists twice.
    """
    places = places.with_row_index("row").with_columns(
        pl.col("row").cast(pl.Int32), is_airport=pl.col("feature_code") == "AIRP"
    )
    places, admin1 = _region_ids(places, countries)
    write_npy(fixed_width_bytes(places["id"], G.ID_BYTES), version / G.IDS)
    xyz = unit_vectors(places["lat"].to_numpy(), places["lon"].to_numpy())
    write_npy(xyz, version / G.XYZ)
    rank = places["rank"].to_numpy()
    nearest.write(version, xyz, rank)
    # The forecast's elevation of a point: that of the nearest place that has one.
    elevated = np.flatnonzero(places["elevation"].is_not_null().to_numpy())
    nearest.write(version, xyz, rank, elevated, nearest.ELEVATED_FILES, G.NEAREST_ELEVATED_KM)
    del xyz, rank
    slim = places.select(SLIM_COLUMNS)
    places = places.select(G.PLACE_INDEX_COLUMNS)
    columns = {}
    for name in G.PLACE_INDEX_COLUMNS:
        columns[name] = places.select(name).to_arrow().column(0)
        places = places.drop(name)
    write_arrow(pa.table(columns), version / G.PLACES_ARROW)
    return slim, admin1


def write_countries(version: Path, countries: pl.DataFrame, country_names: pl.DataFrame) -> None:
    """countries.arrow and country_names.arrow."""
    write_arrow(
        countries.select(
            "code", "name", "flag", "population", "continent", "capital", "timezone"
        ).to_arrow(),
        version / G.COUNTRIES_ARROW,
    )
    write_arrow(
        country_names.select("language", "code", "name").sort("language", "code").to_arrow(),
        version / G.COUNTRY_NAMES_ARROW,
    )


def _region_ids(places: pl.DataFrame, countries: pl.DataFrame):
    """Attach country_idx (position in countries by code) and admin1_idx (cc + admin1 name)."""
    codes = countries.select(country_code="code").with_row_index("country_idx")
    # Grouped first, filtered after: filtering the places first would copy three columns.
    admin1 = (
        places.group_by("country_code", "admin1_name")
        .agg(admin1_code=pl.col("admin1_code").drop_nulls().mode().sort().first())
        .filter(pl.col("admin1_name").is_not_null() & pl.col("country_code").is_not_null())
        .sort("country_code", "admin1_name")
        .with_row_index("admin1_idx")
    )
    # Join only the key columns (a join copies every column of its left side); the right
    # keys are unique, so each result has the places' rows in their order.
    country_idx = places.select("country_code").join(
        codes, on="country_code", how="left", maintain_order="left"
    )["country_idx"]
    admin1_idx = places.select("country_code", "admin1_name").join(
        admin1.select("country_code", "admin1_name", "admin1_idx"),
        on=["country_code", "admin1_name"],
        how="left",
        maintain_order="left",
    )["admin1_idx"]
    places = places.with_columns(
        country_idx=country_idx.fill_null(-1).cast(pl.Int16),
        admin1_idx=admin1_idx.fill_null(-1).cast(pl.Int32),
    )
    return places, admin1


def write_regions(
    version: Path,
    places: pl.DataFrame,
    admin1: pl.DataFrame,
    countries: pl.DataFrame,
    country_names: pl.DataFrame,
) -> None:
    """Region keys (country and admin1 names, codes flagged) with their places by rank."""
    by_country = places.filter(pl.col("country_idx") >= 0).sort("country_idx", "rank")
    by_admin1 = places.filter(pl.col("admin1_idx") >= 0).sort("admin1_idx", "rank")
    rows = np.concatenate([by_country["row"].to_numpy(), by_admin1["row"].to_numpy()])
    write_npy(rows.astype(np.int32), version / G.REGION_ROWS)
    spans = []
    for kind, frame, column, base in (
        ("country", by_country, "country_idx", 0),
        ("admin1", by_admin1, "admin1_idx", by_country.height),
    ):
        bounds = (
            frame.with_row_index("pos")
            .group_by(column, maintain_order=True)
            .agg(start=pl.col("pos").first() + base, end=pl.col("pos").last() + base + 1)
        )
        spans.append(
            bounds.select(
                kind=pl.lit(kind),
                region=pl.col(column).cast(pl.Int32),
                start=pl.col("start").cast(pl.Int64),
                end=pl.col("end").cast(pl.Int64),
            )
        )
    entries = []
    for i, row in enumerate(countries.iter_rows(named=True)):
        entries.append(("country", i, row["name"], False))
        entries.append(("country", i, row["code"], True))
        if row.get("iso3"):
            entries.append(("country", i, row["iso3"], True))
    idx = {c: i for i, c in enumerate(countries["code"].to_list())}
    for code, name in country_names.select("code", "name").unique().iter_rows():
        entries.append(("country", idx[code], name, False))
    iso_codes = iso3166.subdivision_codes(admin1)
    log.info(
        "admin1 regions with an ISO 3166-2 code: %d of %d",
        sum(c is not None for c in iso_codes),
        admin1.height,
    )
    for row, iso_code in zip(admin1.iter_rows(named=True), iso_codes):
        for name in region_names(row["admin1_name"]):
            entries.append(("admin1", row["admin1_idx"], name, False))
        # GeoNames' own code where it is two letters (US states: TX, as ISO's), and ISO's
        # (CA-ON: ON, where GeoNames has 08).
        own = row["admin1_code"]
        own = own if own and own.isalpha() and len(own) == 2 else None
        for code in {own, iso_code} - {None}:
            entries.append(("admin1", row["admin1_idx"], code, True))
    regions = pl.DataFrame(
        [
            (kind, region, key, is_code)
            for kind, region, name, is_code in entries
            for key in contract.name_keys(name)
        ],
        schema={"kind": pl.String, "region": pl.Int32, "key": pl.String, "is_code": pl.Boolean},
        orient="row",
    ).unique()
    regions = regions.join(pl.concat(spans), on=["kind", "region"]).sort(
        "key", "kind", "region", "is_code"
    )
    write_arrow(regions.to_arrow(), version / G.REGIONS_ARROW)


def region_names(name: str) -> list[str]:
    """An admin1 name, and without its kind word if the rest names a place (Waikato Region)."""
    words = name.split()
    keys = [contract.normalise(w) for w in words]
    rest = None
    if len(words) > 1 and keys[-1] in REGION_KINDS:
        rest = slice(0, -1)
    elif len(words) > 2 and keys[0] in REGION_KINDS and keys[1] == "of":
        rest = slice(2, None)
    if rest and not REGION_PLACES.issuperset(" ".join(keys[rest]).split()):
        return [name, " ".join(words[rest])]
    return [name]


def write_local_names(version: Path, places: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """One display name per (language, place): preferred, then short, then first listed."""
    # Chosen on narrow integer keys, the strings gathered last: sorting whole rows copies
    # every column at each step (gigabytes with allCountries and alternateNamesV2).
    usable = names["language"].is_not_null() & ~names["is_historic"] & ~names["is_colloquial"]
    chosen = (
        names.select("id", "is_preferred", "is_short", language=pl.col("language").rank("dense"))
        .with_row_index("order")
        .filter(usable)
        .join(places.select("id", "row"), on="id")
        .drop("id")
        .sort(
            ["language", "row", "is_preferred", "is_short", "order"],
            descending=[False, False, True, True, False],
        )
        .unique(["language", "row"], keep="first", maintain_order=True)
    )
    order = chosen["order"]
    local = pl.DataFrame(
        {
            "language": names["language"].gather(order),
            "row": chosen["row"],
            "name": names["name"].gather(order),
        }
    )
    write_arrow(local.to_arrow(), version / G.LOCAL_NAMES_ARROW)
    return local
