"""The packaged default names the cities that name time zones in CLDR's languages: shown for
`language`, and those most languages agree on found first by search
(docs/api/geocoding.md#ranking, #language)."""

from __future__ import annotations

import urllib.parse

import pytest

from pipeline.geocoding.sources import cldr
from tests.support.procs import get

ROME, LONDON, SEOUL = "3169070", "2643743", "1835848"


def lookup(server, **params) -> dict:
    reply = get(f"{server.url}/geocoding/lookup?{urllib.parse.urlencode(params)}")
    assert reply.status == 200, reply.body
    return reply.json()


@pytest.mark.parametrize(
    "language, name",
    [
        ("it", "Roma"),
        ("de", "Rom"),
        ("ja", "ローマ"),
        ("zh-Hant", "羅馬"),
        ("fr", "Rome"),  # CLDR's French name is the English one
        ("xx", "Rome"),  # no such language: English
    ],
)
def test_a_zone_city_is_named_in_the_language_asked_for(server, language, name):
    assert lookup(server, id=ROME, language=language)["name"] == name


@pytest.mark.parametrize(
    "language, name, country",
    [
        ("zh-TW", "倫敦", "英國"),
        ("zh-HK", "倫敦", "英國"),
        ("zh", "伦敦", "英国"),
        ("sr-Latn", "London", "Ujedinjeno Kraljevstvo"),
        ("sr-ME", "London", "Ujedinjeno Kraljevstvo"),
        ("sr", "Лондон", "Уједињено Краљевство"),
    ],
)
def test_a_language_is_never_shown_in_another_script(server, language, name, country):
    # zh-TW is written in Traditional characters, zh in Simplified; sr-Latn's London is the
    # English name (so not stored apart), and must not fall back to Cyrillic sr.
    place = lookup(server, id=LONDON, language=language)
    assert (place["name"], place["country_name"]) == (name, country)


@pytest.mark.parametrize(
    "q, place_id", [("Roma", ROME), ("Rom", ROME), ("Londres", LONDON), ("ローマ", ROME)]
)
def test_a_name_languages_agree_on_ranks_as_the_places_own(server, q, place_id):
    assert lookup(server, q=q)["results"][0]["id"] == place_id


def test_one_languages_name_that_is_another_places_own_does_not_outrank_it(server):
    # Nigerian Pidgin (pcm) alone calls Seoul "Sol": Sol ES, so called, stays first.
    results = lookup(server, q="sol")["results"]
    assert results[0]["country_code"] == "ES" and SEOUL not in [r["id"] for r in results[:1]]


def test_zone_city_names_are_cldr_names_that_differ_from_the_english():
    names = cldr.zone_city_names({"Europe/Rome", "Africa/Accra"})
    rows = {(r["zone"], r["language"]): r["name"] for r in names.to_dicts()}
    assert rows[("Europe/Rome", "it")] == "Roma" and rows[("Europe/Rome", "de")] == "Rom"
    assert ("Europe/Rome", "fr") not in rows  # "Rome", as in English
    assert all(name != cldr.zone_city(zone) for (zone, _), name in rows.items())
    assert cldr.zone_city("America/New_York") == "New York"
