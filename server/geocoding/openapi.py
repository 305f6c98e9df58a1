"""OpenAPI paths and schemas of geocoding (docs/api/geocoding.md)."""

from __future__ import annotations

from copy import deepcopy

from server.openapi.parts import (
    COUNTRY,
    COUNTRY_CODE,
    LAT,
    LOCATION_ID,
    LON,
    OPTIONAL_KEY,
    envelope,
    language,
    limit,
    nullable,
    obj,
    operation,
    param,
    ref,
    responses,
    success,
    unavailable,
)

_LOCATION = {
    "id": {
        "type": "string",
        "pattern": LOCATION_ID,
        "description": "Public location id: the GeoNames id as a decimal string (stable across "
        "builds). Airports of the packaged offline gazetteer, which have no "
        "GeoNames id, use `icao:` followed by the ICAO code.",
        "examples": ["2657896", "icao:LSZH"],
    },
    "name": {
        "type": "string",
        "description": "Display name: the name in the requested "
        "`language` when the data has one, else the "
        "place's default (GeoNames) name.",
    },
    "lat": {**LAT, "description": "Latitude, degrees, 5 decimals."},
    "lon": {**LON, "description": "Longitude, degrees, 5 decimals."},
    "country_code": {**COUNTRY_CODE, "type": ["string", "null"]},
    "country_name": nullable(
        "string", "Country name from Unicode CLDR in the requested language, else English."
    ),
    "admin1_name": nullable("string", "First-level administrative division (state, canton)."),
    "admin2_name": nullable("string", "Second-level administrative division (district, county)."),
    "timezone": nullable("string", "IANA timezone identifier.", examples=["Europe/Zurich"]),
    "population": nullable(
        "integer", "Population; null when unknown (a zero in the source counts as unknown)."
    ),
    "elevation": nullable(
        "integer", "Elevation in metres (GeoNames elevation, else its digital elevation model)."
    ),
    "feature_code": {
        "type": "string",
        "description": "GeoNames feature code, e.g. PPL "
        "(populated place), PPLA (seat of a first-order division), PPLC (capital), "
        "AIRP (airport). The packaged offline default build has only PPL, PPLC "
        "and AIRP (its sources carry no feature codes).",
        "examples": ["PPLA", "AIRP"],
    },
}
_SEARCH_FIELDS = (
    "id",
    "name",
    "lat",
    "lon",
    "country_code",
    "country_name",
    "admin1_name",
    "timezone",
    "population",
    "feature_code",
)
_DETAIL_FIELDS = (
    "id",
    "name",
    "lat",
    "lon",
    "country_code",
    "country_name",
    "admin1_name",
    "admin2_name",
    "timezone",
    "population",
    "elevation",
    "feature_code",
)
ZURICH = {
    "id": "2657896",
    "name": "Zürich",
    "lat": 47.36667,
    "lon": 8.55,
    "country_code": "CH",
    "country_name": "Switzerland",
    "admin1_name": "Zurich",
    "timezone": "Europe/Zurich",
    "population": 341730,
    "feature_code": "PPLA",
}
ZURICH_DETAIL = {**ZURICH, "admin2_name": "Bezirk Zürich", "elevation": 408}


def _location(fields: tuple[str, ...], description: str, example: dict, **more) -> dict:
    props = {f: deepcopy(_LOCATION[f]) for f in fields}
    props.update(more)
    return obj(props, description=description, examples=[{k: example.get(k) for k in props}])


_COUNTRY = {
    "code": COUNTRY_CODE,
    "name": {"type": "string", "description": "English name (Unicode CLDR), in every language."},
    "flag": {
        "type": "string",
        "description": "Flag emoji (regional indicator symbols of the code).",
        "examples": ["🇨🇭"],
    },
    "population": nullable(
        "integer",
        "Population (GeoNames country info); null when unknown "
        "(a zero in the source counts as unknown).",
    ),
    "continent": nullable(
        "string", "GeoNames continent code.", enum=["AF", "AN", "AS", "EU", "NA", "OC", "SA", None]
    ),
    "timezone": nullable(
        "string",
        "Primary IANA timezone: the capital's, else that of the country's most populous place.",
    ),
    "capital": nullable("string", "Capital city name."),
}
_COUNTRY_LIST = ("code", "name", "flag", "population", "continent")

# ---- geocoding ----------------------------------------------------------------------------

