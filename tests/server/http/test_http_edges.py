"""HTTP edge cases on a small real geocoding build: malformed escapes, errors of operations
that are not for browsers, and Accept-Encoding as RFC 9110 writes it."""

from __future__ import annotations

import gzip
import http.client
import json
import urllib.parse

import pytest

from server.http.middleware import _accepts_gzip
from tests.server.test_lifecycle import build, make_datasets
from tests.support.procs import Server, get


@pytest.fixture(scope="module")
def small(module_tmp):
    """A server over a geocoding-only build of the hand-made GeoNames fixture."""
    root = module_tmp("edges")
    build(make_datasets(root / "a"), root / "build")
    with Server(root / "build") as srv:
        srv.wait_ready()
        yield srv


def raw_get(url: str, target: str, *lines: tuple[str, str]) -> tuple[int, bytes]:
    """GET a request target exactly as written (urllib would re-quote it), with header lines
    as given (a name may come more than once)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest("GET", target, skip_accept_encoding=True)
        for name, value in lines:
            connection.putheader(name, value)
        connection.endheaders()
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


@pytest.mark.slow
@pytest.mark.parametrize("q", ["%ZZurich", "zurich%", "zur%2", "%%41zurich"])
def test_a_search_text_with_a_broken_percent_escape_is_400(small, q):
    status, body = raw_get(small.url, f"/geocoding/lookup?q={q}")
    assert status == 400, body
    assert b'"parameter":"q"' in body and b"%25" in body


@pytest.mark.slow
def test_a_broken_escape_is_400_whatever_escapes_the_parameter_name(small):
    # yarl reads %71 as q: the value is checked as q's is.
    status, body = raw_get(small.url, "/geocoding/lookup?%71=zur%ich")
    assert status == 400, body
    assert b'"parameter":"q"' in body


@pytest.mark.slow
@pytest.mark.parametrize(
    "q, first",
    [
        ("zurich%20", "2657896"),
        ("z%C3%BCrich", "2657896"),
        ("Z%C3%BCrich", "2657896"),
        ("Z%C3%BCrich%20Airport", "6296725"),
        ("Windhoek%2C%20NA", "3352136"),
        ("100%25", None),  # "100%": an escaped "%" is a character, not an escape
    ],
)
def test_a_search_text_with_good_escapes_is_searched(small, q, first):
    status, body = raw_get(small.url, f"/geocoding/lookup?q={q}")
    assert status == 200, body
    results = json.loads(body)["results"]
    assert (results[0]["id"] if results else None) == first, results
    # The text searched is the decoded one: as the same text sent by urllib, escaped its way.
    decoded = urllib.parse.unquote(q)
    assert (
        get(small.url + "/geocoding/lookup?" + urllib.parse.urlencode({"q": decoded})).json()[
            "results"
        ]
        == results
    )


@pytest.mark.slow
def test_a_refused_token_post_carries_no_cors_header(small):
    # CORS is open for GET only (docs/api/conventions.md#cors), refusals included: a browser page
    # must not read the token operation's errors either.
    refused = get(small.url + "/webcams/token", method="POST")
    assert refused.status == 403
    assert "Access-Control-Allow-Origin" not in refused.headers
    not_allowed = get(small.url + "/geocoding/countries", method="DELETE")
    assert not_allowed.status == 405
    assert "Access-Control-Allow-Origin" not in not_allowed.headers
    keyless = get(small.url + "/forecast/1,2")
    assert keyless.status == 403 and keyless.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    "header, gzipped",
    [
        ("gzip", True),
        ("GZip", True),
        ("x-gzip", True),
        ("", False),
        ("deflate, br", False),
        # parameters other than q are ignored, wherever they are; q is case-insensitive
        ("gzip;foo=1", True),
        ("gzip ; foo=1 ; q=0.5", True),
        ("gzip;foo", True),
        ("gzip;q=0", False),
        ("gzip;foo=1;q=0", False),
        ("gzip;Q=0", False),
        # a qvalue is 0 to 1 with up to 3 decimals; anything else refuses the coding
        ("gzip;q=0.001", True),
        ("gzip;q=1.000", True),
        ("gzip;q=1", True),
        ("gzip;q=1.", True),
        ("gzip;q=0.", False),
        ("gzip;q=0.000", False),
        ("gzip;q=1.5", False),
        ("gzip;q=0.0001", False),
        ("gzip;q=-1", False),
        ("gzip;q=abc", False),
        ("gzip;q=", False),
        # gzip's own entry decides over *, whatever the order; the first entry of a coding counts
        ("*", True),
        ("*;q=0", False),
        ("*;q=0, gzip", True),
        ("gzip, *;q=0", True),
        ("*, gzip;q=0", False),
        ("gzip;q=0.5, gzip;q=0", True),
        (" , ,gzip ,", True),
        # identity is preferred only when weighed above gzip; refusing it leaves gzip as it was
        ("identity", False),
        ("identity, gzip;q=0.5", False),
        ("gzip;q=0.5, identity;q=0.5", True),
        ("identity;q=0.2, gzip;q=0.8", True),
        ("identity;q=0, *", True),
        ("br, gzip;q=0.1", True),
        # identity not listed weighs what * does
        ("*;q=1, gzip;q=0.5", False),
        ("*;q=0.5, gzip", True),
    ],
)
def test_accept_encoding_is_read_as_rfc_9110_writes_it(header, gzipped):
    assert _accepts_gzip(header) is gzipped


@pytest.mark.slow
def test_gzip_with_a_parameter_other_than_q_is_accepted(small):
    url = small.url + "/geocoding/reverse?lat=47.37&lon=8.54&limit=50"
    plain = get(url, {"Accept-Encoding": "identity"})
    assert plain.status == 200 and len(plain.body) > 1024 and plain.headers["Vary"]
    zipped = get(url, {"Accept-Encoding": "gzip;foo=1"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.body) == plain.body


@pytest.mark.slow
def test_accept_encoding_over_several_header_lines_is_one_list(small):
    # RFC 9110 5.3: "identity;q=0" then "gzip" on a second line accepts gzip.
    address = urllib.parse.urlsplit(small.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest(
            "GET", "/geocoding/reverse?lat=47.37&lon=8.54&limit=50", skip_accept_encoding=True
        )
        connection.putheader("Accept-Encoding", "identity;q=0")
        connection.putheader("Accept-Encoding", "gzip")
        connection.endheaders()
        reply = connection.getresponse()
        assert reply.status == 200 and reply.getheader("Content-Encoding") == "gzip"
        reply.read()
    finally:
        connection.close()


@pytest.mark.slow
def test_if_none_match_on_several_lines_is_one_list(small):
    # RFC 9110 5.3: the lines are one comma-separated list, whichever line holds the tag.
    target = "/geocoding/countries/CH"
    tag = get(small.url + target).headers["ETag"]
    assert (
        raw_get(small.url, target, ("If-None-Match", '"other"'), ("If-None-Match", tag))[0] == 304
    )
    assert (
        raw_get(small.url, target, ("If-None-Match", '"other"'), ("If-None-Match", 'W/"another"'))[
            0
        ]
        == 200
    )


@pytest.mark.slow
def test_a_refusal_that_rests_on_the_data_names_its_version(small):
    # docs/api/conventions.md#data-versions: X-Data-Version names the artifact version that
    # answered, a 404 of an unknown id or a 400 of an unknown country code too; a 403 or 429 rests
    # on no data.
    version = get(small.url + "/geocoding/countries").headers["X-Data-Version"]
    for path, status in [
        ("/geocoding/lookup?id=999999999", 404),
        ("/geocoding/lookup?q=zurich&country=XX", 400),
        ("/geocoding/countries/ZZ", 404),
    ]:
        reply = get(small.url + path)
        assert (reply.status, reply.headers.get("X-Data-Version")) == (status, version), path
    refused = get(small.url + "/forecast/47,8")
    assert refused.status in (403, 503) and "X-Data-Version" not in refused.headers
