"""Signed, expiring tokens and image signatures (decisions rules 6 and 41).

Stateless: HMAC-SHA256 over (purpose, subject, expiry) with the secret named by a key id that
travels in the token, so the signing secret can be rotated while tokens signed with an older
one stay valid until they expire. Secrets come from WEATHERAPI_SIGNING_SECRETS
("kid:secret,kid:secret", the first signs) or from a secrets file that every worker process
shares, created once (mode 0600) when missing, so tokens verify on every worker and across
restarts. The file is re-read when it changes (rotation without a restart).

A token is `purpose.kid.expires.subject.mac` (subject and mac base64url); an image URL carries
`expires`, `kid` and `sig` parameters, `sig` covering the webcam and the expiry, so one
signature serves all of a webcam's images for a period.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Callable, Mapping

from aiohttp import web

TTL_S = 3600
# Links inside responses expire at the end of the current period plus TTL_S: valid at least
# TTL_S, and identical (so cacheable) within a period.
PERIOD_S = 300
CLUSTERS, EMBED, IMAGE = "clusters", "embed", "image"
PURPOSES = (CLUSTERS, EMBED)
KID = re.compile(r"[A-Za-z0-9_-]{1,32}")
EXPIRES = re.compile(r"[0-9]{1,12}")
MIN_SECRET_CHARS = 16
SECRETS_FILE = "signing-secrets.json"
_MAX_CACHED = 200_000


class TokenError(Exception):
    """A token or signature that does not open what was asked; the message is user-safe."""


@dataclass(frozen=True)
class Secrets:
    """Signing secrets by key id; `current` signs, all verify."""

    current: str
    keys: Mapping[str, bytes]


def parse_secrets(text: str) -> Secrets:
    """Secrets from "kid:secret,kid:secret" (the first one signs)."""
    keys: dict[str, bytes] = {}
    for item in (part.strip() for part in text.split(",")):
        kid, sep, secret = item.partition(":")
        if not sep or not KID.fullmatch(kid) or len(secret) < MIN_SECRET_CHARS:
            raise ValueError("signing secrets must be kid:secret pairs separated by commas, "
                             f"ids of 1-32 letters, digits, - or _, secrets of at least "
                             f"{MIN_SECRET_CHARS} characters")
        keys[kid] = secret.encode()
    if not keys:
        raise ValueError("no signing secret given")
    return Secrets(next(iter(keys)), keys)


def read_secrets_file(path: Path) -> Secrets:
    """{"current": kid, "secrets": {kid: secret}} from a secrets file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    pairs = [f"{data['current']}:{data['secrets'][data['current']]}"]
    pairs += [f"{k}:{v}" for k, v in data["secrets"].items() if k != data["current"]]
    return parse_secrets(",".join(pairs))


def ensure_secrets_file(path: Path) -> Secrets:
    """Read the secrets file, creating it with one random secret if missing. Creation is
    atomic (a complete file is linked into place), so concurrent workers agree on one."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(new_secrets_data({}), handle, indent=2)
            handle.write("\n")
        try:
            os.link(tmp, path)        # fails if another process created it first
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return read_secrets_file(path)


def new_secrets_data(data: dict, keep: int = 2) -> dict:
    """`data` with a new random secret made current; the `keep` newest other secrets stay
    (tokens they signed remain valid until they expire)."""
    kid = "k" + time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
    older = list(data.get("secrets", {}).items())
    if data.get("current"):
        older.sort(key=lambda kv: kv[0] != data["current"])   # the current one first
    return {"current": kid, "secrets": {kid: secrets.token_urlsafe(32), **dict(older[:keep])}}


def rotate_secrets_file(path: Path, keep: int = 2) -> str:
    """Make a new secret current in `path` (created if missing); returns its key id."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data = new_secrets_data(data, keep)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)
    return data["current"]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, purpose: str, subject: str, expires: int) -> bytes:
    message = f"{purpose}\x00{subject}\x00{expires}".encode()
    return hmac.new(secret, message, sha256).digest()


