"""One digest of what an area reads under datasets/, cheap to recompute.

`refresh` compares it with the digest the published manifest recorded when the area was built:
equal means nothing new arrived, so the area is carried over instead of rebuilt. Files are
hashed (SHA-256, as the manifest's inputs are); a small cache beside them, keyed by path, size,
modification time and inode, spares re-reading gigabytes of unchanged model runs every hour.
Temporary files of a download in flight (dot-files, `*.part`) are not inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

CACHE = ".checksums.json"
ABSENT = "absent"


def input_digest(datasets: Path, folders: tuple[str, ...]) -> str:
    """SHA-256 over every input file's path and content hash in the folders (absent ones too)."""
    cache = _Cache(datasets / CACHE)
    digest = hashlib.sha256()
    for folder in folders:
        root = datasets / folder
        files = input_files(root)
        digest.update(f"{folder}\0{ABSENT if not root.is_dir() else len(files)}\0".encode())
        for path in files:
            digest.update(
                f"{path.relative_to(datasets).as_posix()}\0{cache.sha256(path)}\0".encode()
            )
    cache.save()
    return digest.hexdigest()


def input_files(root: Path) -> list[Path]:
    """The regular files under root that a build may read, in path order."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and not _temporary(p, root))


def _temporary(path: Path, root: Path) -> bool:
    """A download in flight or a hidden file (in any folder below root)."""
    parts = path.relative_to(root).parts
    return path.name.endswith(".part") or any(part.startswith(".") for part in parts)


class _Cache:
    """path -> (size, mtime_ns, inode, sha256), read once and written back when it grew."""

    def __init__(self, path: Path):
        self.path = path
        self.dirty = False
        try:
            self.entries: dict[str, list] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.entries = {}

    def sha256(self, path: Path) -> str:
        """The file's SHA-256, from the cache while its size, time and inode are unchanged."""
        stat = path.stat()
        key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns, stat.st_ino]
        known = self.entries.get(key)
        if isinstance(known, list) and known[:3] == stamp:
            return known[3]
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        self.entries[key] = [*stamp, digest.hexdigest()]
        self.dirty = True
        return digest.hexdigest()

    def save(self) -> None:
        """Write the cache back atomically (best effort: it is only a cache)."""
        if not self.dirty or not self.path.parent.is_dir():
            return
        live = {k: v for k, v in self.entries.items() if os.path.exists(k)}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.part")
        try:
            tmp.write_text(json.dumps(live, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
