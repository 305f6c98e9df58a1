"""Signed, expiring tokens and image signatures (docs/api/webcams.md#tokens, #signed-links).

Stateless: HMAC-SHA256 over (purpose, subject, expiry) with the secret named by a key id that
travels in the token, so the signing secret can be rotated while tokens signed with an older
one stay valid until they expire. The secrets, and the keys derived from them per purpose,
come from secrets.

A token is `purpose.kid.expires.subject.mac` (subject and mac base64url); an image URL carries
`expires`, `kid` and `sig` parameters. On the built-in image host `sig` covers the webcam and
the expiry, so one signature serves all of a webcam's images for a period (the host only serves
that webcam's own snapshots under its path). For an object key on a CDN it covers the object key
too: a leaked link cannot be rewritten to another object.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from server.security.private_file import Followed
from server.webcams.secrets import Secrets, parse_file, read_private

TTL_S = 3600
# Links inside responses expire at the end of the current period plus TTL_S: valid at least
# TTL_S, and identical (so cacheable) within a period.
PERIOD_S = 300
CLUSTERS, EMBED, IMAGE = "clusters", "embed", "image"
PURPOSES = (CLUSTERS, EMBED)
EXPIRES = re.compile(r"[1-9][0-9]{0,11}")  # one spelling per instant: no leading zeros
B64 = re.compile(r"[A-Za-z0-9_-]+")
_MAX_CACHED = 200_000


class TokenError(Exception):
    """A token or signature that does not open what was asked; the message is user-safe."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Bytes of canonical unpadded base64url (ValueError otherwise: one spelling per value, so
    a signed value cannot be re-spelled into a new URL)."""
    if not B64.fullmatch(text):
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def _mac(secret: bytes, purpose: str, subject: str, expires: int, extra: str = "") -> bytes:
    message = f"{purpose}\x00{subject}\x00{expires}"
    if extra:
        message += f"\x00{extra}"
    return hmac.digest(secret, message.encode(), "sha256")


@dataclass
class Signer:
    """Issues and verifies tokens and image signatures with the configured secrets."""

    secrets: Secrets
    clock: Callable[[], float] = time.time
    source: Path | None = None  # the secrets file to follow, if any
    _image_sigs: dict[tuple[str, int, str], str] = field(default_factory=dict)
    _file: Followed | None = None

    def __post_init__(self):
        if self.source is not None:
            self._file = Followed(self.source)

    def refresh(self) -> None:
        """Re-read the secrets file if it changed. When it cannot be loaded the old secrets
        stay and the error is raised once (see Followed)."""
        if self._file is None:
            return
        state = self._file.due()
        if state is None:
            return
        try:
            text, loaded = read_private(self.source)
            secrets = parse_file(text, self.source)
        except (OSError, ValueError) as exc:
            if self._file.failure(exc, state):
                raise
            return
        self.secrets, self._image_sigs = secrets, {}
        self._file.loaded(loaded)

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
        mac = _mac(self.secrets.token_keys[kid], purpose, subject, expires)
        return f"{purpose}.{kid}.{expires}.{_b64(subject.encode())}.{_b64(mac)}"

    def verify(self, token: str, purpose: str, subject: str | None = None) -> str:
        """The token's subject if it is genuine, unexpired, for `purpose` and (when given) for
        `subject`; else TokenError saying why."""
        parts = token.split(".")
        if len(token) > 512 or len(parts) != 5:
            raise TokenError("the token is malformed")
        claimed, kid, expires_text, subject_b64, mac_b64 = parts
        secret = self.secrets.token_keys.get(kid)
        if secret is None:
            raise TokenError("the token was signed with an unknown or retired key")
        bad = TokenError("the token's signature is invalid (tampered or truncated)")
        if not EXPIRES.fullmatch(expires_text):
            raise bad  # a re-spelled expiry is refused like a forged one
        try:
            claimed_subject = _unb64(subject_b64).decode()
            mac = _unb64(mac_b64)
        except (binascii.Error, ValueError):
            raise bad from None
        expected = _mac(secret, claimed, claimed_subject, int(expires_text))
        if not hmac.compare_digest(mac, expected):
            raise bad
        if claimed != purpose:
            raise TokenError(f"the token was issued for {claimed}, not for {purpose}")
        if subject is not None and not hmac.compare_digest(
            claimed_subject.encode(), subject.encode()
        ):
            raise TokenError("the token was issued for another webcam")
        if int(expires_text) <= self.now():
            raise TokenError("the token has expired; request a new one")
        return claimed_subject

    def image_signature(self, webcam: str, expires: int) -> tuple[str, str]:
        """(kid, sig) for a webcam's links on the built-in image host expiring at `expires`
        (cached: one HMAC per webcam and period)."""
        kid = self.secrets.current
        cache_key = (webcam, expires, kid)
        sig = self._image_sigs.get(cache_key)
        if sig is None:
            if len(self._image_sigs) >= _MAX_CACHED:
                self._image_sigs = {}
            sig = _b64(_mac(self.secrets.image_keys[kid], IMAGE, webcam, expires))
            self._image_sigs[cache_key] = sig
        return kid, sig

    def object_signature(self, webcam: str, expires: int, object_key: str) -> tuple[str, str]:
        """(kid, sig) for the link to one object key on a CDN (covers the key itself)."""
        kid = self.secrets.current
        return kid, _b64(_mac(self.secrets.image_keys[kid], IMAGE, webcam, expires, object_key))

    def verify_image(
        self, webcam: str, expires: str, kid: str, sig: str, object_key: str = ""
    ) -> None:
        """Raise TokenError unless (kid, sig) signs `webcam` (and `object_key`, for a CDN
        object) until `expires`, still valid."""
        secret = self.secrets.image_keys.get(kid)
        if secret is None or len(sig) > 64:
            raise TokenError("the image link is malformed or signed with an unknown key")
        bad = TokenError("the image link's signature is invalid")
        if not EXPIRES.fullmatch(expires):
            raise bad  # a re-spelled expiry is refused like a forged one
        try:
            mac = _unb64(sig)
        except (binascii.Error, ValueError):
            raise bad from None
        if not hmac.compare_digest(mac, _mac(secret, IMAGE, webcam, int(expires), object_key)):
            raise bad
        if int(expires) <= self.now():
            raise TokenError("the image link has expired")


SIGNER = web.AppKey("signer", Signer)
