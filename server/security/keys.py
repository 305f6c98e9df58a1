"""API keys: only SHA-256 hashes are stored; lookups compare in constant time."""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from server.security.private_file import (
    FileRefusedError,
    Followed,
    check_directories,
    locked,
    read_trusted,
    write_private,
)

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_SUBJECT_SECRETS = 16


@dataclass(frozen=True)
class ApiKey:
    """A stored key: its name (what logs show), hash and own rate limit (None = default)."""

    name: str
    sha256: bytes
    rate_limit: int | None


def hash_key(key: str) -> bytes:
    """SHA-256 digest of a presented key."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def token_subject(key: ApiKey, secret: bytes) -> str:
    """The opaque id a clusters token names its key by: HMAC-SHA256(secret, stored hash),
    96 bits. From the hash, not the name: a token is visible to browsers, and the name is the
    operator's business; a key replaced under the same name gets a new subject, so tokens
    minted with the old key stop working with it. Keyed (`secret` derives from a signing
    secret), so a subject seen in a browser is no test to guess a weak key against offline."""
    return hmac.new(secret, key.sha256, hashlib.sha256).digest()[:12].hex()


class KeyStore:
    """Keys from a JSON or TOML file, re-read when the file changes, so keys can be added live.
    Whoever can write the file can add keys: one that others may write, or that neither this
    user nor root owns, is refused (FileRefusedError) like an unparsable one."""

    def __init__(self, path: Path | None, load: bool = True):
        """Keys from `path` (none when None). `load`: read the file now, raising what is wrong
        with it; else the first refresh() reads it."""
        self.path = path
        self._file = Followed(path) if path is not None else None
        self._keys: tuple[ApiKey, ...] = ()
        self._subjects: dict[bytes, dict[str, ApiKey]] = {}  # by subject secret
        # Stored keys by their SHA-256 digest: a presented key is hashed and looked up once,
        # whatever the number of keys. A lookup's timing can only tell about the digest of what
        # was presented, never about a stored key (SHA-256 has no known preimages), so this
        # needs no comparison in constant time; no presented key is kept.
        self._by_digest: dict[bytes, ApiKey] = {}
        if self._file is not None and not path.exists():
            self._file.missing()  # no keys yet: nothing to say until it appears
        if load:
            self.refresh()

    def refresh(self) -> bool:
        """Re-read the file if it changed; True when it was (re)loaded. A file that cannot be
        loaded leaves the keys loaded before in use, and the error is raised once (see
        Followed). A file that is removed takes every key with it (FileNotFoundError, once)."""
        if self._file is None:
            return False
        state = self._file.due()
        if state is None:
            return False
        if state == errno.ENOENT:
            self._keys, self._subjects, self._by_digest = (), {}, {}
            self._file.missing()
            raise FileNotFoundError(errno.ENOENT, "no such file", str(self.path))
        try:
            text, loaded = read_trusted(self.path, secret=False)  # only hashes: others may read
            keys = tuple(parse_keys(text, self.path))
        except (OSError, ValueError) as exc:
            if self._file.failure(exc, state):
                raise
            return False
        self._keys, self._subjects = keys, {}
        self._by_digest = {key.sha256: key for key in keys}
        self._file.loaded(loaded)
        return True

    @property
    def count(self) -> int:
        """How many keys are loaded."""
        return len(self._keys)

    def by_subject(self, subject: str, secret: bytes) -> ApiKey | None:
        """The key whose token_subject() under `secret` is `subject`, or None once that key
        has been removed. The table per secret is made once (a handful of secrets are in use:
        one per signing key id)."""
        table = self._subjects.get(secret)
        if table is None:
            if len(self._subjects) >= MAX_SUBJECT_SECRETS:
                self._subjects = {}
            table = self._subjects[secret] = {token_subject(key, secret): key for key in self._keys}
        return table.get(subject)

    def authenticate(self, presented: str | None) -> ApiKey | None:
        """The key whose SHA-256 digest is that of `presented` (one dictionary lookup)."""
        if not presented:
            return None
        return self._by_digest.get(hash_key(presented))


def _is_toml(path: Path) -> bool:
    return path.suffix.lower() == ".toml"


def _parse(text: str, path: Path) -> dict:
    """The keys file's data: TOML when the name ends in .toml, else JSON."""
    if not text.strip():
        return {}
    return tomllib.loads(text) if _is_toml(path) else json.loads(text)