LOOKUP = """\
Two modes, chosen by the parameter present. Exactly one of `q` and `id` must be given: both, or
neither, is a 400 (an empty value still counts as given). `language` applies to both modes;
the search-only parameters (`field`, `country`, `limit`) are validated in id mode (a malformed
one is a 400, decisions rule 2) but do not change the answer.

**Search (`q`)** answers `{results: [Location], count}` (an empty list when nothing matches).
Matching is case-, accent- and punctuation-insensitive (`zurich` finds Zürich; an elision's
apostrophe may also be typed as a space: `cote d ivoire`, `l aquila`) and ignores invisible format
characters (zero-width spaces and joiners, soft hyphens). Saint and St., Sainte and Ste., Mount
and Mt., Fort and Ft. are one word before a name's last word (`st paul` finds Saint Paul,
`saint louis` St. Louis; Sankt is also St.). Search covers alternate
names (Zurigo, Muenchen), airport IATA/ICAO codes and airport names without their leading (city)
and generic words (`heathrow`, `schiphol`), matches prefixes for typing-as-you-go (`zur` finds
Zürich), and tolerates typos: none below 4 characters, one edit for 4 to 7, two from 8 (a
transposition is one edit); typo matches are sought only when fewer than `limit` places (or
fewer than 10, whatever the limit) matched and no name matched exactly, except an alternate name
within the typo budget of its place's own name (a recorded misspelling: `londn` finds London,
then the other Londons). Text after a comma
narrows the search to a country or first-level region named (or coded) there: `springfield,
illinois`, `paris, tx`, `london, on`, `sydney, nsw`, `hamilton, waikato` (a region's name may
leave out a word such as Region, Province or Oblast; its code is the ISO 3166-2 one after the
hyphen, where that is two or three letters, and a code shared by regions, or by a region and a
country, names them all: `by` is Bavaria and Belarus); a part naming no region is ignored, and
so is an empty part (`, paris` is `paris`). With `field=all` the query may also name an admin1
region or country, alone (`bavaria`: the region's places by importance) or after the place name
(`springfield illinois`, `paris texas`, `san jose costa rica`; a code only as the last word:
`vancouver bc`).

Results are ordered by match quality first (the place's own name exactly, its preferred names
in a language, an airport's codes and the alternate name of a place of 50,000 people or more
that outweighs every place whose own name it is, 8 times a village's population, 100 times a
town's up to 50,000, counting as its own name, so `bombay` finds Mumbai before Bombay, New
Zealand, and `calcutta` Kolkata before Calcutta, South Africa; whole region name; a likely
typo: a city of 100,000 people or more whose name is one edit from the query and which is 10
times as populous as every alternate-name or prefix match, unless the query begins a city's
name or begins a name in whole words, so `ottowa` finds Ottawa, Canada, before Ottawa, Illinois,
whose alternate name it is, but `cairn` finds Cairns before Cairo; an alternate
name exactly; prefix of the own name; prefix of an alternate name; typo, then fewer edits, an
own name before an alternate name), then
population (largest first), then feature importance (capital, admin seats PPLA to PPLA5, other
places, airports last), then id.

**Lookup by id (`id`)** answers one `LocationDetail` object (not wrapped in results), which adds
`admin2_name` and `elevation`. A malformed id is 400; an unknown one is 404.
"""


