"""HTTP edge cases on a small real geocoding build: malformed escapes, and errors of
operations that are not for browsers."""

from __future__ import annotations

import http.client

import pytest

from tests.server.test_lifecycle import build, make_datasets
from tests.support.procs import Server, get


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A server over a geocoding-only build of the hand-made GeoNames fixture."""
    root = tmp_path_factory.mktemp("edges")
    build(make_datasets(root / "a"), root / "build")
    with Server(root / "build") as srv:
        srv.wait_ready()
        yield srv


def raw_get(url: str, target: str) -> tuple[int, bytes]:
    """GET a request target exactly as written (urllib would re-quote it)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest("GET", target, skip_accept_encoding=True)
        connection.endheaders()
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


@pytest.mark.parametrize("q", ["%ZZurich", "zurich%", "zur%2", "%%41zurich"])
def test_a_search_text_with_a_broken_percent_escape_is_400(small, q):
    status, body = raw_get(small.url, f"/geocoding/lookup?q={q}")
    assert status == 400, body
    assert b'"parameter":"q"' in body and b"%25" in body


@pytest.mark.parametrize("q", ["zurich%20", "100%25", "z%C3%BCrich"])
def test_a_search_text_with_good_escapes_is_searched(small, q):
    status, body = raw_get(small.url, f"/geocoding/lookup?q={q}")
    assert status == 200, body


def test_a_refused_token_post_carries_no_cors_header(small):
    # CORS is open for GET only (decisions rule 10), refusals included: a browser page must
    # not read the token operation's errors either.
    refused = get(small.url + "/webcams/token", method="POST")
    assert refused.status == 403
    assert "Access-Control-Allow-Origin" not in refused.headers
    not_allowed = get(small.url + "/geocoding/countries", method="DELETE")
    assert not_allowed.status == 405
    assert "Access-Control-Allow-Origin" not in not_allowed.headers
    keyless = get(small.url + "/forecast/1,2")
    assert keyless.status == 403 and keyless.headers["Access-Control-Allow-Origin"] == "*"