def _toml(data: dict) -> str:
    """The keys file as TOML: one [[keys]] table per key (names are [A-Za-z0-9._-], hashes hex)."""
    blocks = []
    for entry in data.get("keys", []):
        lines = ["[[keys]]", f'name = "{entry["name"]}"', f'sha256 = "{entry["sha256"]}"']
        if entry.get("rate_limit") is not None:
            lines.append(f"rate_limit = {int(entry['rate_limit'])}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def parse_keys(text: str, path: Path) -> list[ApiKey]:
    """Parse the text of the keys file `path`: {"keys": [{"name", "sha256", "rate_limit"?}]}
    in JSON, or the same as TOML ([[keys]] tables) when the file name ends in .toml."""
    try:
        return [_entry(entry) for entry in _parse(text, path).get("keys", [])]
    except Exception as exc:  # noqa: BLE001 (Infinity, deep nesting: every fault is the file's)
        # One line naming the file and the fault: it goes to the log or the terminal as is.
        kind = "TOML" if _is_toml(path) else "JSON"
        problem = str(exc).splitlines()[0] if str(exc) else ""
        raise FileRefusedError(
            f"{path} is not a valid keys file ({kind} with a list of keys, "
            f"each with name and sha256): {type(exc).__name__} "
            f"{problem}".rstrip()
        ) from None


def _entry(entry: dict) -> ApiKey:
    """One key of the keys file, checked as `keys add` writes it."""
    name, digest, limit = entry["name"], bytes.fromhex(entry["sha256"]), entry.get("rate_limit")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"key name {name!r} is not 1-64 letters, digits, '.', '_' or '-'")
    if len(digest) != hashlib.sha256().digest_size:
        raise ValueError(f"the sha256 of key {name!r} is not 32 bytes")
    if limit is not None and (type(limit) is not int or limit <= 0):
        raise ValueError(f"the rate_limit of key {name!r} is not a positive whole number")
    return ApiKey(name, digest, limit)


def load_keys(path: Path) -> list[ApiKey]:
    """The keys of the keys file `path` (see parse_keys), if it is to be trusted."""
    return parse_keys(read_trusted(path, secret=False)[0], path)


def _stored(path: Path) -> dict:
    """The data of the keys file `path` ({} when there is none yet), refused (naming the file)
    where the server would refuse it."""
    if not path.exists():
        return {}
    text = read_trusted(path, secret=False)[0]
    parse_keys(text, path)
    return _parse(text, path)


def add_key(path: Path, name: str, rate_limit: int | None = None) -> str:
    """Create a key named `name`, store its hash in `path`, and return the key itself."""
    if not NAME.fullmatch(name):
        raise ValueError("key names are 1-64 letters, digits, '.', '_' or '-'")
    if rate_limit is not None and rate_limit <= 0:
        raise ValueError("--rate-limit must be a positive number of requests a minute")
    # Refused like the server refuses it: a file others could write may hold their keys, and
    # one where everyone may write could be taken away.
    check_directories(path)
    # A symlink (a mounted or shared keys file) is followed: replacing the link itself with a
    # file would leave the file it leads to, which a server may read by another path, as it was.
    # Its target is also what is locked, as `secrets rotate` does: two names, one lock.
    target = Path(os.path.realpath(path))
    # Locked from read to replace: concurrent adds would each write back only their own key.
    with locked(target):
        data = _stored(path)  # read through the link: its name says JSON or TOML
        entries = data.setdefault("keys", [])
        if any(e["name"] == name for e in entries):
            raise ValueError(f"a key named {name!r} already exists in {path}")
        key = secrets.token_urlsafe(32)
        entry = {"name": name, "sha256": hash_key(key).hex()}
        if rate_limit is not None:
            entry["rate_limit"] = rate_limit
        entries.append(entry)
        write_private(target, _toml(data) if _is_toml(path) else json.dumps(data, indent=2) + "\n")
    return key
