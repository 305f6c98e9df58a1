"""API keys: only SHA-256 hashes are stored; lookups compare in constant time."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path

from server.private_file import FileRefusedError, Stamp, read_trusted, stamp, write_private

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

    def __init__(self, path: Path | None):
        self.path = path
        self._stamp: Stamp | None = None
        self._failed: object = None      # the state of the file that last failed to load
        self._keys: tuple[ApiKey, ...] = ()
        self._subjects: dict[bytes, dict[str, ApiKey]] = {}    # by subject secret
        self.refresh()

    def refresh(self) -> bool:
        """Re-read the file if it changed; True when it was (re)loaded. When it cannot be
        loaded the keys loaded before stay and the error is raised once: again only after
        the file changes again. A missing file holds no keys."""
        if self.path is None:
            return False
        try:
            state: object = stamp(os.stat(self.path))   # through a symlink, as it is read
        except FileNotFoundError:
            self._keys, self._subjects, self._stamp, self._failed = (), {}, None, None
            return False
        except OSError as exc:
            state = exc.errno
        if state == self._stamp or state == self._failed:
            return False
        try:
            text, loaded = read_trusted(self.path, secret=False)   # only hashes: others may read
            keys = tuple(parse_keys(text, self.path))
        except (OSError, ValueError):
            self._failed = state
            raise
        self._keys, self._subjects, self._stamp, self._failed = keys, {}, loaded, None
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
            table = self._subjects[secret] = {token_subject(key, secret): key
                                              for key in self._keys}
        return table.get(subject)

    def authenticate(self, presented: str | None) -> ApiKey | None:
        """The key matching `presented`, comparing against every stored hash in constant time."""
        if not presented:
            return None
        digest = hash_key(presented)
        found = None
        for key in self._keys:
            if hmac.compare_digest(digest, key.sha256):
                found = key
        return found


def _is_toml(path: Path) -> bool:
    return path.suffix.lower() == ".toml"


def _parse(text: str, path: Path) -> dict:
    """The keys file's data: TOML when the name ends in .toml, else JSON."""
    if not text.strip():
        return {}
    return tomllib.loads(text) if _is_toml(path) else json.loads(text)


def _read(path: Path) -> dict:
    """The keys file's data, read as it is (`keys add` replaces it with a private file)."""
    return _parse(path.read_text(encoding="utf-8"), path)


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
        keys = []
        for entry in _parse(text, path).get("keys", []):
            limit = entry.get("rate_limit")
            keys.append(ApiKey(entry["name"], bytes.fromhex(entry["sha256"]),
                               int(limit) if limit is not None else None))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        # One line naming the file and the fault: it goes to the log or the terminal as is.
        kind = "TOML" if _is_toml(path) else "JSON"
        problem = str(exc).splitlines()[0] if str(exc) else ""
        raise FileRefusedError(f"{path} is not a valid keys file ({kind} with a list of keys, "
                               f"each with name and sha256): {type(exc).__name__} "
                               f"{problem}".rstrip()) from None
    return keys


def load_keys(path: Path) -> list[ApiKey]:
    """The keys of the keys file `path` (see parse_keys)."""
    return parse_keys(path.read_text(encoding="utf-8"), path)


def add_key(path: Path, name: str, rate_limit: int | None = None) -> str:
    """Create a key named `name`, store its hash in `path`, and return the key itself."""
    if not NAME.fullmatch(name):
        raise ValueError("key names are 1-64 letters, digits, '.', '_' or '-'")
    if rate_limit is not None and rate_limit <= 0:
        raise ValueError("--rate-limit must be a positive number of requests a minute")
    data = _read(path) if path.exists() else {}
    entries = data.setdefault("keys", [])
    if any(e["name"] == name for e in entries):
        raise ValueError(f"a key named {name!r} already exists in {path}")
    key = secrets.token_urlsafe(32)
    entry = {"name": name, "sha256": hash_key(key).hex()}
    if rate_limit is not None:
        entry["rate_limit"] = rate_limit
    entries.append(entry)
    write_private(path, _toml(data) if _is_toml(path) else json.dumps(data, indent=2) + "\n")
    return key
