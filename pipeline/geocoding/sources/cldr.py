"""Country names, and the names of the cities that name time zones, in every CLDR language,
from Babel's bundled CLDR data."""

from __future__ import annotations

import polars as pl
from babel import Locale
from babel.localedata import locale_identifiers


def language_tags() -> list[str]:
    """CLDR locales that name a language (optionally with a script), not a territory variant."""
    tags = []
    for ident in locale_identifiers():
        parts = ident.split("_")
        if any((len(p) == 2 and p.isupper()) or p.isdigit() for p in parts[1:]):
            continue
        tags.append(ident)
    return sorted(tags)


def english_names(codes: list[str]) -> dict[str, str]:
    """CLDR English names of ISO 3166-1 alpha-2 codes."""
    territories = Locale("en").territories
    return {code: territories[code] for code in codes if code in territories}


def country_names(codes: list[str]) -> pl.DataFrame:
    """Rows (code, language, name) for every CLDR language; language tags use '-' (BCP 47)."""
    wanted = set(codes)
    rows = []
    for ident in language_tags():
        territories = Locale.parse(ident).territories
        tag = ident.replace("_", "-")
        rows.extend((code, tag, name) for code, name in territories.items() if code in wanted)
    rows.sort()
    return pl.DataFrame(
        rows, schema={"code": pl.String, "language": pl.String, "name": pl.String}, orient="row"
    )


def zone_city(zone: str) -> str:
    """The English exemplar city of a time zone, as CLDR derives it ("America/New_York" ->
    "New York"); CLDR lists a locale's city only where it differs from this."""
    return zone.rsplit("/", 1)[-1].replace("_", " ")


def zone_city_names(zones: set[str]) -> pl.DataFrame:
    """Rows (zone, language, name): the exemplar city of each of `zones` in every CLDR
    language that names it otherwise than English does (it: Europe/Rome -> "Roma")."""
    rows = set()
    for ident in language_tags():
        tag = ident.replace("_", "-")
        for zone, info in Locale.parse(ident).time_zones.items():
            city = info.get("city")
            if zone in zones and city and city != zone_city(zone):
                rows.add((zone, tag, city))
    return pl.DataFrame(
        sorted(rows),
        schema={"zone": pl.String, "language": pl.String, "name": pl.String},
        orient="row",
    )
