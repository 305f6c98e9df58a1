"""The signing secrets (docs/operations/keys-and-secrets.md#secrets): master secrets by key id, from
WEATHERAPI_SIGNING_SECRETS or from a secrets file that every worker process shares.

The file is created once (mode 0600) when missing, so tokens verify on every worker and across
restarts, and is re-read when it changes (rotation without a restart). Whoever can read or
replace it can mint tokens, so the server refuses to start on a file it should not trust (like
ssh with a private key): see private_file.check_trusted(). Kubernetes and Docker secrets (a
symlink to a root-owned file of mode 0644 or 0444) pass.

Each secret is a master: tokens and image links are signed with keys derived from it per
purpose (HMAC-SHA256(master, label)), so the image key can be handed to a CDN to verify links
without giving it the power to mint tokens (`python -m server secrets image-keys`).
"""

from __future__ import annotations

import errno
import hmac
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path

from server.security.private_file import (
    FileRefusedError,
    Stamp,
    check_directories,
    locked,
    read_trusted,
    write_private,
)

KID = re.compile(r"[A-Za-z0-9_-]{1,32}")
MIN_SECRET_CHARS = 16
TOKEN_LABEL, IMAGE_LABEL = b"weatherapi token v1", b"weatherapi image v1"
SUBJECT_LABEL = b"weatherapi subject v1"


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
    subject_keys: Mapping[str, bytes] = field(init=False)  # keys.token_subject()

    def __post_init__(self) -> None:
        for name, label in (
            ("token_keys", TOKEN_LABEL),
            ("image_keys", IMAGE_LABEL),
            ("subject_keys", SUBJECT_LABEL),
        ):
            object.__setattr__(self, name, {k: derive(v, label) for k, v in self.keys.items()})


def parse_secrets(text: str) -> Secrets:
    """Secrets from "kid:secret,kid:secret" (the first one signs)."""
    keys: dict[str, bytes] = {}
    for item in (part.strip() for part in text.split(",")):
        kid, sep, secret = item.partition(":")
        if not sep or not KID.fullmatch(kid) or len(secret) < MIN_SECRET_CHARS:
            raise ValueError(
                "signing secrets must be kid:secret pairs separated by commas, "
                f"ids of 1-32 letters, digits, - or _, secrets of at least "
                f"{MIN_SECRET_CHARS} characters"
            )
        keys[kid] = secret.encode()
    if not keys:
        raise ValueError("no signing secret given")
    return Secrets(next(iter(keys)), keys)


class SecretsFileError(FileRefusedError):
    """A secrets file that cannot be used (the message says how to fix it)."""


def read_private(path: Path) -> tuple[str, Stamp]:
    """The text of a secrets file and its stamp, if no one else may read or write it
    (private_file.check_trusted with `secret`)."""
    return read_trusted(path, secret=True)


