"""Pure pieces of the server: typo candidates, distances, rate limiting, parameters, keys."""

from __future__ import annotations

import hashlib
import math
import tomllib

import numpy as np
import pytest
from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict, MultiDict

from server.geocoding.index import haversine_km
from server.geocoding.search import edits1, typo_budget
from server.http import languages, params
from server.http.errors import ApiError
from server.http.middleware import address_budget, presented_key
from server.security.keys import KeyStore, add_key
from server.security.ratelimit import RateLimiter


def test_edits1_covers_every_single_edit():
    variants = edits1("zurich")
    assert {"zurch", "zuirch", "zurish", "zurichs", "xzurich"} <= variants
    assert "zuihc" not in variants  # two edits


@pytest.mark.parametrize(
    "key, budget", [("abc", 0), ("abcd", 1), ("abcdefg", 1), ("abcdefgh", 2), ("new york city", 2)]
)
def test_typo_budget_follows_rule_15(key, budget):
    assert typo_budget(key) == budget


@pytest.mark.parametrize(
    "a, b, km",
    [
        ((0.0, 0.0), (1.0, 0.0), 6371.0088 * math.pi / 180),  # one degree of a meridian
        ((0.0, 0.0), (0.0, 90.0), 6371.0088 * math.pi / 2),  # a quarter of the equator
        ((0.0, 179.9), (0.0, -179.9), 22.24),  # across the antimeridian
        ((90.0, 0.0), (90.0, 123.0), 0.0),  # the pole has every longitude
        ((0.0, 0.0), (0.0, 180.0), math.pi * 6371.0088),  # antipodes
    ],
)
def test_haversine(a, b, km):
    got = haversine_km(a[0], a[1], np.array([b[0]]), np.array([b[1]]))[0]
    assert got == pytest.approx(km, abs=0.1)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_token_bucket_refills_at_the_rate():
    clock = Clock()
    limiter = RateLimiter(clock)
    decisions = [limiter.check("ip:1", 60, 3) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert decisions[0].remaining == 2 and decisions[-1].retry_after_s == 1
    assert decisions[-1].headers()["Retry-After"] == "1"
    clock.now += 1.0  # one token a second at 60 a minute
    assert limiter.check("ip:1", 60, 3).allowed
    assert not limiter.check("ip:1", 60, 3).allowed
    assert limiter.check("ip:2", 60, 3).allowed  # buckets are per client


@pytest.mark.parametrize(
    "raw",
    [
        "nan",
        "inf",
        "-inf",
        "1e999",
        "0x1",
        "1,5",
        "",
        " ",
        "1e5",
        " 47",
        "47 ",
        "47\n",
        "\t47",
        "47\x00",
    ],
)
def test_number_rejects_non_finite_and_malformed(raw):
    with pytest.raises(ApiError) as err:
        params.number(raw, "lat", -90, 90)
    assert err.value.status == 400 and err.value.errors[0]["parameter"] == "lat"


@pytest.mark.parametrize("raw, value", [("47.5", 47.5), ("-90", -90.0), ("+8", 8.0), (".5", 0.5)])
def test_number_accepts_decimals(raw, value):
    assert params.number(raw, "lat", -90, 90) == value


@pytest.mark.parametrize("raw", [" 5", "5 ", "5\n", "\x005", "1" * 19, "5.0", "٥"])
def test_integer_takes_the_value_as_sent(raw):
    with pytest.raises(ApiError) as err:
        params.integer({"offset": raw}, "offset", 0, 0, 10**18 - 1)
    assert err.value.status == 400 and err.value.errors[0]["parameter"] == "offset"


def test_integer_takes_eighteen_digits():
    assert params.integer({"offset": "9" * 18}, "offset", 0, 0, 10**18 - 1) == 10**18 - 1


@pytest.mark.parametrize("raw", [" de", "de ", "de\n", "\tde"])
def test_language_takes_the_value_as_sent(raw):
    with pytest.raises(ApiError) as err:
        params.language({"language": raw})
    assert err.value.errors[0]["parameter"] == "language"


@pytest.mark.parametrize(
    "query, repeated",
    [
        ([("limit", "1"), ("limit", "99")], "limit"),
        ([("q", "a"), ("limit", "1"), ("x", "1"), ("limit", "1")], "limit"),  # even the same value
        ([("units", "si"), ("lang", "de"), ("lang", "de"), ("units", "xx")], "lang"),  # the first
        ([("x", "1"), ("x", "2"), ("limit", "1")], None),  # unknown parameters may repeat
        ([("exclude", "hourly"), ("exclude", "daily")], None),  # so may list-valued ones
        ([("limit", "1")], None),
        ([], None),
    ],
)
def test_once_refuses_a_parameter_read_twice(query, repeated):
    multi = MultiDict(query)
    if repeated is None:
        params.once(multi, {"limit", "units", "lang", "q"})
        return
    with pytest.raises(ApiError) as err:
        params.once(multi, {"limit", "units", "lang", "q"})
    assert err.value.status == 400
    assert err.value.errors == [
        {"parameter": repeated, "message": f"{repeated} is given more than once"}
    ]


@pytest.mark.parametrize(
    "raw, text",
    [
        (" zurich\t", "zurich"),
        ("new\nyork", "new\nyork"),
        ("\r\nzu rich\u3000", "zu rich"),
        ("St. John’s", "St. John’s"),
        ("\u200bzurich\ufeff", "zurich"),  # a format character (Cf) at an end is trimmed
        ("zu\u200brich", "zu\u200brich"),  # inside, it is text (the search ignores it)
    ],
)
def test_free_text_is_trimmed(raw, text):
    assert params.free_text(raw, "q") == text


@pytest.mark.parametrize(
    "raw, what",
    [
        ("zurich\x00", "U+0000"),
        ("zu\x7frich", "U+007F"),
        ("zurich\x85", "U+0085"),
        ("\x1fzurich", "U+001F"),
        ("zu\x0brich", "U+000B"),
        ("\ufffd\ufffd", "not UTF-8"),
    ],
)
def test_free_text_refuses_control_characters_and_bytes_that_are_not_utf8(raw, what):
    with pytest.raises(ApiError) as err:
        params.free_text(raw, "q")
    assert err.value.errors[0]["parameter"] == "q" and what in err.value.detail


@pytest.mark.parametrize(
    "raw, candidates",
    [
        ("de", ("de", "en")),
        ("pt-br", ("pt-BR", "pt", "en")),
        ("zh_hant", ("zh-Hant", "en")),
        ("EN", ("en",)),  # just English: the default, whose answers are precomputed
        # A region or script never falls back to names of another script.
        ("zh-TW", ("zh-TW", "zh-Hant", "en")),
        ("zh", ("zh", "en")),
        ("zh-CN", ("zh-CN", "zh", "en")),
        ("zh-Hant-HK", ("zh-Hant-HK", "zh-HK", "zh-Hant", "en")),
        ("sr-Latn", ("sr-Latn", "en")),
        ("sr-ME", ("sr-ME", "sr-Latn", "en")),
        ("sr", ("sr", "en")),
        # Variants are tried first; extensions and private use are dropped, unless they are all.
        ("de-CH-1996", ("de-CH-1996", "de-CH", "de", "en")),
        ("be-tarask", ("be-TARASK", "be", "en")),
        # A script asked for, of a language not known to be written in several: not the bare one.
        ("ja-Latn", ("ja-Latn", "en")),
        ("ru-Latn-RU", ("ru-Latn-RU", "ru-Latn", "en")),
        ("ja-JP-u-ca-japanese", ("ja-JP", "ja", "en")),
        ("en-US-x-twain", ("en-US", "en")),
        ("x-pig-latin", ("x-pig-latin", "en")),
        ("i-klingon", ("i-klingon", "en")),
        # Irregular grandfathered tags (RFC 5646 2.1) are well-formed: English, not a 400.
        ("en-GB-oed", ("en-GB-OED", "en-GB", "en")),
        ("sgn-CH-de", ("sgn-CH-DE", "sgn-CH", "sgn", "en")),
    ],
)
def test_language_candidates(raw, candidates):
    assert params.language({"language": raw}) == candidates


@pytest.mark.parametrize(
    "raw",
    [
        "en-12",
        "pt-br-xx",
        "e",
        "en--us",
        "en-",
        "x",
        "x-",
        "en-x",
        "1en",
        "en-US-u",
        "a" * 9,
        "en-" + "a" * 9,
        "de-" + "-de" * 30,
        "zh-yue-yue-yue-yue",
        "en US",
        "en-US-" + "1996-" * 20 + "x-a",
    ],
)
def test_malformed_language_tags_are_400(raw):
    with pytest.raises(ApiError) as err:
        params.language({"lang": raw}, "lang")
    assert err.value.status == 400 and err.value.errors[0]["parameter"] == "lang"


def test_the_likely_scripts_are_cldrs():
    # server.http.languages copies CLDR's likely scripts (babel's likely_subtags) of the languages
    # CLDR writes in more than one script, so that the server need not load babel.
    from babel import localedata
    from babel.core import get_global

    likely = get_global("likely_subtags")
    several = {
        i.split("_")[0]
        for i in localedata.locale_identifiers()
        if len(i.split("_")) > 1 and len(i.split("_")[1]) == 4
    }
    expected = {}
    for language in several:
        default = likely[language].split("_")[1]
        regions = {
            k.split("_")[1]: v.split("_")[1]
            for k, v in likely.items()
            if k.split("_")[0] == language
            and len(k.split("_")) == 2
            and len(k.split("_")[1]) == 2
            and v.split("_")[1] != default
        }
        expected[language] = (default, regions)
    assert languages.SCRIPTS == expected


@pytest.mark.parametrize("name", ["keys.json", "keys.toml"])
def test_key_store_authenticates_by_hash(tmp_path, name):
    path = tmp_path / name
    key = add_key(path, "alice", 10)
    store = KeyStore(path)
    assert store.authenticate(key).name == "alice"
    assert store.authenticate(key + "x") is None
    assert store.authenticate("") is None
    with pytest.raises(ValueError):
        add_key(path, "bad name!")


def test_keys_file_in_toml(tmp_path):
    path = tmp_path / "keys.toml"
    path.write_text(
        '# operators may write the file by hand\n[[keys]]\nname = "ops"\n'
        f'sha256 = "{hashlib.sha256(b"hand-made").hexdigest()}"\nrate_limit = 7\n'
    )
    key = add_key(path, "alice")
    stored = tomllib.loads(path.read_text())["keys"]
    assert stored == [
        {"name": "ops", "sha256": hashlib.sha256(b"hand-made").hexdigest(), "rate_limit": 7},
        {"name": "alice", "sha256": hashlib.sha256(key.encode()).hexdigest()},
    ]
    store = KeyStore(path)
    assert store.authenticate("hand-made").rate_limit == 7
    assert store.authenticate(key).name == "alice" and store.authenticate(key).rate_limit is None


@pytest.mark.parametrize(
    "address, budget",
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),  # one subscriber's /64: one budget
        ("2001:db8:1:2::9", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::9", "2001:db8:1:3::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),  # IPv4 through an IPv6 socket
        ("unknown", "unknown"),
    ],
)
def test_ipv6_clients_draw_from_the_budget_of_their_64(address, budget):
    assert address_budget(address) == budget


