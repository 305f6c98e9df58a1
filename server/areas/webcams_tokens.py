"""Signed, expiring tokens and image signatures (decisions rules 6 and 41).

Stateless: HMAC-SHA256 over (purpose, subject, expiry) with the secret named by a key id that
travels in the token, so the signing secret can be rotated while tokens signed with an older
one stay valid until they expire. Secrets come from WEATHERAPI_SIGNING_SECRETS
("kid:secret,kid:secret", the first signs) or from a secrets file that every worker process
shares, created once (mode 0600) when missing, so tokens verify on every worker and across
restarts. The file is re-read when it changes (rotation without a restart). It is trusted
only as a regular file owned by the server's user with no group or other permissions: the
server refuses to start otherwise (like ssh with a private key).

Each secret is a master: tokens and image links are signed with keys derived from it per
purpose (HMAC-SHA256(master, label)), so the image key can be handed to a CDN to verify links
without giving it the power to mint tokens (`python -m server secrets image-keys`).

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
import json
import os
import re
import secrets
import stat
import tempfile
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
EXPIRES = re.compile(r"[1-9][0-9]{0,11}")           # one spelling per instant: no leading zeros
B64 = re.compile(r"[A-Za-z0-9_-]+")
MIN_SECRET_CHARS = 16
_MAX_CACHED = 200_000


class TokenError(Exception):
    """A token or signature that does not open what was asked; the message is user-safe."""


TOKEN_LABEL, IMAGE_LABEL = b"weatherapi token v1", b"weatherapi image v1"


def derive(master: bytes, label: bytes) -> bytes:
    """The purpose key `label` of a master secret."""
    return hmac.new(master, label, sha256).digest()


@dataclass(frozen=True)
class Secrets:
    """Signing secrets by key id; `current` signs, all verify. Signatures use the derived
    per-purpose keys, never the masters."""

    current: str
    keys: Mapping[str, bytes]
    token_keys: Mapping[str, bytes] = field(init=False)
    image_keys: Mapping[str, bytes] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "token_keys",
                           {k: derive(v, TOKEN_LABEL) for k, v in self.keys.items()})
        object.__setattr__(self, "image_keys",
                           {k: derive(v, IMAGE_LABEL) for k, v in self.keys.items()})


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


class SecretsFileError(ValueError):
    """A secrets file that must not be trusted (the message says how to fix it)."""


def _open_private(path: Path) -> tuple[str, tuple[int, int, int, int]]:
    """The text of a secrets file and its (device, inode, mtime, size) stamp, read only if it is
    a regular file (no symlink) owned by this user and unreadable by anyone else: whoever can
    read or replace it can mint tokens."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "r", encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SecretsFileError(f"{path} is not a regular file")
        if info.st_uid != os.geteuid():
            raise SecretsFileError(f"{path} is owned by uid {info.st_uid}, not by the user "
                                   f"running the server (uid {os.geteuid()})")
        if info.st_mode & 0o077:
            raise SecretsFileError(f"{path} is readable or writable by others (mode "
                                   f"{stat.S_IMODE(info.st_mode):o}); run chmod 600 {path}")
        stamp = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
        return handle.read(), stamp


def _parse_file(text: str) -> Secrets:
    data = json.loads(text)
    pairs = [f"{data['current']}:{data['secrets'][data['current']]}"]
    pairs += [f"{k}:{v}" for k, v in data["secrets"].items() if k != data["current"]]
    return parse_secrets(",".join(pairs))


def read_secrets_file(path: Path) -> Secrets:
    """{"current": kid, "secrets": {kid: secret}} from a private secrets file."""
    return _parse_file(_open_private(path)[0])


def _write_private(path: Path, data: dict, replace: bool) -> None:
    """Write `data` to a fresh private temporary file (mkstemp: unpredictable name, O_EXCL,
    mode 0600) beside `path`, then move it into place: os.replace, or os.link when `replace`
    is False so that the first of several concurrent creators wins."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)        # fails if another process created it first
        except FileExistsError:
            pass
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def ensure_secrets_file(path: Path) -> Secrets:
    """Read the secrets file, creating it with one random secret if missing. Creation is
    atomic (a complete file is linked into place), so concurrent workers agree on one."""
    if not os.path.lexists(path):
        _write_private(path, new_secrets_data({}), replace=False)
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
    data = json.loads(_open_private(path)[0]) if os.path.lexists(path) else {}
    data = new_secrets_data(data, keep)
    _write_private(path, data, replace=True)
    return data["current"]


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
    source: Path | None = None           # the secrets file to follow, if any
    _stamp: tuple[int, int, int, int] | None = None
    _image_sigs: dict[tuple[str, int, str], str] = field(default_factory=dict)

    def refresh(self) -> None:
        """Re-read the secrets file if it changed (keeps the old secrets if it is broken)."""
        if self.source is None:
            return
        info = os.stat(self.source, follow_symlinks=False)
        # The inode too: a replaced file can keep the old one's size and mtime.
        if (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size) != self._stamp:
            text, stamp = _open_private(self.source)
            self.secrets = _parse_file(text)
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
            raise bad                       # a re-spelled expiry is refused like a forged one
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
        if subject is not None and not hmac.compare_digest(claimed_subject.encode(),
                                                           subject.encode()):
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

    def verify_image(self, webcam: str, expires: str, kid: str, sig: str,
                     object_key: str = "") -> None:
        """Raise TokenError unless (kid, sig) signs `webcam` (and `object_key`, for a CDN
        object) until `expires`, still valid."""
        secret = self.secrets.image_keys.get(kid)
        if secret is None or len(sig) > 64:
            raise TokenError("the image link is malformed or signed with an unknown key")
        bad = TokenError("the image link's signature is invalid")
        if not EXPIRES.fullmatch(expires):
            raise bad                       # a re-spelled expiry is refused like a forged one
        try:
            mac = _unb64(sig)
        except (binascii.Error, ValueError):
            raise bad from None
        if not hmac.compare_digest(mac, _mac(secret, IMAGE, webcam, int(expires), object_key)):
            raise bad
        if int(expires) <= self.now():
            raise TokenError("the image link has expired")


SIGNER = web.AppKey("signer", Signer)
