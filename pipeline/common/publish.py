"""Versioned build directories, the DuckDB catalog, the manifest, and the atomic `current` swap."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb

import contract
from pipeline.common.io import naming

KEEP_VERSIONS = 3


@contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """Serialise builds writing into the same output directory."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def new_version_dir(out_dir: Path) -> Path:
    """Create an unpublished version directory; nothing reads it until `publish`."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    version = out_dir / contract.VERSIONS / f"{stamp}-{secrets.token_hex(3)}"
    version.mkdir(parents=True)
    return version


def carry_over(
    previous: Path, version: Path, area: str, entry: contract.AreaEntry
) -> contract.AreaEntry:
    """Hard-link (or copy) an area's files from the previous version into the new one."""
    for rel in entry.get("files", []):
        src, dst = previous / rel, version / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            with naming(dst):
                shutil.copy2(src, dst)
    return {**entry, "carried_over_from": previous.name}


def write_catalog(version: Path, tables: dict[str, str]) -> None:
    """Create catalog.duckdb with one view per Parquet table (absolute paths: DuckDB resolves
    relative ones against the reader's working directory, not the database file)."""
    path = version / contract.CATALOG
    try:
        con = duckdb.connect(str(path))
        try:
            for view, rel in sorted(tables.items()):
                # DDL takes no bound parameters: quote the identifier and the literal by hand.
                parquet = str((version / rel).resolve()).replace("'", "''")
                name = view.replace('"', '""')
                con.execute(f"CREATE VIEW \"{name}\" AS SELECT * FROM read_parquet('{parquet}')")
        finally:
            con.close()
    except duckdb.Error as exc:  # a full disk is one of these, not an OSError
        raise OSError(None, (str(exc).splitlines() or [type(exc).__name__])[0], str(path)) from None


def write_manifest(version: Path, manifest: contract.Manifest) -> None:
    """Write manifest.json last, via a temporary file, so a manifest means a complete version;
    everything is flushed to disk first, so a crash cannot publish truncated files. The
    manifest records every file's size and SHA-256 (contract.CHECKSUMS), which copies of the
    version are verified against."""
    _fsync_tree(version)
    manifest = {**manifest, "checksums": file_checksums(version)}
    tmp = version / (contract.MANIFEST + ".tmp")
    with naming(tmp):
        tmp.write_text(
            json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    _fsync_file(tmp)
    os.replace(tmp, version / contract.MANIFEST)
    _fsync_dir(version)


def file_checksums(version: Path) -> dict[str, contract.FileSum]:
    """{relative path: size and SHA-256} of every file of the version but its manifest."""
    sums: dict[str, contract.FileSum] = {}
    for folder, _, names in os.walk(version):
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(version).as_posix()
            if rel in (contract.MANIFEST, contract.MANIFEST + ".tmp"):
                continue
            sums[rel] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    return dict(sorted(sums.items()))


def sha256_file(path: Path) -> str:
    """The file's SHA-256, hex."""
    with naming(path), open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def publish(out_dir: Path, version: Path) -> None:
    """Point `current` at the new version with one atomic rename."""
    tmp = out_dir / f".{contract.CURRENT}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(Path(contract.VERSIONS) / version.name)
    os.replace(tmp, out_dir / contract.CURRENT)
    _fsync_dir(out_dir)


def prune(out_dir: Path, keep: int = KEEP_VERSIONS) -> None:
    """Delete unpublished leftovers and all but the newest `keep` published versions.

    Servers that still map files of a deleted version keep reading them: on POSIX an
    unlinked file lives until its last mapping closes."""
    current = contract.current_version_dir(out_dir)
    versions = sorted((out_dir / contract.VERSIONS).iterdir(), reverse=True)
    published = [v for v in versions if (v / contract.MANIFEST).is_file()]
    keepers = set(published[:keep]) | ({current} if current else set())
    for version in versions:
        if version.resolve() not in {k.resolve() for k in keepers}:
            shutil.rmtree(version, ignore_errors=True)


def discard(version: Path) -> None:
    """Remove a version directory whose build failed, unless it is published: a signal or an
    error after publish()'s rename (in its fsync) must not delete the version being served."""
    if contract.current_version_dir(version.parent.parent) == version.resolve():
        return
    shutil.rmtree(version, ignore_errors=True)


def _fsync_tree(root: Path) -> None:
    for folder, _, names in os.walk(root):
        for name in names:
            _fsync_file(Path(folder) / name)
        _fsync_dir(Path(folder))


def _fsync_file(path: Path) -> None:
    with naming(path), open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