def paths() -> dict:
    """The paths of docs/api/geocoding.md."""
    common = {503: unavailable("Geocoding")}
    lookup_ok = success(
        "Search results (q), or one location (id).",
        {"oneOf": [ref("schemas", "LocationSearchResults"), ref("schemas", "LocationDetail")]},
    )
    lookup_params = [
        param(
            "q",
            "query",
            "Search text (search mode): 2 to 200 characters after trimming "
            "surrounding whitespace and invisible format characters (zero-width space, "
            "joiners, BOM, soft hyphen; inside the text they are ignored), with at least 2 "
            "letters or digits unless a comma adds a context (`a.` is a 400, `å, norway` "
            "is not). A "
            "control character other than tab, line feed or carriage return, or bytes that "
            "are not UTF-8, are a 400. Required unless `id` is given.",
            {"type": "string", "minLength": 2, "maxLength": 200},
            example="zurich",
        ),
        param(
            "id",
            "query",
            "Public location id (lookup mode): the GeoNames id as a decimal "
            "string; airports of the packaged offline default build, which have no GeoNames "
            "id, use `icao:` + the ICAO code. Required "
            "unless `q` is given.",
            {"type": "string", "pattern": LOCATION_ID},
            example="2657896",
        ),
        language(),
        param(
            "field",
            "query",
            "Search scope: `name` matches place names only; `all` also "
            "matches admin1 and country names, alone or combined with a place name.",
            {"type": "string", "enum": ["name", "all"], "default": "name"},
        ),
        param(
            "country",
            "query",
            "Only places in this country: ISO 3166-1 alpha-2, "
            "case-insensitive. A well-formed code naming no known country is a 400.",
            {"type": "string", "pattern": COUNTRY},
        ),
        limit(10, 50, "Maximum number of results (search mode)"),
    ]
    return {
        "/geocoding/lookup": {
            "get": operation(
                "geocodingLookup",
                "geocoding",
                "Search locations by name, or look one up by id",
                LOOKUP,
                lookup_params,
                responses(
                    lookup_ok,
                    {
                        400: "Both or neither of q and id given, or a parameter is malformed or out of "
                        "range (q shorter than 2 or longer than 200 characters, limit outside 1 to "
                        "50, unknown field, malformed id, country or language).",
                        404: "Id mode only: no location has this id.",
                        **common,
                    },
                ),
                OPTIONAL_KEY,
            )
        },
        "/geocoding/reverse": {
            "get": operation(
                "reverseGeocode",
                "geocoding",
                "Nearest locations to a coordinate",
                "The nearest places by great-circle distance (haversine, Earth radius 6371.0088 "
                "km), nearest first (equal distances by importance). Exact: never an approximate "
                "neighbour. Works across the antimeridian and at the poles. Each result carries "
                "every Location field, including admin2_name and elevation, plus `distance_km` "
                "rounded to 3 decimals.",
                [
                    param(
                        "lat",
                        "query",
                        "Latitude, -90 to 90: a finite decimal number (an exponent "
                        "is allowed; NaN, inf and 1e999 are not).",
                        {"type": "number", "minimum": -90, "maximum": 90},
                        True,
                        example=47.3769,
                    ),
                    param(
                        "lon",
                        "query",
                        "Longitude, -180 to 180, written like lat.",
                        {"type": "number", "minimum": -180, "maximum": 180},
                        True,
                        example=8.5417,
                    ),
                    language(),
                    limit(1, 50, "Number of nearest locations"),
                ],
                responses(
                    success("Nearest locations.", "NearestLocations"),
                    {
                        400: "lat or lon missing, not a finite number or out of range (both "
                        "coordinates' problems are listed together in errors), or limit or "
                        "language invalid.",
                        **common,
                    },
                ),
                OPTIONAL_KEY,
            )
        },
        "/geocoding/countries": {
            "get": operation(
                "listCountries",
                "geocoding",
                "List countries",
                "Every country with its list fields, sorted alphabetically by English name "
                "(CLDR), compared case- and accent-insensitively (Åland Islands sorts with A), "
                "then by code. Names are English only; no parameters (a `language` is ignored). "
                "Cacheable for a day.",
                [],
                responses(success("All countries.", "CountryList"), common),
                OPTIONAL_KEY,
            )
        },
        "/geocoding/countries/{code}": {
            "get": operation(
                "getCountry",
                "geocoding",
                "Country details",
                "One country with its detail fields: `timezone` (the capital's, else that of the "
                "most populous place) and `capital`. Cacheable for a day.",
                [
                    param(
                        "code",
                        "path",
                        "ISO 3166-1 alpha-2 code, case-insensitive (`ch` = `CH`).",
                        {"type": "string", "pattern": COUNTRY},
                        example="CH",
                    )
                ],
                responses(
                    success("The country.", "CountryDetail"),
                    {400: "code is not two letters.", 404: "No country has this code.", **common},
                ),
                OPTIONAL_KEY,
            )
        },
    }


SCHEMAS = {
    "Location": _location(_SEARCH_FIELDS, "A location as listed in search results.", ZURICH),
    "LocationDetail": _location(
        _DETAIL_FIELDS, "A location with admin2_name and elevation (lookup by id).", ZURICH_DETAIL
    ),
    "NearestLocation": _location(
        _DETAIL_FIELDS,
        "A location near the query coordinate (reverse geocoding).",
        {**ZURICH_DETAIL, "distance_km": 0.412},
        distance_km={
            "type": "number",
            "minimum": 0,
            "description": "Great-circle (haversine, "
            "Earth radius 6371.0088 km) distance from the query coordinate, km, "
            "rounded to 3 decimals.",
        },
    ),
    "LocationSearchResults": envelope("Location", description="Search results, best first."),
    "NearestLocations": envelope("NearestLocation", description="Nearest places first."),
    "Country": obj({k: _COUNTRY[k] for k in _COUNTRY_LIST}, description="A country (list)."),
    "CountryDetail": obj(
        dict(_COUNTRY),
        description="A country with timezone and capital.",
        examples=[
            {
                "code": "CH",
                "name": "Switzerland",
                "flag": "🇨🇭",
                "population": 8516543,
                "continent": "EU",
                "timezone": "Europe/Zurich",
                "capital": "Bern",
            }
        ],
    ),
    "CountryList": envelope("Country", description="Every country, sorted by English name."),
}
