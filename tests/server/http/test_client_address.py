"""Whose budget a keyless request draws from behind a trusted proxy (X-Forwarded-For)."""

from __future__ import annotations

import http.client

import pytest

from tests.support.procs import Server

pytestmark = pytest.mark.slow  # servers


def status(url: str, forwarded: list[str]) -> int:
    """GET a limited keyless endpoint with these X-Forwarded-For lines, one header each."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest("GET", "/geocoding/countries")
        for line in forwarded:
            connection.putheader("X-Forwarded-For", line)
        connection.endheaders()
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


@pytest.fixture(scope="module")
def proxied(module_tmp):
    """A server behind a trusted proxy with a budget of 2 requests a minute per address
    (nothing is published, so answers within the budget are 503)."""
    with Server(
        module_tmp("xff") / "empty",
        None,
        WEATHERAPI_TRUST_FORWARDED_FOR="true",
        WEATHERAPI_RATE_LIMIT_PER_MINUTE="2",
    ) as srv:
        srv.wait_ready(status=503)  # loaded, nothing published
        yield srv


def test_a_line_the_proxy_adds_names_the_client_not_the_line_the_client_sent(proxied):
    # HAProxy's `option forwardfor` adds a header line of its own: the client's own line
    # before it must not give each request a fresh budget.
    replies = [status(proxied.url, [f"203.0.113.{i}", "198.51.100.1"]) for i in range(4)]
    assert replies == [503, 503, 429, 429]


def test_the_last_entry_of_one_line_names_the_client(proxied):
    replies = [status(proxied.url, [f"203.0.113.{i}, 198.51.100.2"]) for i in range(3)]
    assert replies == [503, 503, 429]


def test_an_empty_last_entry_is_not_a_budget_of_its_own(proxied):
    # "x, " has no address the proxy saw: the connection's address answers for it, so such
    # requests share the proxy's budget instead of one under the empty name, apart from it.
    replies = [status(proxied.url, ["198.51.100.3, "]) for _ in range(2)]
    replies += [status(proxied.url, [])]
    assert replies == [503, 503, 429]
