"""Webcam security findings: tokens answer to their key (its budget, its revocation), the
signing secrets file is trusted only when private, links resist rewriting, Host is checked."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from server.security.keys import load_keys, token_subject
from server.webcams.secrets import read_secrets_file
from tests.support.procs import Server, add_key, get

CLUSTERS_URL = "/webcams/clusters?bbox=45,5,48,11&zoom=5"


@pytest.fixture(scope="module")
def own(default_build, module_tmp):
    """A server over the default build with keys of its own (one with a budget of 3 a minute,
    one to be removed while the server runs)."""
    keys = module_tmp("own-keys") / "keys.json"
    names = {
        "alpha": add_key(keys, "alpha"),
        "tiny": add_key(keys, "tiny", rate_limit=3),
        "gone": add_key(keys, "gone"),
    }
    with Server(default_build, keys) as srv:
        srv.wait_ready()
        srv.keys, srv.keys_file = names, keys
        yield srv


def _token(srv, name: str) -> str:
    reply = get(f"{srv.url}/webcams/token", {"X-API-Key": srv.keys[name]}, method="POST")
    assert reply.status == 200, reply.body
    return reply.json()["token"]


def test_tokens_have_a_budget_of_their_keys_size_apart_from_the_keys_own(own):
    token = _token(own, "tiny")  # the first of the key's own 3
    replies = [get(f"{own.url}{CLUSTERS_URL}&token={token}") for _ in range(4)]
    assert [r.status for r in replies] == [200, 200, 200, 429]
    assert [r.headers["RateLimit-Remaining"] for r in replies[:3]] == ["2", "1", "0"]
    assert {r.headers["RateLimit-Limit"] for r in replies} == {"3"}
    # Visitors who used up the token budget leave the key's server-side calls their own.
    keyed = get(f"{own.url}{CLUSTERS_URL}", {"X-API-Key": own.keys["tiny"]})
    assert keyed.status == 200 and keyed.headers["RateLimit-Remaining"] == "1"
    assert get(f"{own.url}{CLUSTERS_URL}&token={_token(own, 'tiny')}").status == 429


def test_a_token_names_its_key_by_a_keyed_subject(own):
    token = _token(own, "alpha")
    _, kid, _, subject_b64, _ = token.split(".")
    subject = base64.urlsafe_b64decode(subject_b64 + "=" * (-len(subject_b64) % 4)).decode()
    assert "alpha" not in token and "alpha" not in subject
    key = next(k for k in load_keys(own.keys_file) if k.name == "alpha")
    # Not a function of the key alone (that would let a browser test guesses of a weak key
    # offline) but of the server's signing secret too.
    unkeyed = hashlib.blake2b(key.sha256, digest_size=12, person=b"token-subject").hexdigest()
    assert subject != unkeyed and key.sha256.hex() not in subject
    secrets = read_secrets_file(own.keys_file.parent / "signing-secrets.json")
    assert subject == token_subject(key, secrets.subject_keys[kid])


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
    # Replaced at once, as `keys add` does: rewritten in place, the server could read it
    # empty (no keys) between the truncation and the write, and refuse every key for a while.
    staged = own.keys_file.with_name("keys.json.new")
    staged.write_text(json.dumps(data))
    staged.chmod(0o600)
    os.replace(staged, own.keys_file)
    deadline = time.monotonic() + 30  # the server re-reads the keys file when it changes
    while (
        get(f"{own.url}/webcams/token", {"X-API-Key": own.keys["gone"]}, method="POST").status
        != 403
    ):
        assert time.monotonic() < deadline, "the keys file was not re-read"
        time.sleep(0.05)
    reply = get(f"{own.url}{CLUSTERS_URL}&token={token}")
    assert reply.status == 403 and "revoked" in reply.json()["detail"]
    # a credential sent must be valid: beside a valid key, the dead token is refused too
    reply = get(f"{own.url}{CLUSTERS_URL}&token={token}", {"X-API-Key": own.keys["alpha"]})
    assert reply.status == 403 and "revoked" in reply.json()["detail"]
    assert get(f"{own.url}{CLUSTERS_URL}", {"X-API-Key": own.keys["alpha"]}).status == 200


def test_an_invalid_token_is_refused_even_with_a_valid_key(own):
    key = {"X-API-Key": own.keys["alpha"]}
    token = _token(own, "alpha")
    for bad in ("garbage", token[:-3] + "abc", token.replace("clusters.", "embed.", 1)):
        reply = get(f"{own.url}{CLUSTERS_URL}&token={bad}", key)
        assert reply.status == 403, bad
        assert reply.headers["Content-Type"].startswith("application/problem+json")
        reply = get(f"{own.url}{CLUSTERS_URL}&token={bad}&api_key={own.keys['alpha']}")
        assert reply.status == 403, bad
    assert get(f"{own.url}{CLUSTERS_URL}&token={token}", key).status == 200


@pytest.mark.parametrize(
    "host",
    [
        "evil.example/x?",
        "a b",
        "evil.example:99999x",
        'ex"ample.org',
        "[::1",
        "-bad.example",
        "cams.example:65536",
        "cams.example:99999",
        "[::1]:70000",
    ],
)
def test_a_malformed_host_is_a_400_not_a_link(own, host):
    reply = get(f"{own.url}/webcams?limit=1", {"X-API-Key": own.keys["alpha"], "Host": host})
    assert reply.status == 400, host
    assert reply.json()["errors"][0]["parameter"] == "Host"


def test_links_follow_each_host_without_mixing_cached_renderings(own):
    key = {"X-API-Key": own.keys["alpha"]}
    first = get(f"{own.url}/webcams?limit=3", key).json()["results"]
    public_id = first[0]["public_id"]
    for host in (
        "cams.example.org",
        "[::1]:8443",
        "other.example:8080",
        "weather_api:8080",
        "_svc.cams.example:65535",
    ):
        listed = get(f"{own.url}/webcams?limit=3", {**key, "Host": host}).json()["results"]
        detail = get(f"{own.url}/webcams/{public_id}", {**key, "Host": host}).json()
        assert all(c["image"]["current"].startswith(f"http://{host}/cdn/") for c in listed)
        assert detail["player"]["embed"].startswith(f"http://{host}/webcams/embed/")
    again = get(f"{own.url}/webcams?limit=3", key).json()["results"]
    assert [c["image"]["current"] for c in again] == [c["image"]["current"] for c in first]
    assert again[0]["image"]["current"].startswith(own.url + "/cdn/")


def _respell(b64: str) -> str:
    """The same 32-byte MAC spelt differently: the last character's 2 spare bits flipped."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return b64[:-1] + alphabet[alphabet.index(b64[-1]) ^ 1]


