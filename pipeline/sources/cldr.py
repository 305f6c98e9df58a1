"""Country names in every CLDR language, from Babel's bundled CLDR data."""

from __future__ import annotations

import polars as pl
from babel import Locale
from babel.localedata import locale_identifiers


def language_tags() -> list[str]:
    """CLDR locales that name a language (optionally with a script), not a territory variant."""
    tags = []
    for ident in locale_identifiers():
        parts = ident.split("_")
        if any(len(p) == 2 and p.isupper() or p.isdigit() for p in parts[1:]):
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
    return pl.DataFrame(rows, schema={"code": pl.String, "language": pl.String,
                                      "name": pl.String}, orient="row")
