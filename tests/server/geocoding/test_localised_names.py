"""Names by language from a real-format alternateNamesV2.zip, served over HTTP
(docs/api/geocoding.md#language)."""

from __future__ import annotations

import shutil
import urllib.parse
import zipfile

import pytest

from tests.support.procs import ROOT, Server, get, run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

FIXTURE = ROOT / "tests" / "fixtures" / "geonames"
ZURICH, MUNICH, ZURICH_AIRPORT = "2657896", "2867714", "6296725"
# alternateNameId, geonameid, isolanguage, name, isPreferred, isShort, isColloquial, isHistoric
ALTERNATE_NAMES = [
    ("1", ZURICH, "de", "Zürich", "1", "", "", ""),
    ("2", ZURICH, "it", "Zurigo", "", "", "", ""),
    ("3", ZURICH, "it", "Zurigo (città)", "", "", "", ""),
    ("4", ZURICH, "en", "Zurich", "1", "", "", ""),
    ("5", ZURICH, "la", "Turicum", "", "", "", "1"),  # historic: matched, never shown
    ("6", ZURICH, "gsw", "Züri", "", "", "1", ""),  # colloquial: matched, never shown
    ("7", ZURICH, "iata", "ZRH", "", "", "", ""),  # a code, not a name
    ("8", ZURICH, "post", "8001", "", "", "", ""),
    ("9", MUNICH, "de", "München", "", "1", "", ""),  # short name
    ("10", MUNICH, "de", "Landeshauptstadt München", "", "", "", ""),
    ("11", MUNICH, "fr", "Munich", "", "", "", ""),
    ("12", MUNICH, "zh-Hant", "慕尼黑", "1", "", "", ""),
    ("13", ZURICH_AIRPORT, "iata", "ZRH", "", "", "", ""),  # an airport's codes find it
    ("14", ZURICH_AIRPORT, "icao", "LSZH", "", "", "", ""),
    ("15", ZURICH_AIRPORT, "de", "Flughafen Zürich", "1", "", "", ""),
]


@pytest.fixture(scope="module")
def localised(module_tmp):
    root = module_tmp("localised")
    shutil.copytree(FIXTURE, root / "datasets" / "geonames")
    with zipfile.ZipFile(
        root / "datasets" / "geonames" / "alternateNamesV2.zip", "w", zipfile.ZIP_DEFLATED
    ) as archive:
        rows = ("\t".join(r + ("", "")) + "\n" for r in ALTERNATE_NAMES)
        archive.writestr("alternateNamesV2.txt", "".join(rows))
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


def lookup(server, **params):
    reply = get(f"{server.url}/geocoding/lookup?{urllib.parse.urlencode(params)}")
    assert reply.status == 200, reply.body
    return reply.json()


@pytest.mark.parametrize(
    "language, name, country",
    [
        ("de", "Zürich", "Schweiz"),
        ("it", "Zurigo", "Svizzera"),
        ("en", "Zurich", "Switzerland"),
        ("xx", "Zurich", "Switzerland"),  # unsupported: English
        ("la", "Zurich", "Helvetia"),  # only a historic Latin name: not shown; CLDR has la
        ("gsw", "Zurich", "Schwiiz"),  # only a colloquial name: not shown; CLDR has gsw
    ],
)
def test_names_by_language(localised, language, name, country):
    place = lookup(localised, id=ZURICH, language=language)
    assert (place["name"], place["country_name"]) == (name, country)


def test_preferred_then_short_names_first(localised):
    assert lookup(localised, id=MUNICH, language="de")["name"] == "München"
    assert lookup(localised, id=MUNICH, language="zh-Hant")["name"] == "慕尼黑"
    assert lookup(localised, id=MUNICH, language="zh-hant-tw")["name"] == "慕尼黑"


@pytest.mark.parametrize("q", ["Turicum", "Zuri", "Zurigo", "München"])
def test_every_name_is_searchable(localised, q):
    top = lookup(localised, q=q)["results"][0]
    assert top["id"] in (ZURICH, MUNICH)


def test_codes_are_not_names(localised):
    assert lookup(localised, q="8001")["count"] == 0
    results = lookup(localised, q="ZRH")["results"]
    assert ZURICH not in {r["id"] for r in results}


@pytest.mark.parametrize("q", ["ZRH", "lszh"])
def test_an_airport_is_found_by_its_codes_never_shown_as_its_name(localised, q):
    top = lookup(localised, q=q, language="de")["results"][0]
    assert (top["id"], top["name"]) == (ZURICH_AIRPORT, "Flughafen Zürich")
    assert lookup(localised, id=ZURICH_AIRPORT, language="it")["name"] == "Zürich Airport"


def test_search_results_are_localised(localised):
    top = lookup(localised, q="zurich", language="it")["results"][0]
    assert (top["name"], top["country_name"]) == ("Zurigo", "Svizzera")
