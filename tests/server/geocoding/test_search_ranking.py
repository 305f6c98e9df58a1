"""Search order by match quality (docs/api/geocoding.md#ranking) and country facts
(docs/api/geocoding.md#countries), on the hand-made GeoNames dump plus the places below, built
by the real pipeline and served over HTTP."""

from __future__ import annotations

import shutil
import urllib.parse

import pytest

from tests.support.procs import ROOT, Server, get, run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

FIXTURE = ROOT / "tests" / "fixtures" / "geonames"
ZURICH, ZURICH_AIRPORT, MUNICH = "2657896", "6296725", "2867714"
# geonameid, name, alternate names, feature class and code, country, admin1, population,
# timezone; ids from 9990100 are made up, the others are GeoNames' own.
PLACES = [
    ("2988507", "Paris", "Lutetia,Parigi", "P", "PPLC", "FR", "11", 2138551, "Europe/Paris"),
    ("4717560", "Paris", "", "P", "PPL", "US", "TX", 24782, "America/Chicago"),
    # More populous than Paris, Texas and merely also called Paris.
    ("968662", "Parys", "Paris,Parijs", "P", "PPL", "ZA", "03", 71319, "Africa/Johannesburg"),
    # A prefix of its own name only: below every exact match, however populous.
    ("9990100", "Parisville", "", "P", "PPL", "US", "TX", 3000000, "America/Chicago"),
    ("5777107", "Lindon", "", "P", "PPL", "US", "UT", 10810, "America/Denver"),
    ("4298960", "Lyndon", "Lindon", "P", "PPL", "US", "KY", 11372, "America/New_York"),
    # GeoNames lists Zurich Airport's ICAO code among this village's names too.
    ("3196993", "Lesce", "LSZH,Lesce-Bled", "P", "PPL", "SI", "", 2835, "Europe/Ljubljana"),
    (
        "6296599",
        "London Heathrow Airport",
        "LHR,EGLL",
        "S",
        "AIRP",
        "GB",
        "ENG",
        0,
        "Europe/London",
    ),
    ("4158928", "Heathrow", "", "P", "PPL", "US", "FL", 5896, "America/New_York"),
    ("6296600", "London Gatwick Airport", "LGW,EGKK", "S", "AIRP", "GB", "ENG", 0, "Europe/London"),
    ("2657271", "Atwick", "", "P", "PPL", "GB", "ENG", 300, "Europe/London"),
    (
        "6296680",
        "Amsterdam Airport Schiphol",
        "AMS,EHAM",
        "S",
        "AIRP",
        "NL",
        "07",
        0,
        "Europe/Amsterdam",
    ),
    ("9990101", "Shipol", "", "P", "PPL", "NL", "07", 4195, "Europe/Amsterdam"),
    # Antarctica's only places are airports (as in the packaged default).
    (
        "9990102",
        "Teniente R. Marsh Airport",
        "TNM,SCRM",
        "S",
        "AIRP",
        "AQ",
        "",
        0,
        "Antarctica/Palmer",
    ),
    # GeoNames lists the misspelling "Londn" among London's names.
    ("2643743", "London", "Londn,Londres", "P", "PPLC", "GB", "ENG", 8961989, "Europe/London"),
    ("4517009", "London", "", "P", "PPL", "US", "OH", 10060, "America/New_York"),
    # Namesakes in two regions whose admin1 names end in "Region" (Erongo 29, Khomas 21).
    ("9990103", "Rehoboth", "", "P", "PPL", "NA", "29", 2000, "Africa/Windhoek"),
    ("9990104", "Rehoboth", "", "P", "PPL", "NA", "21", 1000, "Africa/Windhoek"),
    # A soft hyphen inside a name (invisible); the larger of two places so called.
    ("9990105", "Wester\u00adwald", "", "P", "PPL", "DE", "02", 3000, "Europe/Berlin"),
    ("9990106", "Westerwald", "", "P", "PPL", "DE", "02", 1000, "Europe/Berlin"),
    # One edit from "mardn": an own name, and an alternate name of a larger place.
    ("9990107", "Marden", "", "P", "PPL", "US", "TX", 800, "America/Chicago"),
    ("9990108", "Kestrel", "Mardon", "P", "PPL", "US", "TX", 50000, "America/Chicago"),
    # An apostrophe in a name, and a smaller place whose name also starts with "laq".
    ("3175121", "L'Aquila", "", "P", "PPLA", "IT", "65", 33691, "Europe/Rome"),
    ("9990109", "Laquinta", "", "P", "PPL", "IT", "65", 500, "Europe/Rome"),
    # Saint written out and abbreviated.
    ("9990110", "St. Marys", "", "P", "PPL", "US", "TX", 3000, "America/Chicago"),
    ("9990111", "Saint Marys", "", "P", "PPL", "US", "TX", 1000, "America/Chicago"),
    # "ottowa": a city one typo away, a town whose alternate name records that typo, and a
    # village the query begins the name of.
    ("6094817", "Ottawa", "", "P", "PPLC", "CA", "08", 1017449, "America/Toronto"),
    ("4904996", "Ottawa", "Ottowa", "P", "PPL", "US", "IL", 18342, "America/Chicago"),
    ("9990112", "Ottoway", "", "P", "PPL", "AU", "", 2489, "Australia/Sydney"),
    # "cairn": the start of a city's name, and one typo from a much larger city.
    ("360630", "Cairo", "", "P", "PPLC", "EG", "", 9606916, "Africa/Cairo"),
    ("2172797", "Cairns", "", "P", "PPL", "AU", "", 153075, "Australia/Brisbane"),
    # "kestral": the first word of an airport's name, and one typo from a city.
    ("9990113", "Kestral Field Airport", "", "S", "AIRP", "US", "TX", 0, "America/Chicago"),
    ("9990114", "Kestrel Bay", "", "P", "PPL", "US", "TX", 0, "America/Chicago"),
    ("9990115", "Kentral", "", "P", "PPL", "US", "TX", 250000, "America/Chicago"),
]
# Real countryInfo.txt lines (columns up to geonameid) for the countries the places add.
COUNTRIES = [
    "FR\tFRA\t250\tFR\tFrance\tParis\t547030\t66987244\tEU\t.fr\tEUR\tEuro\t33\t\t\t\t3017382",
    "US\tUSA\t840\tUS\tUnited States\tWashington\t9629091\t327167434\tNA\t.us\tUSD\tDollar\t1"
    "\t\t\t\t6252001",
    "ZA\tZAF\t710\tSF\tSouth Africa\tPretoria\t1219912\t57779622\tAF\t.za\tZAR\tRand\t27\t\t\t"
    "\t953987",
    "GB\tGBR\t826\tUK\tUnited Kingdom\tLondon\t244820\t66488991\tEU\t.uk\tGBP\tPound\t44\t\t\t"
    "\t2635167",
    "SI\tSVN\t705\tSI\tSlovenia\tLjubljana\t20273\t2067372\tEU\t.si\tEUR\tEuro\t386\t\t\t\t3190538",
    "IT\tITA\t380\tIT\tItaly\tRome\t301230\t60431283\tEU\t.it\tEUR\tEuro\t39\t\t\t\t3175395",
    "CA\tCAN\t124\tCA\tCanada\tOttawa\t9984670\t37058856\tNA\t.ca\tCAD\tDollar\t1\t\t\t\t6251999",
    "AU\tAUS\t036\tAS\tAustralia\tCanberra\t7686850\t24992369\tOC\t.au\tAUD\tDollar\t61"
    "\t\t\t\t2077456",
    "EG\tEGY\t818\tEG\tEgypt\tCairo\t1001450\t98423595\tAF\t.eg\tEGP\tPound\t20\t\t\t\t357994",
    "AQ\tATA\t010\tAY\tAntarctica\t\t14000000\t0\tAN\t.aq\t\t\t\t\t\t\t6697173",
    "BV\tBVT\t074\tBV\tBouvet Island\t\t49\t0\tAN\t.bv\tNOK\tKrone\t\t\t\t\t3371123",
]


