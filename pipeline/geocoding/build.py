"""Geocoding area: gazetteer source -> locations, countries, names tables and server indexes."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from babel.core import get_global
from tzfpy import get_tz

import contract
from contract import Geocoding as G
from pipeline.common.io import (
    Spill,
    describe_inputs,
    release_arrow_memory,
    write_parquet,
    write_parquet_frame,
)
from pipeline.geocoding import index, keys, records
from pipeline.geocoding.sources import cldr, packaged
from pipeline.geocoding.sources import geonames as geonames_dump
from pipeline.geocoding.sources.gazetteer import Gazetteer

log = logging.getLogger("pipeline.geocoding")
# Bump when the derived tables change for the same inputs (part of the data version).
# 4: airports keep their IATA/ICAO codes from alternateNamesV2; 5: keys without invisible
# format characters, regions also without their kind word; 6: CLDR city names, preferred names
# ranked as own names; 7: names also keyed with apostrophes read as spaces, and with
# Saint/St., Sainte/Ste., Mount/Mt., Fort/Ft. spelt the other way; admin1 regions also
# named by their ISO 3166-2 codes; 8: no ISO code by spelling for names under 8 letters;
# 9: the quadtree of the places that have an elevation; 10: an alternate name of a place
# that outweighs its key's own-name places by population ranks as an own name
BUILDER_REVISION = 10
LICENCE = (
    "GeoNames (https://www.geonames.org/), CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/); transformed: filtered to populated "
    "places and airports, names normalised, admin names joined; provided as is, without "
    "warranty. Country names: Unicode CLDR via Babel (Unicode licence). Region codes: ISO "
    "3166-2 via pycountry (LGPL 2.1)."
)


def build(datasets: Path, version: Path) -> contract.AreaEntry:
    """Build the geocoding area into `version`; return its manifest entry."""
    if geonames_dump.present(datasets):
        log.info("reading GeoNames dumps from %s", datasets / "geonames")
        gazetteer = geonames_dump.read(datasets)
    else:
        log.info("no %s: using the packaged offline default", datasets / "geonames")
        gazetteer = packaged.read()
    gazetteer = gazetteer.conformed()
    # Tables are handed over through this dict so that no earlier copy stays referenced here:
    # at allCountries scale one copy of the places is about a gigabyte.
    tables = {
        "places": gazetteer.places,
        "names": gazetteer.names,
        "countries": gazetteer.countries,
    }
    gazetteer = dataclasses.replace(
        gazetteer,
        places=gazetteer.places.schema.empty_table(),
        names=gazetteer.names.schema.empty_table(),
        countries=gazetteer.countries.schema.empty_table(),
    )
    # The names wait on disk while the places are processed (a quarter GB for allCountries).
    parked_names = Spill()
    parked_names.append(tables.pop("names"))
    tables["places"] = finish_places(tables.pop("places"))
    countries = finish_countries(pl.from_arrow(tables.pop("countries")), tables["places"])
    country_names = cldr.country_names(countries["code"].to_list())
    rows = {
        "locations": write_parquet_frame(
            tables["places"].select(G.LOCATION_COLUMNS), version / G.LOCATIONS
        )
    }
    coverage = _coverage(tables["places"])
    # Columns only the locations table has are not needed any more.
    tables["places"] = tables["places"].drop("admin2_code", "source")
    # write_places gets the only reference, so it can free columns as it writes them.
    places, admin1 = index.write_places(version, tables.pop("places"), countries)
    names = pl.from_arrow(parked_names.read())
    parked_names.close()
    known = names["id"].is_in(places["id"].implode())
    if not known.all():  # filtering copies every column: only when some place is unknown
        names = names.filter(known)
    del known
    log.info(
        "%d places, %d other names, %d countries", places.height, names.height, countries.height
    )
    rows.update(
        {
            "countries": write_parquet(
                countries.select(G.COUNTRY_COLUMNS).to_arrow(), version / G.COUNTRIES
            ),
            "country_names": write_parquet(country_names.to_arrow(), version / G.COUNTRY_NAMES),
            "place_names": write_parquet_frame(
                names,
                version / G.PLACE_NAMES,
                order=names.select(
                    pl.arg_sort_by("id", "language", "name", maintain_order=True)
                ).to_series(),
            ),
        }
    )
    index.write_regions(version, places, admin1, countries, country_names)
    local = index.write_local_names(version, places, names)
    json_files = records.write(
        version,
        _english_country_names(countries, country_names),
        local.filter(pl.col("language") == G.DEFAULT_LANGUAGE).select("row", "name"),
    )
    del local
    index.write_countries(version, countries, country_names)
    # The keys need these columns only; dropping the others frees them, and keys.write takes
    # the only references.
    search = {
        "places": places.select("row", "rank", "name", "id", "is_airport", "population"),
        "names": names.select("id", "name", "language", "is_preferred"),
    }
    del places, names
    keys.write(version, search)
    tables = {name: {"file": contract.TABLES[name], "rows": rows[name]} for name in contract.TABLES}
    return _manifest_entry(gazetteer, datasets, coverage, tables, index.FILES + json_files)


def finish_places(places: pa.Table) -> pl.DataFrame:
    """Unique ids in byte order, timezones filled from coordinates, a global rank.

    Pass the only reference to `places`: it becomes a polars frame one column at a time,
    each Arrow column freed once converted, so the table never exists twice.
    """
    ids = pl.from_arrow(places.column("id").combine_chunks())
    first = ids.is_first_distinct()
    if not first.all():
        log.warning("dropping %d rows with duplicate ids", places.num_rows - first.sum())
    # The first row of each id, in id order: what unique("id", keep="first") then sort("id")
    # keeps. A gather from one chunk, as sort does, also gives the same validity bytes.
    keep = pl.int_range(places.num_rows, eager=True, dtype=pl.get_index_type()).filter(first)
    order = keep.gather(ids.gather(keep).arg_sort())
    del ids, first, keep
    columns = {}
    for name in places.column_names:
        column = pl.from_arrow(places.column(name).combine_chunks()).alias(name)
        places = places.drop_columns([name])
        columns[name] = column.gather(order)
        del column
        release_arrow_memory()
    places = pl.DataFrame(columns)
    del columns, order
    missing = np.flatnonzero(places["timezone"].is_null().to_numpy())
    if len(missing):
        lat, lon = places["lat"].to_numpy()[missing], places["lon"].to_numpy()[missing]
        found = pl.Series(
            [get_tz(x, y) or None for x, y in zip(lon.tolist(), lat.tolist())], dtype=pl.String
        )
        places = places.with_columns(places["timezone"].clone().scatter(missing, found))
    return places.with_columns(rank=_rank(places))


def _rank(places: pl.DataFrame) -> pl.Series:
    """Importance rank: population, then feature (capitals, admin seats first), then id.

    Places are in id order, so the row number stands in for the id (integers sort cheaply).
    """
    feature = places["feature_code"].replace_strict(
        {code: i for i, code in enumerate(G.FEATURE_ORDER)},
        default=len(G.FEATURE_ORDER),
        return_dtype=pl.Int32,
    )
    feature = pl.when(places["feature_code"] == "AIRP").then(99).otherwise(feature)
    order = (
        places.select(
            pop=pl.col("population").fill_null(0),
            feat=feature,
        )
        .with_row_index("row")
        .sort(["pop", "feat", "row"], descending=[True, False, False])
    )
    rank = np.empty(places.height, dtype=np.int32)
    rank[order["row"].to_numpy()] = np.arange(places.height, dtype=np.int32)
    return pl.Series("rank", rank)


def finish_countries(countries: pl.DataFrame, places: pl.DataFrame) -> pl.DataFrame:
    """Drop dissolved countries; add CLDR English names, flags and a timezone per country.

    A population of 0 (Antarctica, Bouvet Island in countryInfo) is unknown: null, as for places.
    """
    dissolved = set(get_global("territory_aliases"))
    countries = countries.filter(~pl.col("code").is_in(sorted(dissolved)))
    english = cldr.english_names(countries["code"].to_list())
    # A country's timezone is its capital's, else that of its most populous place; airports
    # only where it has no other place (Antarctica's research stations are only airports).
    best = (
        places.select("country_code", "timezone", "feature_code", "rank")
        .filter(pl.col("timezone").is_not_null())
        .sort(pl.col("feature_code") != "PPLC", pl.col("feature_code") == "AIRP", "rank")
        .unique("country_code", keep="first", maintain_order=True)
        .select(code="country_code", timezone="timezone")
    )
    return (
        countries.with_columns(
            population=pl.when(pl.col("population") > 0).then(pl.col("population")),
            name=pl.Series(
                [english.get(c) or n for c, n in zip(countries["code"], countries["name"])],
                dtype=pl.String,
            ),
            flag=pl.Series([contract.flag_emoji(c) for c in countries["code"]], dtype=pl.String),
        )
        .join(best, on="code", how="left")
        .sort("code")
    )


def _coverage(places: pl.DataFrame) -> dict:
    """Share of places with admin names (GeoNames places only) and with an elevation."""
    geonames = places["feature_code"] != "AIRP"  # a mask: filtering would copy columns
    return {
        "admin1_name": round(
            (places["admin1_name"].is_not_null() & geonames).sum() / geonames.sum(), 4
        ),
        "admin2_name": round(
            (places["admin2_name"].is_not_null() & geonames).sum() / geonames.sum(), 4
        ),
        # GeoNames leaves admin2 empty where a region has no second-level division (German
        # states without Regierungsbezirke, Israel, ...): the share among places that have one.
        "admin2_name_where_divided": _divided_share(places, geonames),
        "elevation": round(places["elevation"].is_not_null().mean(), 4),
    }


def _divided_share(places: pl.DataFrame, geonames: pl.Series) -> float:
    """Share of GeoNames places with an admin2 name, in regions where any place has one."""
    region = pl.col("country_code").fill_null("") + "." + pl.col("admin1_code").fill_null("")
    named = places["admin2_name"].is_not_null() & geonames
    divided = (
        places.select("country_code", "admin1_code")
        .with_columns(named=named)
        .select(pl.col("named").any().over(region))["named"]
    )
    inside = divided & geonames
    return round((places["admin2_name"].is_not_null() & inside).sum() / max(1, inside.sum()), 4)


def _english_country_names(countries: pl.DataFrame, names: pl.DataFrame) -> dict[str, str]:
    """Country names in the default language: CLDR's, else the source's English name."""
    cldr_names = dict(
        names.filter(pl.col("language") == G.DEFAULT_LANGUAGE).select("code", "name").iter_rows()
    )
    return {
        code: cldr_names.get(code, name)
        for code, name in countries.select("code", "name").iter_rows()
    }


def _manifest_entry(
    gazetteer: Gazetteer, datasets: Path, coverage: dict, tables: dict, index_files: list[str]
) -> dict:
    inputs = describe_inputs(gazetteer.inputs, datasets)
    digest = hashlib.sha256(
        repr(
            (
                contract.SCHEMA_VERSION,
                BUILDER_REVISION,
                gazetteer.kind,
                [i["sha256"] for i in inputs],
            )
        ).encode()
    ).hexdigest()
    return {
        "version": f"geocoding-{digest[:12]}",
        "schema_version": contract.SCHEMA_VERSION,
        "source": {
            "kind": gazetteer.kind,
            "generated": False,
            "notes": gazetteer.notes,
            "licence": LICENCE,
        },
        "inputs": inputs,
        "tables": tables,
        "files": sorted([t["file"] for t in tables.values()] + index_files),
        "coverage": coverage,
    }