@dataclass
class Signer:
    """Issues and verifies tokens and image signatures with the configured secrets."""

    secrets: Secrets
    clock: Callable[[], float] = time.time
    source: Path | None = None           # the secrets file to follow, if any
    _stamp: tuple[int, int] | None = None
    _image_sigs: dict[tuple[str, int, str], str] = field(default_factory=dict)

    def refresh(self) -> None:
        """Re-read the secrets file if it changed (keeps the old secrets if it is broken)."""
        if self.source is None:
            return
        stat = self.source.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            self.secrets = read_secrets_file(self.source)
            self._stamp = stamp
            self._image_sigs = {}

    def now(self) -> int:
        """The clock, whole seconds."""
        return int(self.clock())

    def link_expiry(self, now: int | None = None) -> int:
        """Expiry for links in a response: the end of the current period plus TTL_S."""
        now = self.now() if now is None else now
        return (now // PERIOD_S + 1) * PERIOD_S + TTL_S

    def issue(self, purpose: str, subject: str, expires: int) -> str:
        """A token for `purpose` and `subject`, valid until `expires` (unix seconds)."""
        kid = self.secrets.current
        mac = _mac(self.secrets.keys[kid], purpose, subject, expires)
        return f"{purpose}.{kid}.{expires}.{_b64(subject.encode())}.{_b64(mac)}"

    def verify(self, token: str, purpose: str, subject: str | None = None) -> str:
        """The token's subject if it is genuine, unexpired, for `purpose` and (when given) for
        `subject`; else TokenError saying why."""
        parts = token.split(".")
        if len(token) > 512 or len(parts) != 5 or not EXPIRES.fullmatch(parts[2]):
            raise TokenError("the token is malformed")
        claimed, kid, expires_text, subject_b64, mac_b64 = parts
        secret = self.secrets.keys.get(kid)
        if secret is None:
            raise TokenError("the token was signed with an unknown or retired key")
        try:
            claimed_subject = _unb64(subject_b64).decode()
            mac = _unb64(mac_b64)
        except (binascii.Error, ValueError):
            raise TokenError("the token is malformed") from None
        expected = _mac(secret, claimed, claimed_subject, int(expires_text))
        if not hmac.compare_digest(mac, expected):
            raise TokenError("the token's signature is invalid (tampered or truncated)")
        if claimed != purpose:
            raise TokenError(f"the token was issued for {claimed}, not for {purpose}")
        if subject is not None and not hmac.compare_digest(claimed_subject.encode(),
                                                           subject.encode()):
            raise TokenError("the token was issued for another webcam")
        if int(expires_text) <= self.now():
            raise TokenError("the token has expired; request a new one")
        return claimed_subject

    def image_signature(self, webcam: str, expires: int) -> tuple[str, str]:
        """(kid, sig) for a webcam's image links expiring at `expires` (cached: one HMAC per
        webcam and period)."""
        kid = self.secrets.current
        cache_key = (webcam, expires, kid)
        sig = self._image_sigs.get(cache_key)
        if sig is None:
            if len(self._image_sigs) >= _MAX_CACHED:
                self._image_sigs = {}
            sig = _b64(_mac(self.secrets.keys[kid], IMAGE, webcam, expires))
            self._image_sigs[cache_key] = sig
        return kid, sig

    def verify_image(self, webcam: str, expires: str, kid: str, sig: str) -> None:
        """Raise TokenError unless (kid, sig) signs `webcam` until `expires`, still valid."""
        secret = self.secrets.keys.get(kid)
        if not EXPIRES.fullmatch(expires) or secret is None or len(sig) > 64:
            raise TokenError("the image link is malformed or signed with an unknown key")
        try:
            mac = _unb64(sig)
        except (binascii.Error, ValueError):
            raise TokenError("the image link's signature is malformed") from None
        if not hmac.compare_digest(mac, _mac(secret, IMAGE, webcam, int(expires))):
            raise TokenError("the image link's signature is invalid")
        if int(expires) <= self.now():
            raise TokenError("the image link has expired")


SIGNER = web.AppKey("signer", Signer)
