"""Geocoding endpoints over HTTP against the default build (docs/api/geocoding.md)."""

from __future__ import annotations

import gzip
import http.client
import json
import math
import random
import socket
import urllib.parse

import duckdb
import pytest

from tests.support.procs import get

SEARCH_FIELDS = {
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
}
DETAIL_FIELDS = SEARCH_FIELDS | {"admin2_name", "elevation"}
ZURICH = "2657896"


def search(server, q, **params):
    query = urllib.parse.urlencode({"q": q, **params})
    reply = get(f"{server.url}/geocoding/lookup?{query}")
    assert reply.status == 200, reply.body
    return reply.json()


def first(server, q, **params):
    results = search(server, q, **params)["results"]
    assert results, f"no results for {q!r}"
    return results[0]


@pytest.mark.parametrize(
    "q, name, country",
    [
        ("Zürich", "Zürich", "CH"),
        ("zurich", "Zürich", "CH"),  # accents omitted
        ("ZURICH!", "Zürich", "CH"),  # case and punctuation
        ("Zurihc", "Zürich", "CH"),  # one transposition
        ("Zurigo", "Zürich", "CH"),  # alternate name
        ("Muenchen", "Munich", "DE"),  # ue spelling
        ("München", "Munich", "DE"),
        ("Londn", "London", "GB"),  # one deletion
        ("Amsterdma", "Amsterdam", "NL"),  # 9 letters: two edits allowed
        ("Nwe York", "New York City", "US"),
        ("new yo", "New York City", "US"),  # prefix of the last word
        ("lond", "London", "GB"),
        ("san fr", "San Francisco", "US"),  # own name's prefix before "San Francisco de Quito"
        ("los an", "Los Angeles", "US"),
        ("Paris", "Paris", "FR"),
        ("Sao Paulo", "São Paulo", "BR"),
        ("Wien", "Vienna", "AT"),
        ("Москва", "Moscow", "RU"),
        ("東京", "Tokyo", "JP"),
        ("Bern", "Bern", "CH"),
        ("paris, texas", "Paris", "US"),  # city, region
        ("San Jose, Costa Rica", "San José", "CR"),
        ("London, Ontario", "London", "CA"),
        ("Paris, TX", "Paris", "US"),
    ],
)
def test_search_finds_the_place_a_person_means(server, q, name, country):
    top = first(server, q)
    assert (top["name"], top["country_code"]) == (name, country)


@pytest.mark.parametrize(
    "q, name, admin1",
    [
        ("springfield illinois", "Springfield", "Illinois"),
        ("paris texas", "Paris", "Texas"),
    ],
)
def test_field_all_combines_name_and_region(server, q, name, admin1):
    top = first(server, q, field="all")
    assert (top["name"], top["admin1_name"]) == (name, admin1)
    # field=name searches names only: no place is named with both words
    assert all(r["name"] != name for r in search(server, q)["results"])


def test_field_all_matches_regions_and_countries(server):
    results = search(server, "bavaria", field="all", limit=5)["results"]
    assert len(results) == 5 and all(r["admin1_name"] == "Bavaria" for r in results)
    assert results[0]["name"] == "Munich"
    assert "Munich" not in {r["name"] for r in search(server, "bavaria")["results"]}


@pytest.mark.parametrize(
    "q, admin1, countries",
    [
        ("toronto, on", {"Ontario"}, set()),
        ("sydney, nsw", {"New South Wales"}, set()),
        ("london, on", {"Ontario"}, set()),
        ("neustadt, by", {"Bavaria"}, {"BY"}),  # by: Bavaria (DE-BY), and Belarus
    ],
)
def test_region_codes_after_a_comma_filter_the_places(server, q, admin1, countries):
    results = search(server, q, limit=50)["results"]
    assert results and all(
        r["admin1_name"] in admin1 or r["country_code"] in countries for r in results
    ), [(r["name"], r["admin1_name"]) for r in results]


@pytest.mark.parametrize(
    "q, name, admin1",
    [
        ("vancouver bc", "Vancouver", "British Columbia"),
        ("sydney nsw", "Sydney", "New South Wales"),
        ("sydney ns", "Sydney", "Nova Scotia"),
    ],
)
def test_field_all_takes_a_last_word_as_a_region_code(server, q, name, admin1):
    top = first(server, q, field="all")
    assert (top["name"], top["admin1_name"]) == (name, admin1)


