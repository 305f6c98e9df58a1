"""Rate limits shared through Redis: one budget per key across worker processes
(docs/operations/configuration.md#redis)."""

from __future__ import annotations

import pytest

from tests.support.procs import Server, add_key, get
from tests.support.redis import redis_server


@pytest.fixture(scope="module")
def redis_url(module_tmp):
    """A real redis-server on a Unix socket in a temporary directory."""
    with redis_server(module_tmp("redis")) as url:
        yield url


def test_workers_share_one_budget_per_key(default_build, tmp_path, redis_url):
    keys = tmp_path / "keys.json"
    key = add_key(keys, "shared", rate_limit=4)
    site = add_key(keys, "site", rate_limit=2)
    with Server(
        default_build, keys, "--workers", "2", WEATHERAPI_RATE_LIMIT_REDIS_URL=redis_url
    ) as srv:
        srv.wait_ready()
        # Each request on a new connection: SO_REUSEPORT spreads them over both workers (all
        # ten on one worker has a chance of 2 in 1024), each of which alone would allow four.
        replies = [get(srv.url + "/geocoding/countries/CH", {"X-API-Key": key}) for _ in range(10)]
        # A key's tokens share one budget of the key's size, apart from the key's own.
        token = get(srv.url + "/webcams/token", {"X-API-Key": site}, method="POST").json()
        clusters = f"{srv.url}/webcams/clusters?bbox=45,5,48,11&zoom=5&token={token['token']}"
        by_token = [get(clusters).status for _ in range(3)]
        by_key = get(srv.url + "/geocoding/countries/CH", {"X-API-Key": site})
    assert by_token == [200, 200, 429]
    assert by_key.status == 200 and by_key.headers["RateLimit-Remaining"] == "0"
    statuses = [r.status for r in replies]
    assert statuses.count(200) == 4 and statuses[:4] == [200] * 4, statuses
    assert {r.status for r in replies[4:]} == {429}
    assert [r.headers["RateLimit-Remaining"] for r in replies[:4]] == ["3", "2", "1", "0"]
    assert all(int(r.headers["Retry-After"]) >= 1 for r in replies[4:])
    pids = set()  # both workers were up
    for line in srv.log.splitlines():
        if "serving" in line:
            pids.add(line.split()[2])
    assert len(pids) == 2, srv.log[-2000:]


def test_unreachable_store_lets_requests_through(default_build, tmp_path):
    with Server(
        default_build, None, WEATHERAPI_RATE_LIMIT_REDIS_URL=f"unix://{tmp_path}/nobody.sock"
    ) as srv:
        srv.wait_ready()
        replies = [get(srv.url + "/geocoding/countries/CH") for _ in range(3)]
    assert [r.status for r in replies] == [200, 200, 200]
    assert "rate limit store unreachable" in srv.log


def test_workers_share_one_budget_of_refusals_per_address(default_build, tmp_path, redis_url):
    keys = tmp_path / "keys.json"
    key = add_key(keys, "valid")
    with Server(
        default_build,
        keys,
        "--workers",
        "2",
        WEATHERAPI_RATE_LIMIT_PER_MINUTE="3",
        WEATHERAPI_RATE_LIMIT_REDIS_URL=redis_url,
    ) as srv:
        srv.wait_ready()
        # New connections spread over both workers; each alone would refuse three with 403.
        refused = [get(srv.url + "/webcams?limit=1", {"X-API-Key": f"guess-{n}"}) for n in range(8)]
        keyed = get(srv.url + "/webcams?limit=1", {"X-API-Key": key})
    assert [r.status for r in refused] == [403] * 3 + [429] * 5
    assert all(int(r.headers["Retry-After"]) >= 1 for r in refused[3:])
    assert keyed.status == 200
