"""Requests refused for want of a valid key, token or image signature draw from a budget per
client address: 403 while it lasts, then 429; keyed and keyless traffic keep budgets of their
own."""

from __future__ import annotations

import pytest

from tests.support.procs import Server, add_key, get

KEYED = "/webcams?limit=1"
CLUSTERS = "/webcams/clusters?bbox=45.8,5.9,47.8,10.5&zoom=8"
FORGED_IMAGE = "/cdn/webcams/x/2026-01-31T12:00:00Z.svg?expires=9999999999&kid=k&sig=AAAA"
EMBED = "/webcams/embed/x"  # no token
HTML = {"Accept": "text/html"}  # a browser's iframe: the player's error page


@pytest.fixture(scope="module")
def strict(default_build, module_tmp):
    """A server over the default build whose default limit is 3 requests a minute."""
    keys = module_tmp("strict-keys") / "keys.json"
    key = add_key(keys, "alice")
    with Server(default_build, keys, WEATHERAPI_RATE_LIMIT_PER_MINUTE="3") as srv:
        srv.wait_ready()
        srv.key = key
        yield srv


def test_refused_keys_are_limited_per_address_and_valid_keys_are_not(strict):
    refused = [
        get(strict.url + FORGED_IMAGE),
        get(strict.url + EMBED, HTML),
        get(strict.url + KEYED, {"X-API-Key": "guess"}),
    ]
    assert refused[1].headers["Content-Type"].startswith("text/html")
    assert [r.status for r in refused] == [403, 403, 403]
    assert [r.headers["RateLimit-Remaining"] for r in refused] == ["2", "1", "0"]
    assert {r.headers["RateLimit-Limit"] for r in refused} == {"3"}
    assert all("Retry-After" not in r.headers for r in refused)
    for headers in ({"X-API-Key": "guess-4"}, {}):  # a wrong key, or none
        limited = get(strict.url + KEYED, headers)
        assert limited.status == 429 and int(limited.headers["Retry-After"]) >= 1
        assert limited.headers["RateLimit-Remaining"] == "0"
        assert limited.headers["Content-Type"].startswith("application/problem+json")
        assert "no valid API key, token or signature" in limited.json()["detail"]
    assert get(f"{strict.url}{CLUSTERS}&token=forged.k.1.e.m").status == 429  # a bad token
    assert get(strict.url + FORGED_IMAGE).status == 429  # a bad link
    page = get(strict.url + EMBED, HTML)
    assert page.status == 429 and page.headers["Content-Type"].startswith("text/html")
    assert "Retry-After" in page.headers
    # The same address with a valid key, or with none where none is needed: own budgets.
    keyed = get(strict.url + KEYED, {"X-API-Key": strict.key})
    assert keyed.status == 200 and keyed.headers["RateLimit-Remaining"] == "2"
    assert get(strict.url + "/geocoding/countries/CH").status == 200