@pytest.mark.parametrize(
    "query",
    [
        "",
        "lat=1&lon=2",
        "api_key=k1",
        "x=1&api_key=k1&api_key=k2",
        "api_key=&api_key=k2",
        "api_key&api_key=k2",
        "api_key=",
        "API_KEY=k1",
        "api%5Fkey=k1",
        "api_key=a%2Bb",
        "api_key=a+b",
        "api_key=k1#frag",
        "api_key=k=1",
        "apikey=k1",
        "x=api&y=1",
        "&&api_key=k1&",
    ],
)
def test_presented_key_reads_the_query_as_yarl_does(query):
    request = make_mocked_request("GET", f"/geocoding/lookup?{query}")
    values = [v for v in request.query.getall("api_key", ()) if v]
    fresh = make_mocked_request("GET", f"/geocoding/lookup?{query}")
    if len(values) > 1:  # which one would the caller mean?
        with pytest.raises(ApiError) as err:
            presented_key(fresh)
        assert err.value.status == 400 and err.value.errors[0]["parameter"] == "api_key"
    else:
        assert presented_key(fresh) == (values[0] if values else None)


@pytest.mark.parametrize(
    "query",
    [
        "api_key=k1&api_key=k2",
        "api_key=k1&api_key=k1",
        "api%5Fkey=k1&api_key=k2",
        "api_key=k1&x=%20&api_key=k2",
    ],
)
def test_two_api_keys_are_a_400(query):
    with pytest.raises(ApiError) as err:
        presented_key(make_mocked_request("GET", f"/health?{query}"))
    assert err.value.errors == [
        {"parameter": "api_key", "message": "api_key is given more than once"}
    ]


@pytest.mark.parametrize(
    "headers",
    [
        [("X-API-Key", "k1"), ("X-API-Key", "k2")],
        [("X-API-Key", "k1"), ("X-API-Key", "k1")],
        [("X-API-Key", "k1, k2")],
        [("X-API-Key", ""), ("X-API-Key", "k2")],
    ],
)
def test_two_api_key_headers_are_a_400(headers):
    # Two header lines mean the comma-joined list (RFC 9110 5.3); which key would it be?
    request = make_mocked_request("GET", "/health", headers=CIMultiDict(headers))
    with pytest.raises(ApiError) as err:
        presented_key(request)
    assert err.value.status == 400 and err.value.errors[0]["parameter"] == "X-API-Key"


def test_presented_key_header_wins():
    request = make_mocked_request("GET", "/health?api_key=k1", headers={"X-API-Key": "k2"})
    assert presented_key(request) == "k2"
