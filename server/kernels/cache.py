"""numba's on-disk cache checks only a compiled function's own source file: code compiled from
a kernel that calls into another module stays cached when only that module changes, and a
server would run the old logic. One fingerprint of every module with compiled code decides
when the whole cache is stale; then its files are removed before anything loads them.

numba keeps them in each package's __pycache__, or, with NUMBA_CACHE_DIR set (an install
whose code is read-only: numba needs a cache directory it can write even to read one), in a
directory per package under that one (docs/operations/production.md#systemd)."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import contract

ROOT = Path(__file__).resolve().parents[1]  # the server package
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


def cache_dirs(root: Path, cache_dir: str) -> list[Path]:
    """Where numba keeps the compiled code of the modules under `root`: each package's
    __pycache__, or with `cache_dir` (numba's NUMBA_CACHE_DIR) the directory numba names
    after each package's absolute path there (numba.core.caching, _UserProvidedCacheLocator)."""
    packages = [
        root,
        *sorted(p for p in root.rglob("*") if p.is_dir() and "__pycache__" not in p.parts),
    ]
    if not cache_dir:
        return [package / "__pycache__" for package in packages]
    named = []
    for package in packages:
        path = os.path.abspath(package)
        named.append(
            Path(cache_dir) / f"{os.path.basename(path)}_{hashlib.sha1(path.encode()).hexdigest()}"
        )
    return named


def purge_if_stale(root: Path = ROOT, cache_dir: str | None = None) -> bool:
    """Remove numba's cache files of the modules under `root` when they changed since the cache
    was made (True), and record the fingerprint they are made from now. `cache_dir`: numba's
    NUMBA_CACHE_DIR (read from numba's configuration when not given)."""
    if cache_dir is None:
        from numba.core import config as numba_config

        cache_dir = numba_config.CACHE_DIR
    current = fingerprint(root)
    folders = cache_dirs(root, cache_dir)
    stamp = folders[0] / STAMP
    try:
        if stamp.read_text().strip() == current:
            return False
    except OSError:
        pass
    removed = 0
    try:
        for folder in folders:
            for cached in folder.glob("*.nb[ic]"):
                cached.unlink(missing_ok=True)
                removed += 1
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(current + "\n")
    except OSError as exc:  # a read-only install: numba cannot cache there either
        log.warning("numba cache: cannot update %s (%s)", stamp.parent, exc.strerror or exc)
        return False
    if removed:
        log.info("numba cache: sources changed, %d cached files removed", removed)
    return True