def test_country_names_with_an_apostrophe_read_as_a_space(server):
    for q in ("cote d ivoire", "cote d'ivoire", "cote divoire"):
        top = first(server, q, field="all")
        assert top["country_code"] == "CI", q
    assert first(server, "san pedro, cote d ivoire")["country_code"] == "CI"


def test_search_result_shape_and_order(server):
    body = search(server, "Springfield", limit=5)
    assert body["count"] == len(body["results"]) == 5
    for item in body["results"]:
        assert set(item) == SEARCH_FIELDS
    populations = [r["population"] or 0 for r in body["results"]]
    assert populations == sorted(populations, reverse=True)  # same match quality: by population


def test_country_filter_and_limit(server):
    body = search(server, "Paris", country="us", limit=3)
    assert body["count"] == 3 and {r["country_code"] for r in body["results"]} == {"US"}
    unknown = get(f"{server.url}/geocoding/lookup?q=Paris&country=ZZ")
    assert unknown.status == 400 and unknown.json()["errors"][0]["parameter"] == "country"


def test_language_localises_country_names(server):
    assert first(server, "zurich", language="de")["country_name"] == "Schweiz"
    assert first(server, "zurich", language="fr")["country_name"] == "Suisse"
    assert first(server, "zurich", language="xx")["country_name"] == "Switzerland"  # fallback
    assert first(server, "zurich", language="pt-BR")["country_name"] == "Suíça"


def test_lookup_by_id(server):
    reply = get(f"{server.url}/geocoding/lookup?id={ZURICH}")
    assert reply.status == 200
    item = reply.json()
    assert set(item) == DETAIL_FIELDS
    assert item["name"] == "Zürich" and item["admin2_name"] == "Bezirk Zürich"
    assert item["timezone"] == "Europe/Zurich"


def test_airports_have_elevation(server):
    airport = first(server, "ZRH")
    detail = get(f"{server.url}/geocoding/lookup?id={urllib.parse.quote(airport['id'])}")
    if airport["feature_code"] != "AIRP":
        airport = search(server, "Zurich Airport")["results"][0]
        detail = get(f"{server.url}/geocoding/lookup?id={urllib.parse.quote(airport['id'])}")
    assert detail.json()["feature_code"] == "AIRP"
    assert 400 < detail.json()["elevation"] < 450


def test_capitals_are_marked(server):
    assert first(server, "Bern")["feature_code"] == "PPLC"
    assert first(server, "Canberra")["feature_code"] == "PPLC"


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("q=zurich&id=1", "q"),
        ("", "q"),
        ("q=z", "q"),
        ("q=%20%20z%20", "q"),
        ("q=" + "x" * 201, "q"),
        ("q=zurich&limit=51", "limit"),
        ("q=zurich&limit=0", "limit"),
        ("q=zurich&limit=ten", "limit"),
        ("q=zurich&field=everything", "field"),
        ("q=zurich&language=!!", "language"),
        ("q=zurich&country=CHE", "country"),
        ("q=zurich&limit=%D9%A5", "limit"),  # Arabic-Indic digit five
        ("id=abc", "id"),
        ("id=1;drop", "id"),
    ],
)
def test_lookup_rejects_bad_parameters(server, query, parameter):
    reply = get(f"{server.url}/geocoding/lookup?{query}")
    assert reply.status == 400
    assert reply.headers["Content-Type"].startswith("application/problem+json")
    body = reply.json()
    assert body["status"] == 400 and body["title"] == "Bad Request" and body["detail"]
    assert parameter in {e["parameter"] for e in body["errors"]}


def test_unknown_id_is_404(server):
    reply = get(f"{server.url}/geocoding/lookup?id=999999999")
    assert reply.status == 404 and reply.json()["status"] == 404


def test_unknown_parameters_are_ignored(server):
    assert search(server, "zurich", cachebuster="123")["count"] > 0


# ---- reverse ---------------------------------------------------------------------------


