"""Webcam security findings: tokens answer to their key (its budget, its revocation), the
signing secrets file is trusted only when private, links resist rewriting, Host is checked."""

from __future__ import annotations

import json
import time

import pytest

from server.keys import load_keys, token_subject
from tests.support.procs import Server, add_key, get

CLUSTERS_URL = "/webcams/clusters?bbox=45,5,48,11&zoom=5"


@pytest.fixture(scope="module")
def own(default_build, tmp_path_factory):
    """A server over the default build with keys of its own (one with a budget of 3 a minute,
    one to be removed while the server runs)."""
    keys = tmp_path_factory.mktemp("own-keys") / "keys.json"
    names = {"alpha": add_key(keys, "alpha"), "tiny": add_key(keys, "tiny", rate_limit=3),
             "gone": add_key(keys, "gone")}
    with Server(default_build, keys) as srv:
        srv.wait_ready()
        srv.keys, srv.keys_file = names, keys
        yield srv


def _token(srv, name: str) -> str:
    reply = get(f"{srv.url}/webcams/token", {"X-API-Key": srv.keys[name]}, method="POST")
    assert reply.status == 200, reply.body
    return reply.json()["token"]


def test_a_token_counts_against_its_keys_own_budget(own):
    token = _token(own, "tiny")                     # the first of the key's 3
    statuses = []
    for _ in range(4):
        reply = get(f"{own.url}{CLUSTERS_URL}&token={token}")
        statuses.append(reply.status)
        assert reply.headers["RateLimit-Limit"] == "3"
    assert statuses[:2] == [200, 200] and statuses[-1] == 429


def test_a_token_does_not_reveal_its_keys_name(own):
    token = _token(own, "alpha")
    subject = token.split(".")[3]
    assert "alpha" not in token and b"alpha" not in subject.encode()
    key = next(k for k in load_keys(own.keys_file) if k.name == "alpha")
    import base64
    assert base64.urlsafe_b64decode(subject + "=" * (-len(subject) % 4)).decode() \
        == token_subject(key)


def test_an_invalid_key_is_refused_even_with_a_valid_token(own):
    token = _token(own, "alpha")
    reply = get(f"{own.url}{CLUSTERS_URL}&token={token}&api_key=not-a-key")
    assert reply.status == 403 and "API key" in reply.json()["detail"]
    reply = get(f"{own.url}{CLUSTERS_URL}&token={token}", {"X-API-Key": "not-a-key"})
    assert reply.status == 403
    assert get(f"{own.url}{CLUSTERS_URL}&token={token}").status == 200


def test_a_token_of_a_removed_key_is_refused(own):
    token = _token(own, "gone")
    assert get(f"{own.url}{CLUSTERS_URL}&token={token}").status == 200
    data = json.loads(own.keys_file.read_text())
    data["keys"] = [k for k in data["keys"] if k["name"] != "gone"]
    own.keys_file.write_text(json.dumps(data))
    deadline = time.monotonic() + 30      # the server re-reads the keys file when it changes
    while get(f"{own.url}/webcams/token", {"X-API-Key": own.keys["gone"]},
              method="POST").status != 403:
        assert time.monotonic() < deadline, "the keys file was not re-read"
        time.sleep(0.05)
    reply = get(f"{own.url}{CLUSTERS_URL}&token={token}")
    assert reply.status == 403 and "revoked" in reply.json()["detail"]