def dump_line(place: tuple) -> str:
    """One cities500.txt line (19 tab-separated columns)."""
    geonameid, name, alternates, fclass, fcode, cc, admin1, population, tz = place
    return "\t".join(
        [
            geonameid,
            name,
            name,
            alternates,
            "10.0",
            "10.0",
            fclass,
            fcode,
            cc,
            "",
            admin1,
            "",
            "",
            "",
            str(population),
            "",
            "100",
            tz,
            "2024-01-01",
        ]
    )


@pytest.fixture(scope="module")
def ranked(module_tmp):
    root = module_tmp("ranking")
    folder = root / "datasets" / "geonames"
    shutil.copytree(FIXTURE, folder)
    with open(folder / "cities500.txt", "a", encoding="utf-8") as places:
        places.writelines(dump_line(p) + "\n" for p in PLACES)
    with open(folder / "countryInfo.txt", "a", encoding="utf-8") as countries:
        countries.writelines(line + "\n" for line in COUNTRIES)
    run_pipeline(
        "build",
        "--datasets",
        str(root / "datasets"),
        "--out",
        str(root / "build"),
        "--only",
        "geocoding",
    )
    with Server(root / "build") as server:
        server.wait_ready()
        yield server


def ids(server, q: str) -> list[str]:
    reply = get(f"{server.url}/geocoding/lookup?{urllib.parse.urlencode({'q': q})}")
    assert reply.status == 200, reply.body
    return [r["id"] for r in reply.json()["results"]]