def _brute_force(places, lat, lon, k):
    p1, l1 = math.radians(lat), math.radians(lon)
    out = []
    for pid, plat, plon in places:
        p2, l2 = math.radians(plat), math.radians(plon)
        a = (
            math.sin((p2 - p1) / 2) ** 2
            + math.cos(p1) * math.cos(p2) * math.sin((l2 - l1) / 2) ** 2
        )
        out.append((2 * 6371.0088 * math.asin(min(1.0, math.sqrt(a))), pid))
    return sorted(out)[:k]


@pytest.fixture(scope="module")
def all_places(default_build):
    con = duckdb.connect(str(default_build / "current" / "catalog.duckdb"), read_only=True)
    return con.execute("select id, lat, lon from locations").fetchall()


@pytest.mark.parametrize(
    "lat, lon",
    [
        (47.3769, 8.5417),
        (0.0, 179.999),
        (0.0, -179.999),
        (-16.5, 179.9),
        (65.0, -180.0),
        (90.0, 0.0),
        (-90.0, 0.0),
        (89.9, 45.0),
        (-41.3, 174.8),
        (21.3, -157.9),
    ],
)
def test_reverse_is_exact_great_circle(server, all_places, lat, lon):
    reply = get(f"{server.url}/geocoding/reverse?lat={lat}&lon={lon}&limit=5")
    assert reply.status == 200
    body = reply.json()
    expected = _brute_force(all_places, lat, lon, 5)
    assert body["count"] == 5
    got = [r["distance_km"] for r in body["results"]]
    assert got == sorted(got)
    assert got == pytest.approx([round(d, 3) for d, _ in expected], abs=0.0015)
    assert body["results"][0]["id"] == expected[0][1] or got[0] == got[1]
    assert set(body["results"][0]) == DETAIL_FIELDS | {"distance_km"}


def test_reverse_random_points_match_brute_force(server, all_places):
    rng = random.Random(7)
    for _ in range(20):
        lat, lon = rng.uniform(-90, 90), rng.uniform(-180, 180)
        body = get(f"{server.url}/geocoding/reverse?lat={lat}&lon={lon}").json()
        ((distance, pid),) = _brute_force(all_places, lat, lon, 1)
        assert body["results"][0]["distance_km"] == pytest.approx(round(distance, 3), abs=0.0015)


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("lon=8", "lat"),
        ("lat=47", "lon"),
        ("lat=91&lon=0", "lat"),
        ("lat=0&lon=180.5", "lon"),
        ("lat=nan&lon=0", "lat"),
        ("lat=inf&lon=0", "lat"),
        ("lat=1e999&lon=0", "lat"),
        ("lat=0x10&lon=0", "lat"),
        ("lat=%D9%A4&lon=0", "lat"),
        ("lat=&lon=0", "lat"),
        ("lat=1&lon=2&limit=51", "limit"),
        ("lat=1&lon=2&limit=-1", "limit"),
        ("lat=1&lon=2&language=e", "language"),
    ],
)
def test_reverse_rejects_bad_parameters(server, query, parameter):
    reply = get(f"{server.url}/geocoding/reverse?{query}")
    assert reply.status == 400
    assert parameter in {e["parameter"] for e in reply.json()["errors"]}


# ---- countries -------------------------------------------------------------------------


def test_countries_sorted_by_english_name(server):
    body = get(f"{server.url}/geocoding/countries").json()
    names = [c["name"] for c in body["results"]]
    assert body["count"] == len(names) > 240
    assert names.index("Åland Islands") < names.index("Albania")  # accent-insensitive order
    assert set(body["results"][0]) == {"code", "name", "flag", "population", "continent"}
    codes = {c["code"] for c in body["results"]}
    assert "NA" in codes and "CS" not in codes and "AN" not in codes  # Namibia; dissolved


def test_country_detail(server):
    for code in ("ch", "CH", "Ch"):
        body = get(f"{server.url}/geocoding/countries/{code}").json()
        assert body == {
            "code": "CH",
            "name": "Switzerland",
            "flag": "🇨🇭",
            "population": body["population"],
            "continent": "EU",
            "timezone": "Europe/Zurich",
            "capital": "Bern",
        }
    namibia = get(f"{server.url}/geocoding/countries/NA").json()
    assert namibia["name"] == "Namibia" and namibia["continent"] == "AF"
    assert get(f"{server.url}/geocoding/countries/ZZ").status == 404
    assert get(f"{server.url}/geocoding/countries/C1").status == 400