def parse_file(text: str, path: Path) -> Secrets:
    """Secrets from the text of the secrets file `path`."""
    try:
        data = json.loads(text)
        pairs = [f"{data['current']}:{data['secrets'][data['current']]}"]
        pairs += [f"{k}:{v}" for k, v in data["secrets"].items() if k != data["current"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SecretsFileError(
            f'{path} is not a signing secrets file ({{"current": kid, '
            f'"secrets": {{kid: secret}}}}): {type(exc).__name__} '
            f"{exc}"
        ) from None
    return parse_secrets(",".join(pairs))


def read_secrets_file(path: Path) -> Secrets:
    """{"current": kid, "secrets": {kid: secret}} from a private secrets file."""
    return parse_file(read_private(path)[0], path)


def _write_secrets(path: Path, data: dict, replace: bool) -> None:
    write_private(path, json.dumps(data, indent=2) + "\n", replace)


def ensure_secrets_file(path: Path) -> Secrets:
    """Read the secrets file, creating it with one random secret if missing. Creation is
    atomic (a complete file is linked into place), so concurrent workers agree on one. No
    secret is written where another user could take the file away (check_directories)."""
    check_directories(path)
    if not os.path.lexists(path):
        try:
            _write_secrets(path, new_secrets_data({}), replace=False)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            # A read-only keys directory (/etc, a ConfigMap): say where the file can go.
            raise SecretsFileError(
                f"cannot create {path} ({os.strerror(exc.errno).lower()}); set "
                "WEATHERAPI_SIGNING_SECRETS_FILE to a private file in a directory this user "
                "can write (or give the secrets in WEATHERAPI_SIGNING_SECRETS)"
            ) from None
    return read_secrets_file(path)


def location_warnings(path: Path, legacy: Path | None = None) -> list[str]:
    """What is doubtful about where the secrets file is, short of refusing to start: a
    directory group or others can write (with the sticky bit, or the group only: one that
    everyone may write is refused, see check_directories), where a link could be planted,
    and a file left at the default of older versions (`legacy`) while `path` has none yet."""
    warnings = []
    if legacy and legacy != path and legacy.exists() and not os.path.lexists(path):
        warnings.append(
            f"{legacy} holds signing secrets (the default location of older versions) but "
            f"{path} does not exist: a new secret is made there, and tokens and links signed "
            f"before stop working; move the file (mv {legacy} {path}) or set "
            f"WEATHERAPI_SIGNING_SECRETS_FILE={legacy}"
        )
    folder = Path(os.path.realpath(path)).parent
    try:
        mode = stat.S_IMODE(folder.stat().st_mode)
    except OSError:  # not made yet: it will be, mode 0700
        return warnings
    if mode & 0o022 and not (mode & 0o002 and not mode & stat.S_ISVTX):  # that one is refused
        warnings.append(
            f"the signing secrets file {path} is in {folder}, a directory group or others can "
            f"write (mode {mode:o}), where another user could put a file or link of their own "
            "in its place; keep it in a private directory (WEATHERAPI_SIGNING_SECRETS_FILE)"
        )
    return warnings


def new_secrets_data(data: dict, keep: int = 2, stage: bool = False) -> dict:
    """`data` with a new random secret made current or, with `stage`, added to verify only
    (the current one signs until promote_secrets_file()). The `keep` newest older secrets stay
    (tokens they signed remain valid until they expire); a key staged earlier and never
    promoted goes (it signed nothing)."""
    kid = "k" + time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
    while kid in data.get("secrets", {}):  # two rotations in one second may draw alike
        kid = "k" + time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
    current = data.get("current")
    older = [kv for kv in data.get("secrets", {}).items() if kv[0] != data.get("staged")]
    older.sort(key=lambda kv: kv[0] != current)  # the current one first
    fresh = {kid: secrets.token_urlsafe(32)}
    if not stage:
        return {"current": kid, "secrets": {**fresh, **dict(older[:keep])}}
    if not current:
        raise SecretsFileError(
            "there is no current key to go on signing with: rotate without --stage first"
        )
    return {"current": current, "staged": kid, "secrets": {**fresh, **dict(older[: max(keep, 1)])}}


def _update(path: Path, change: Callable[[dict], dict], create: bool = False) -> dict:
    """Apply `change` to the secrets file's data and write the result back (through a
    symlink, to the file it names: a mount's links stay as they are), under the file's lock:
    two rotations at once must not lose one's secret."""
    if not create and not os.path.lexists(path):  # no lock file left where none is
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    check_directories(path)  # before the lock file (or its directory) is made there
    target = Path(os.path.realpath(path))  # locked and written: the same file
    with locked(target):
        if create and not os.path.lexists(path):
            data = {}
        else:
            data = json.loads(read_private(path)[0])  # FileNotFoundError when missing
        data = change(data)
        _write_secrets(target, data, replace=True)
    return data


def rotate_secrets_file(
    path: Path, keep: int = 2, stage: bool = False, create: bool = False
) -> str:
    """Add a new secret to `path` (see new_secrets_data; created only with `create`);
    returns its key id."""
    data = _update(path, lambda old: new_secrets_data(old, keep, stage), create)
    return data["staged"] if stage else data["current"]


def promote_secrets_file(path: Path) -> str:
    """Make the staged secret of `path` current; returns its key id."""

    def promote(data: dict) -> dict:
        kid = data.pop("staged", None)
        if kid not in data.get("secrets", {}):
            raise SecretsFileError(
                f"{path} has no staged key: run `python -m server secrets rotate --stage` first"
            )
        older = {k: v for k, v in data["secrets"].items() if k != kid}
        return {**data, "current": kid, "secrets": {kid: data["secrets"][kid], **older}}

    return _update(path, promote)["current"]