def test_a_re_spelled_token_is_refused_like_a_forged_one(own):
    token = _token(own, "alpha")
    purpose, kid, expires, subject, mac = token.split(".")
    assert get(f"{own.url}{CLUSTERS_URL}&token={token}").status == 200
    for other in (
        f"{purpose}.{kid}.0{expires}.{subject}.{mac}",
        f"{purpose}.{kid}.{expires}.{subject}.{mac}=",
        f"{purpose}.{kid}.{expires}.{subject[:2]}!{subject[2:]}.{mac}",
        f"{purpose}.{kid}.{expires}.{subject}.{_respell(mac)}",
    ):
        reply = get(f"{own.url}{CLUSTERS_URL}&token={other}")
        assert reply.status == 403, other
        assert "signature is invalid" in reply.json()["detail"], other


def test_a_re_spelled_image_link_is_refused_like_a_forged_one(own):
    listed = get(f"{own.url}/webcams?limit=1", {"X-API-Key": own.keys["alpha"]}).json()
    link = urlsplit(listed["results"][0]["image"]["current"])
    query = {k: v[0] for k, v in parse_qs(link.query).items()}
    base = f"{own.url}{link.path}?"
    assert get(base + urlencode(query)).status == 200
    for change in (
        {"expires": "0" + query["expires"]},
        {"sig": query["sig"] + "="},
        {"sig": query["sig"][:3] + "!" + query["sig"][3:]},
        {"sig": _respell(query["sig"])},
    ):
        reply = get(base + urlencode({**query, **change}))
        assert reply.status == 403, change
        assert "signature is invalid" in reply.json()["detail"], change
        assert "X-Data-Version" not in reply.headers  # a refusal that rests on no data


def _vary(reply) -> set[str]:
    return {v.strip() for v in reply.headers.get("Vary", "").split(",") if v.strip()}


def test_answers_with_links_from_the_host_vary_on_it(own):
    key = {"X-API-Key": own.keys["alpha"]}
    listed = get(f"{own.url}/webcams?limit=1", key)
    public_id = listed.json()["results"][0]["public_id"]
    detail = get(f"{own.url}/webcams/{public_id}", key)
    replies = {
        "list": listed,
        "detail": detail,
        "snapshots": get(f"{own.url}/webcams/{public_id}/snapshots", key),
        "clusters by token": get(f"{own.url}{CLUSTERS_URL}&token={_token(own, 'alpha')}"),
        "embed page": get(detail.json()["player"]["embed"]),
        "not modified": get(
            f"{own.url}/webcams/{public_id}", {**key, "If-None-Match": detail.headers["ETag"]}
        ),
    }
    for name, reply in replies.items():
        assert reply.status == (304 if name == "not modified" else 200), name
        assert "Host" in _vary(reply), name
    assert {"Host", "X-API-Key"} <= _vary(replies["not modified"])
    assert "X-API-Key" not in _vary(replies["clusters by token"])
    assert "Host" not in _vary(get(f"{own.url}/geocoding/countries/CH"))


def test_answers_with_links_from_the_host_are_tagged_by_it(own):
    # Another Host's answer has other links: its tag must not make this one "not modified".
    key = {"X-API-Key": own.keys["alpha"]}
    path = f"/webcams/{get(f'{own.url}/webcams?limit=1', key).json()['results'][0]['public_id']}"
    first = get(own.url + path, {**key, "Host": "a.example"})
    second = get(own.url + path, {**key, "Host": "b.example"})
    assert first.json()["image"]["current"].startswith("http://a.example/")
    assert first.headers["ETag"] != second.headers["ETag"]
    again = get(
        own.url + path, {**key, "Host": "b.example", "If-None-Match": first.headers["ETag"]}
    )
    assert again.status == 200 and again.headers["ETag"] == second.headers["ETag"]
    same = get(own.url + path, {**key, "Host": "a.example", "If-None-Match": first.headers["ETag"]})
    assert same.status == 304


@pytest.mark.slow
@pytest.mark.parametrize(
    "host, env, warned",
    [
        ("0.0.0.0", {}, True),
        ("127.0.0.1", {}, False),
        ("localhost", {}, False),
        ("0.0.0.0", {"WEATHERAPI_BASE_URL": "https://api.example.org"}, False),
    ],
)
def test_listening_beyond_loopback_without_a_base_url_is_warned_about(tmp_path, host, env, warned):
    with Server(tmp_path / "no-build", None, "--host", host, **env) as srv:
        pass
    warnings = [
        line
        for line in srv.log.splitlines()
        if " WARNING " in line and "WEATHERAPI_BASE_URL" in line
    ]
    assert len(warnings) == int(warned), srv.log