# ---- HTTP behaviour --------------------------------------------------------------------


def test_caching_headers_and_conditional_get(server):
    reply = get(f"{server.url}/geocoding/countries/CH")
    assert reply.headers["Cache-Control"] == "public, max-age=86400"
    assert reply.headers["X-Data-Version"].startswith("geocoding-")
    etag = reply.headers["ETag"]
    again = get(f"{server.url}/geocoding/countries/CH", {"If-None-Match": etag})
    assert again.status == 304 and again.body == b""
    other = get(f"{server.url}/geocoding/countries/DE")
    assert other.headers["ETag"] != etag


def test_gzip_and_cors(server):
    reply = get(f"{server.url}/geocoding/countries", {"Accept-Encoding": "gzip"})
    assert reply.headers.get("Content-Encoding") == "gzip"
    assert gzip.decompress(reply.body).startswith(b'{"results"')
    assert reply.headers["Access-Control-Allow-Origin"] == "*"
    small = get(f"{server.url}/geocoding/countries/CH", {"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers  # under 1 KiB
    preflight = get(
        f"{server.url}/geocoding/lookup",
        {"Origin": "https://example.org", "Access-Control-Request-Method": "GET"},
        method="OPTIONS",
    )
    assert preflight.status == 204 and "GET" in preflight.headers["Access-Control-Allow-Methods"]


def test_rate_limit_headers_and_429(server):
    url = f"{server.url}/geocoding/countries/CH"
    replies = [get(url, {"X-API-Key": server.tiny_key}) for _ in range(4)]
    assert [r.status for r in replies] == [200, 200, 200, 429]
    assert replies[0].headers["RateLimit-Limit"] == "3"
    assert int(replies[0].headers["RateLimit-Remaining"]) == 2
    refused = replies[-1]
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.headers["Content-Type"].startswith("application/problem+json")
    assert refused.json()["status"] == 429


def test_keys_on_keyed_areas(server):
    assert get(f"{server.url}/forecast/47.3,8.5").status == 403
    assert get(f"{server.url}/forecast/47.3,8.5?api_key=wrong").status == 403
    # A valid key passes, in the header or as api_key.
    assert get(f"{server.url}/forecast/47.3,8.5", {"X-API-Key": server.key}).status == 200
    assert get(f"{server.url}/forecast/47.3,8.5?api_key={server.key}").status == 200
    assert get(f"{server.url}/geocoding/countries/CH").status == 200


def test_api_key_after_a_fragment_is_not_read(server):
    # What follows '#' is a fragment, not a query: no key was sent (decoded as yarl does).
    parsed = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        conn.request("GET", f"{server.url}/forecast/47.3,8.5#x?api_key={server.key}")
        assert conn.getresponse().status == 403
    finally:
        conn.close()


def test_errors_leak_nothing(server):
    for path in (
        "/geocoding/lookup?id=../../etc/passwd",
        "/geocoding/lookup?q='%20OR%201=1--",
        "/nope",
        "/geocoding/countries/%00%00",
        "/geocoding/reverse?lat=1e400&lon=1",
    ):
        reply = get(server.url + path)
        assert reply.status in (200, 400, 404)
        text = reply.body.decode()
        for leak in ("Traceback", "/tmp", str(server.build_dir), "SELECT", 'File "'):
            assert leak not in text


# ---- regressions from review ------------------------------------------------------------


def test_if_none_match_star_only_matches_a_current_representation(server):
    star = {"If-None-Match": "*"}
    assert get(f"{server.url}/geocoding/countries/CH", star).status == 304
    assert get(f"{server.url}/geocoding/countries/ZZ", star).status == 404
    assert get(f"{server.url}/geocoding/lookup?id=1", star).status == 404
    assert get(f"{server.url}/geocoding/lookup?q=a", star).status == 400


def test_a_matching_tag_never_skips_validation(server):
    """A 304 is only ever the answer a 200 would have been: an invalid request whose tag
    matches (clients may send any tag) is still a 400."""
    url = f"{server.url}/geocoding/reverse?lat=91&lon=0"
    etag = get(f"{server.url}/geocoding/reverse?lat=90&lon=0").headers["ETag"]
    bad = get(url, {"If-None-Match": "*"})
    assert bad.status == 400 and bad.headers["Content-Type"].startswith("application/problem")
    again = get(f"{server.url}/geocoding/reverse?lat=90&lon=0", {"If-None-Match": etag})
    assert again.status == 304 and again.headers["Cache-Control"] == "public, max-age=3600"


def test_a_304_varies_as_its_200_does(server):
    # The 200 is over 1 KiB, so it varies on Accept-Encoding; a cache keys both alike.
    url = f"{server.url}/geocoding/lookup?q=london&limit=20"
    full = get(url, {"Accept-Encoding": "gzip"})
    assert full.status == 200 and full.headers["Vary"] == "Accept-Encoding"
    again = get(url, {"Accept-Encoding": "gzip", "If-None-Match": full.headers["ETag"]})
    assert again.status == 304 and again.headers["Vary"] == "Accept-Encoding"


def test_a_malformed_key_still_draws_from_the_address_budget(server):
    reply = get(f"{server.url}/geocoding/lookup?q=zurich&api_key=a&api_key=b")
    assert reply.status == 400 and reply.json()["errors"][0]["parameter"] == "api_key"
    assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(reply.headers)


def test_keyed_answers_vary_by_key(server):
    """Rule 9 makes answers public; Vary keeps a shared cache from serving a keyed answer to
    a request with another key or none. Keyless areas need no Vary on the key."""
    keyed = get(f"{server.url}/air-quality/47.37,8.54", {"X-API-Key": server.key})
    assert keyed.status == 200 and "X-API-Key" in keyed.headers["Vary"]
    assert "X-API-Key" not in get(f"{server.url}/geocoding/countries/CH").headers.get("Vary", "")
    # where a key is optional (clusters: key or token), an answer to a key header varies on it
    clusters = get(
        f"{server.url}/webcams/clusters?bbox=45,5,48,11&zoom=6", {"X-API-Key": server.key}
    )
    assert clusters.status == 200 and "X-API-Key" in clusters.headers["Vary"]


def test_gzip_negotiation(server):
    url = f"{server.url}/geocoding/countries"
    refused = get(url, {"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in refused.headers
    assert refused.headers["Vary"] == "Accept-Encoding"
    plain, zipped = get(url), get(url, {"Accept-Encoding": "br, gzip;q=0.5"})
    assert zipped.headers["Content-Encoding"] == "gzip" and plain.headers["Vary"]
    assert plain.headers["ETag"].startswith("W/")  # equivalent bodies share a weak tag
    # gzip's own entry decides over * (RFC 9110 12.5.3), in either order
    for header, gzipped in (
        ("*;q=0, gzip", True),
        ("gzip, *;q=0", True),
        ("*", True),
        ("*, gzip;q=0", False),
        ("identity", False),
    ):
        reply = get(url, {"Accept-Encoding": header})
        assert (reply.headers.get("Content-Encoding") == "gzip") is gzipped, header


def test_api_key_forms(server):
    url = f"{server.url}/forecast/47.3,8.5"
    assert get(f"{url}?api%5Fkey={server.key}").status == 200
    assert get(f"{url}?api_key=&api_key={server.key}").status == 200
    plain = get(f"{server.url}/geocoding/lookup?q=zurich").headers["ETag"]
    keyed = get(f"{server.url}/geocoding/lookup?q=zurich&api_key={server.key}").headers["ETag"]
    assert plain == keyed


@pytest.mark.parametrize(
    "path",
    [
        "/geocoding/countries/CH%0A",
        "/geocoding/lookup?id=2657896&limit=abc",
        "/geocoding/lookup?id=2657896&field=bogus",
        "/geocoding/reverse?lat=" + "1" * 5000 + "x&lon=0",
        "/geocoding/reverse?lat=" + "1" * 40 + "&lon=0",
    ],
)
def test_more_malformed_parameters(server, path):
    assert get(server.url + path).status == 400


def test_server_header_names_no_versions(server):
    assert "aiohttp" not in get(f"{server.url}/health").headers.get("Server", "")


# ---- parameters as sent, once (audit) --------------------------------------------------------


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("q=zurich&limit=1&limit=99", "limit"),  # the first value would be read, the other not
        ("q=zurich&limit=99&limit=1", "limit"),  # the same answer in either order
        ("id=2657896&id=abc", "id"),
        ("id=2657896&id=2657896", "id"),
        ("q=zurich&q=bern", "q"),
        ("q=zurich&language=de&language=!!", "language"),
        ("q=zurich&country=ch&country=de", "country"),
        ("q=zurich&field=all&field=name", "field"),
        ("q=zurich&api_key=a&api_key=b", "api_key"),
    ],
)
def test_lookup_parameters_read_once(server, query, parameter):
    reply = get(f"{server.url}/geocoding/lookup?{query}")
    assert reply.status == 400, reply.body
    assert reply.json()["errors"] == [
        {"parameter": parameter, "message": f"{parameter} is given more than once"}
    ]


def test_reverse_parameters_read_once(server):
    reply = get(f"{server.url}/geocoding/reverse?lat=47&lon=8&lat=48")
    assert reply.status == 400 and reply.json()["errors"][0]["parameter"] == "lat"


def test_unknown_parameters_may_repeat(server):
    assert search(server, "zurich", limit=1) == json_of(
        f"{server.url}/geocoding/lookup?q=zurich&limit=1&_=1&_=2&API_KEY=x&API_KEY=y"
    )
    # an empty api_key is no key: beside a real one it is not a second
    assert get(f"{server.url}/forecast/47.3,8.5?api_key=&api_key={server.key}").status == 200


def json_of(url: str) -> dict:
    reply = get(url)
    assert reply.status == 200, reply.body
    return reply.json()


@pytest.mark.parametrize(
    "query, parameter",
    [
        ("id=%202657896", "id"),
        ("id=2657896%0A", "id"),
        ("id=2657896%09", "id"),
        ("q=zurich&country=%20ch", "country"),
        ("q=zurich&country=ch%0A", "country"),
        ("q=zurich&limit=%205", "limit"),
        ("q=zurich&limit=5%0A", "limit"),
        ("q=zurich&language=%20de", "language"),
        ("q=zurich&language=de%0A", "language"),
        ("q=zurich&field=all%20", "field"),
    ],
)
def test_structured_values_are_taken_as_sent(server, query, parameter):
    reply = get(f"{server.url}/geocoding/lookup?{query}")
    assert reply.status == 400, reply.body
    assert reply.json()["errors"][0]["parameter"] == parameter


@pytest.mark.parametrize(
    "query", ["lat=%2047&lon=8", "lat=47&lon=8%0A", "lat=47%00&lon=8", "lat=%20&lon=8"]
)
def test_reverse_coordinates_are_taken_as_sent(server, query):
    reply = get(f"{server.url}/geocoding/reverse?{query}")
    assert reply.status == 400, reply.body


@pytest.mark.parametrize(
    "q",
    ["zurich%00", "%00zurich", "zu%7Frich", "zurich%C2%85", "%FF%FE%FD", "zurich%FF", "zu%1Brich"],
)
def test_q_with_control_characters_or_bytes_not_utf8_is_400(server, q):
    reply = get(f"{server.url}/geocoding/lookup?q={q}")
    assert reply.status == 400, reply.body
    assert reply.json()["errors"][0]["parameter"] == "q"


@pytest.mark.parametrize("q", ["%20zurich%09", "%0D%0Azurich%0A", "%E3%80%80zurich"])
def test_q_is_trimmed_of_whitespace(server, q):
    assert first(server, urllib.parse.unquote(q))["id"] == ZURICH
    assert json_of(f"{server.url}/geocoding/lookup?q={q}")["results"][0]["id"] == ZURICH


@pytest.mark.parametrize(
    "q",
    [
        "%E2%80%8B%E2%80%8B",
        "%EF%BB%BF%20%E2%81%A0",
        "%E2%80%8Bz%C2%AD",
        "a,",
        "a.",
        "..",
        "%2C%2C",
        "%2C%20a%2C",
        "-%20-",
    ],
)
def test_q_that_names_less_than_two_letters_is_too_short(server, q):
    # Zero-width space, BOM, word joiner, soft hyphen: trimmed as whitespace is
    # (docs/api/geocoding.md#search-text); and "a." is a one-letter search (punctuation is ignored),
    # not a list of places in "a".
    reply = get(f"{server.url}/geocoding/lookup?q={q}")
    assert reply.status == 400, reply.body
    assert reply.json()["errors"][0]["parameter"] == "q"


def test_a_one_letter_name_with_a_context_is_a_search(server):
    # Å (Norway) and Y (Somme) are places; with a context the letter is not a whole search.
    reply = get(f"{server.url}/geocoding/lookup?q=a%2C%20zurich")
    assert reply.status == 200 and reply.json()["results"]
    assert {r["admin1_name"] for r in reply.json()["results"]} == {"Zurich"}


def test_q_is_trimmed_of_invisible_characters(server):
    assert (
        json_of(f"{server.url}/geocoding/lookup?q=%E2%80%8Bzurich%EF%BB%BF")["results"][0]["id"]
        == ZURICH
    )


def test_whitespace_inside_q_separates_words(server):
    assert (
        json_of(f"{server.url}/geocoding/lookup?q=new%0Ayork")["results"][0]["name"]
        == "New York City"
    )


# ---- OPTIONS, 405, the document's ETag, oversized requests (audit) ---------------------------


def test_preflight_only_for_paths_that_exist(server):
    cors = {"Origin": "https://example.org", "Access-Control-Request-Method": "GET"}
    for path in ("/geocoding/lookup", "/webcams/token", "/openapi.json", "/webcams/123"):
        reply = get(server.url + path, cors, method="OPTIONS")
        assert reply.status == 204, path
        assert reply.headers["Server"] == "weather-geodata-api"
        assert reply.headers["X-API-Version"] and "aiohttp" not in reply.headers["Server"]
    for path in ("/nonexistent/path", "/geocoding", "/webcams/1/snapshots/x"):
        reply = get(server.url + path, cors, method="OPTIONS")
        assert reply.status == 404, path
        assert reply.headers["Content-Type"].startswith("application/problem+json")
        assert reply.headers["Server"] == "weather-geodata-api"


def test_405_allows_options(server):
    reply = get(f"{server.url}/geocoding/lookup?q=zurich", method="POST")
    assert reply.status == 405 and reply.headers["Allow"] == "GET,HEAD,OPTIONS"
    assert reply.headers["Content-Type"].startswith("application/problem+json")


def test_openapi_document_has_an_etag(server):
    reply = get(f"{server.url}/openapi.json")
    etag = reply.headers["ETag"]
    assert reply.status == 200 and etag.startswith('W/"')
    assert get(f"{server.url}/openapi.json").headers["ETag"] == etag
    again = get(f"{server.url}/openapi.json", {"If-None-Match": etag})
    assert again.status == 304 and again.body == b"" and again.headers["ETag"] == etag
    assert again.headers["Cache-Control"] == "public, max-age=3600"
    assert get(f"{server.url}/openapi.json", {"If-None-Match": 'W/"other"'}).status == 200


def _raw(server, raw: bytes) -> tuple[int, dict]:
    """Status and problem body of raw bytes sent to the server (which closes the connection)."""
    parsed = urllib.parse.urlsplit(server.url)
    with socket.create_connection((parsed.hostname, parsed.port), timeout=10) as conn:
        conn.sendall(raw)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head.lower(), head
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_oversized_request_lines_and_headers(server):
    long_target = b"/geocoding/lookup?q=" + b"ab" * 5000
    status, body = _raw(server, b"GET " + long_target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414 and body["status"] == 414 and "ab" not in body["detail"]
    big_header = b"X-Foo: " + b"a" * 9000 + b"\r\n"
    status, body = _raw(server, b"GET /health HTTP/1.1\r\nHost: x\r\n" + big_header + b"\r\n")
    assert status == 431 and body["title"] == "Request Header Fields Too Large"
    long_name = b"X-" + b"a" * 9000 + b": 1\r\n"
    assert _raw(server, b"GET /health HTTP/1.1\r\nHost: x\r\n" + long_name + b"\r\n")[0] == 431
    many = b"".join(b"X-H%d: 1\r\n" % i for i in range(200))
    assert _raw(server, b"GET /health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")[0] == 431
    # just under the limits: answered
    assert get(f"{server.url}/health?x={'a' * 8000}").status == 200
    assert get(f"{server.url}/health", {"X-Foo": "a" * 8000}).status == 200
    status, _ = _raw(server, b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
    assert status == 400
