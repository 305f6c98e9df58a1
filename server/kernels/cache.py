"""numba's on-disk cache checks only a compiled function's own source file: code compiled from
a kernel that calls into another module stays cached when only that module changes, and a
server would run the old logic. One fingerprint of every module with compiled code decides
when the whole cache is stale; then its files are removed before anything loads them."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import contract

ROOT = Path(__file__).resolve().parents[1]     # the server package
# Compiled code reads the contract's constants (HOUR_S, the air-quality index's slack and cap),
# which numba freezes into what it caches: the contract is part of the fingerprint too.
CONTRACT = Path(contract.__file__).resolve()
STAMP = "numba-sources.sha256"
log = logging.getLogger("server")


def fingerprint(root: Path = ROOT) -> str:
    """SHA-256 of the paths and bytes of every module under `root` with numba code, and of
    the contract."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"numba" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text + b"\0")
    digest.update(CONTRACT.name.encode() + b"\0" + CONTRACT.read_bytes() + b"\0")
    return digest.hexdigest()


def purge_if_stale(root: Path = ROOT) -> bool:
    """Remove numba's cache files under `root` when its modules changed since the cache was
    made (True), and record the fingerprint they are made from now."""
    current = fingerprint(root)
    stamp = root / "__pycache__" / STAMP
    try:
        if stamp.read_text().strip() == current:
            return False
    except OSError:
        pass
    removed = 0
    try:
        for cached in root.rglob("__pycache__/*.nb[ic]"):
            cached.unlink(missing_ok=True)
            removed += 1
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(current + "\n")
    except OSError as exc:   # a read-only install: numba cannot cache there either
        log.warning("numba cache: cannot update %s (%s)", stamp.parent, exc.strerror or exc)
        return False
    if removed:
        log.info("numba cache: sources changed, %d cached files removed", removed)
    return True
