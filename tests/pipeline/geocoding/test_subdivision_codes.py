"""ISO 3166-2 codes of admin1 regions, by their GeoNames names (pipeline.geocoding.sources.iso3166)."""

from __future__ import annotations

import polars as pl

from pipeline.geocoding.sources.iso3166 import subdivision_codes

# country, GeoNames admin1 name and code, the code expected (None: none)
REGIONS = [
    ("CA", "Ontario", "08", "ON"),
    ("CA", "British Columbia", "02", "BC"),
    ("AU", "New South Wales", "02", "NSW"),
    ("DE", "Bavaria", "02", "BY"),  # ISO's name is Bayern, translated Bavaria
    ("DE", "Saxony-Anhalt", "14", "ST"),  # a spelling near a translation (Sachsen-Anhalt)
    ("DE", "City state Bremen", "03", "HB"),  # without the words saying what kind of region
    ("US", "Texas", "TX", "TX"),
    ("CH", "Zurich", "ZH", "ZH"),
    ("CN", "Guangdong", "30", "GD"),  # ISO: Guangdong Sheng (province)
    ("FR", "Île-de-France", "11", "IDF"),
    ("NA", "Khomas Region", "21", "KH"),
    ("RU", "Moscow", "48", "MOW"),
    ("RU", "Moscow Oblast", "47", "MOS"),  # not Moscow's (Moskva): each goes to one region
    ("GB", "England", "ENG", "ENG"),
    ("IT", "Lombardy", "09", None),  # Italy's regions have numbers (IT-25)
    ("JP", "Tokyo", "40", None),
    ("IE", "Leinster", "L", None),  # one letter (IE-L): no code people type
    ("ZZ", "Nowhere", "01", None),  # no such country
    ("TW", "Taiwan", "03", None),  # not Tainan (TW-TNN), a letter apart
]


def test_admin1_regions_get_their_iso_3166_2_codes():
    admin1 = pl.DataFrame(
        [r[:3] for r in REGIONS],
        orient="row",
        schema=["country_code", "admin1_name", "admin1_code"],
    )
    found = subdivision_codes(admin1)
    assert dict(zip(admin1["admin1_name"], found)) == {r[1]: r[3] for r in REGIONS}
