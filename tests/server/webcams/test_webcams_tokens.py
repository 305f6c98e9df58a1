"""Tokens and image signatures (docs/api/webcams.md#tokens, #signed-links), with an injected
clock."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from server.webcams.secrets import parse_secrets
from server.webcams.tokens import CLUSTERS, EMBED, PERIOD_S, TTL_S, Signer, TokenError


@pytest.fixture
def signer(clock) -> Signer:
    return Signer(parse_secrets("k2:second-secret-0123456789,k1:first-secret-0123456789"), clock)


def test_a_token_opens_what_it_was_issued_for_until_it_expires(signer, clock):
    token = signer.issue(EMBED, "cam-1", int(clock.now) + TTL_S)
    assert signer.verify(token, EMBED, "cam-1") == "cam-1"
    clock.now += TTL_S - 1
    assert signer.verify(token, EMBED, "cam-1") == "cam-1"
    clock.now += 1
    with pytest.raises(TokenError, match="expired"):
        signer.verify(token, EMBED, "cam-1")


def test_purpose_and_subject_mix_ups_are_refused(signer, clock):
    embed = signer.issue(EMBED, "cam-1", int(clock.now) + TTL_S)
    clusters = signer.issue(CLUSTERS, "tests", int(clock.now) + TTL_S)
    with pytest.raises(TokenError, match="issued for embed, not for clusters"):
        signer.verify(embed, CLUSTERS)
    with pytest.raises(TokenError, match="issued for clusters, not for embed"):
        signer.verify(clusters, EMBED, "tests")
    with pytest.raises(TokenError, match="another webcam"):
        signer.verify(embed, EMBED, "cam-2")
    assert signer.verify(clusters, CLUSTERS) == "tests"


def _swap(token: str, index: int, value: str) -> str:
    parts = token.split(".")
    parts[index] = value
    return ".".join(parts)


def _respell(last: str) -> str:
    """Another last base64url character of a 32-byte MAC with the same bits (the 2 spare bits
    differ), i.e. the same bytes to a lenient decoder."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return alphabet[alphabet.index(last) ^ 1]


@pytest.mark.parametrize(
    "tamper, reason",
    [
        (lambda t: _swap(t, 2, str(int(t.split(".")[2]) + 3600)), "signature is invalid"),
        (lambda t: _swap(t, 3, "Y2FtLTI"), "signature is invalid"),  # subject cam-2
        (lambda t: _swap(t, 0, "clusters"), "signature is invalid"),
        (lambda t: _swap(t, 1, "k1"), "signature is invalid"),  # other key
        (lambda t: _swap(t, 1, "k9"), "unknown or retired key"),
        (lambda t: t[:-2], "malformed|signature is invalid"),
        (lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"), "signature is invalid"),
        (lambda t: t + ".x", "malformed"),
        (lambda t: _swap(t, 2, "１２３"), "signature is invalid"),  # non-ASCII digits
        (lambda t: _swap(t, 2, "0" + t.split(".")[2]), "signature is invalid"),  # same instant
        (lambda t: t + "=", "signature is invalid"),  # padded mac
        (lambda t: _swap(t, 3, "Y2Ft!LTE"), "signature is invalid"),  # ignored junk
        (lambda t: t[:-1] + _respell(t[-1]), "signature is invalid"),  # same mac bits
        (lambda t: _swap(t, 3, "%%%"), "malformed|signature is invalid"),
        (lambda t: "", "malformed"),
        (lambda t: "x" * 600, "malformed"),
    ],
)
def test_tampered_or_malformed_tokens_are_refused(signer, clock, tamper, reason):
    token = signer.issue(EMBED, "cam-1", int(clock.now) + TTL_S)
    with pytest.raises(TokenError, match=reason):
        signer.verify(tamper(token), EMBED, "cam-1")


def test_rotation_keeps_old_tokens_valid_until_they_expire(clock):
    old = Signer(parse_secrets("k1:first-secret-0123456789"), clock)
    token = old.issue(EMBED, "cam-1", int(clock.now) + TTL_S)
    kid, sig = old.image_signature("cam-1", int(clock.now) + TTL_S)
    rotated = Signer(parse_secrets("k2:second-secret-0123456789,k1:first-secret-0123456789"), clock)
    assert rotated.verify(token, EMBED, "cam-1") == "cam-1"
    rotated.verify_image("cam-1", str(int(clock.now) + TTL_S), kid, sig)
    assert rotated.issue(EMBED, "cam-1", int(clock.now) + TTL_S).split(".")[1] == "k2"
    retired = Signer(parse_secrets("k2:second-secret-0123456789"), clock)
    with pytest.raises(TokenError, match="retired"):
        retired.verify(token, EMBED, "cam-1")


def test_image_signatures(signer, clock):
    expires = signer.link_expiry()
    assert TTL_S < expires - clock.now <= TTL_S + PERIOD_S and expires % PERIOD_S == 0
    kid, sig = signer.image_signature("cam-1", expires)
    signer.verify_image("cam-1", str(expires), kid, sig)
    for webcam, when, key, mac, reason in [
        ("cam-2", str(expires), kid, sig, "invalid"),
        ("cam-1", str(expires + 1), kid, sig, "invalid"),
        ("cam-1", str(expires), "k9", sig, "unknown key"),
        ("cam-1", "soon", kid, sig, "invalid"),
        ("cam-1", "0" + str(expires), kid, sig, "invalid"),
        ("cam-1", str(expires), kid, sig[:-1] + "!", "invalid"),
        ("cam-1", str(expires), kid, sig + "=", "invalid"),
        ("cam-1", str(expires), kid, sig[:-1] + _respell(sig[-1]), "invalid"),
        ("cam-1", str(expires), kid, "", "invalid"),
    ]:
        with pytest.raises(TokenError, match=reason):
            signer.verify_image(webcam, when, key, mac)
    clock.now = expires
    with pytest.raises(TokenError, match="expired"):
        signer.verify_image("cam-1", str(expires), kid, sig)


@pytest.mark.parametrize(
    "text", ["", "k1", "k1:short", "bad id:0123456789abcdef", "k1:0123456789abcdef,k2"]
)
def test_bad_secret_settings_are_refused(text):
    with pytest.raises(ValueError):
        parse_secrets(text)


def test_links_and_tokens_are_signed_with_derived_keys_not_the_master(signer, clock):
    expires = int(clock.now) + TTL_S
    master = Signer(parse_secrets("k2:second-secret-0123456789"), clock)
    token = signer.issue(CLUSTERS, "subject", expires)
    mac = (
        base64.urlsafe_b64encode(
            hmac.new(
                b"second-secret-0123456789",
                f"clusters\0subject\0{expires}".encode(),
                hashlib.sha256,
            ).digest()
        )
        .rstrip(b"=")
        .decode()
    )
    assert token.split(".")[4] != mac  # the master itself signs nothing
    assert signer.secrets.image_keys["k2"] != signer.secrets.token_keys["k2"]
    assert master.verify(token, CLUSTERS) == "subject"  # same master, same derived keys


def test_object_key_links_cover_the_key(signer, clock):
    expires = int(clock.now) + TTL_S
    kid, sig = signer.object_signature("cam-1", expires, "keys/cam-1/a.jpg")
    signer.verify_image("cam-1", str(expires), kid, sig, "keys/cam-1/a.jpg")
    for webcam, key in [
        ("cam-1", "keys/cam-1/b.jpg"),
        ("cam-2", "keys/cam-1/a.jpg"),
        ("cam-1", ""),
    ]:
        with pytest.raises(TokenError, match="invalid"):
            signer.verify_image(webcam, str(expires), kid, sig, key)