def test_own_name_before_alternate_name_before_prefix(ranked):
    # Paris FR, then Paris US before Parys, which only has "Paris" among its other names
    # (and is more populous), then Parisville (a prefix, the most populous of all).
    assert ids(ranked, "paris") == ["2988507", "4717560", "968662", "9990100"]
    assert ids(ranked, "lindon") == ["5777107", "4298960"]


@pytest.mark.parametrize("q", [", paris", "paris,", "paris, ,", " ,paris, , "])
def test_empty_parts_around_commas_are_ignored(ranked, q):
    assert ids(ranked, q) == ids(ranked, "paris")


@pytest.mark.parametrize("q", ["par\u200bis", "pa\u200dris", "\u2060paris", "par\u00adis"])
def test_invisible_format_characters_in_q_are_ignored(ranked, q):
    assert ids(ranked, q) == ids(ranked, "paris")


def test_invisible_format_characters_in_names_are_ignored(ranked):
    # Both are exact matches of their own name, so the larger comes first.
    assert ids(ranked, "westerwald") == ["9990105", "9990106"]
    assert ids(ranked, "wester\u200bwald") == ["9990105", "9990106"]


def test_a_misspelt_alternate_name_keeps_typo_matching_on(ranked):
    # "Londn" is London's alternate name, and one edit from its own name: the query may be a
    # typo, so the other Londons come too (after the exact match).
    assert ids(ranked, "londn") == ["2643743", "4517009"]
    assert ids(ranked, "london")[:2] == ["2643743", "4517009"]


def test_typos_of_own_names_before_typos_of_alternate_names(ranked):
    assert ids(ranked, "mardn") == ["9990107", "9990108"]


@pytest.mark.parametrize("q", ["l'aquila", "l aquila", "laquila", "l aq", "l'aq"])
def test_an_apostrophe_is_also_read_as_a_space(ranked, q):
    assert ids(ranked, q)[0] == "3175121"


@pytest.mark.parametrize("q", ["st marys", "st. marys", "saint marys", "st mar", "saint mar"])
def test_saint_and_st_are_one_word(ranked, q):
    # Both are exact matches of their own name whichever way it is written: the larger first.
    assert ids(ranked, q) == ["9990110", "9990111"]


@pytest.mark.parametrize(
    "q, expected",
    [
        ("rehoboth, kh", ["9990104"]),  # ISO 3166-2 NA-KH: Khomas Region
        ("rehoboth, er", ["9990103"]),  # NA-ER: Erongo Region (er is also Eritrea)
        ("munich, by", [MUNICH]),  # DE-BY: Bavaria (by is also Belarus)
    ],
)
def test_a_region_is_named_by_its_iso_code(ranked, q, expected):
    assert ids(ranked, q) == expected


@pytest.mark.parametrize("q", ["rehoboth, khomas", "rehoboth, khomas region"])
def test_a_region_is_named_without_its_kind_word(ranked, q):
    assert ids(ranked, q) == ["9990104"]
    assert ids(ranked, "rehoboth") == ["9990103", "9990104"]


def test_alternate_names_still_find_the_place_first(ranked):
    assert ids(ranked, "zurigo")[0] == ZURICH
    assert ids(ranked, "muenchen")[0] == MUNICH
    assert ids(ranked, "parijs") == ["968662"]


@pytest.mark.parametrize(
    "q, expected",
    [
        ("lszh", [ZURICH_AIRPORT, "3196993"]),  # its ICAO code, before the village also so called
        ("zrh", [ZURICH_AIRPORT, ZURICH]),  # its IATA code, before the city also so called
        ("egll", ["6296599"]),
    ],
)
def test_an_airports_code_is_its_own_name(ranked, q, expected):
    assert ids(ranked, q) == expected


@pytest.mark.parametrize(
    "q, expected",
    [
        ("heathrow", ["4158928", "6296599"]),  # the place called just so first
        ("heathrow airport", ["6296599"]),
        ("gatwick", ["6296600"]),  # not the typo match Atwick
        ("schiphol", ["6296680"]),  # not the typo match Shipol
    ],
)
def test_airports_are_found_by_their_distinctive_name(ranked, q, expected):
    assert ids(ranked, q) == expected


def test_generic_airport_words_alone_find_no_airport(ranked):
    assert "6296599" not in ids(ranked, "airport")


def country(server, code: str) -> dict:
    reply = get(f"{server.url}/geocoding/countries/{code}")
    assert reply.status == 200, reply.body
    return reply.json()


def test_country_population_zero_is_null(ranked):
    assert country(ranked, "aq")["population"] is None
    assert country(ranked, "bv")["population"] is None
    assert country(ranked, "ch")["population"] == 8516543
    listed = {c["code"]: c for c in get(f"{ranked.url}/geocoding/countries").json()["results"]}
    assert listed["AQ"]["population"] is None and listed["FR"]["population"] == 66987244


def test_country_timezone_from_its_capital_else_its_places_airports_included(ranked):
    assert country(ranked, "fr")["timezone"] == "Europe/Paris"  # the capital's
    assert country(ranked, "aq")["timezone"] == "Antarctica/Palmer"  # only an airport there
    assert country(ranked, "bv")["timezone"] is None  # no place at all


def test_a_much_larger_city_one_typo_away_comes_first(ranked):
    # Before the town whose alternate name records the typo, and the village it begins.
    assert ids(ranked, "ottowa")[:3] == ["6094817", "4904996", "9990112"]
    for limit in (1, 2, 50):  # whatever the limit, the same place comes first
        reply = get(f"{ranked.url}/geocoding/lookup?q=ottowa&limit={limit}")
        assert reply.json()["results"][0]["id"] == "6094817"


def test_a_city_the_query_begins_the_name_of_stays_first(ranked):
    assert ids(ranked, "cairn")[:2] == ["2172797", "360630"]


def test_a_name_typed_in_whole_words_stays_first(ranked):
    # "kestral" is the airport's first word (its population is unknown), one typo from Kentral.
    assert ids(ranked, "kestral")[0] == "9990113"
