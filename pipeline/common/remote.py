"""Publish the current version to object storage: upload, verify, then replace the pointer."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import obstore
from obstore.exceptions import BaseError, NotFoundError
from obstore.store import S3Store

import contract

if TYPE_CHECKING:
    from obstore.store import ClientConfig
from pipeline.common import publish

log = logging.getLogger("pipeline.remote")
CHUNK = 8 * 1024 * 1024  # read and multipart-upload size: files above it go in parts
PARALLEL = 4  # files uploaded at once


class RemoteError(Exception):
    """A publish to object storage that did not happen; the pointer is unchanged."""


@dataclass(frozen=True)
class Published:
    """What a publish did, for its summary line."""

    build_id: str
    files: int
    bytes: int
    seconds: float
    uploaded: bool  # False when the pointer already named the version
    pruned: list[str]


def open_store(url: str) -> S3Store:
    """An S3 store for s3://BUCKET/PREFIX; endpoint, region and credentials come from the
    AWS_* environment, and plain HTTP is allowed for a loopback endpoint only."""
    if not url.startswith("s3://") or not url[5:].split("/", 1)[0]:
        raise RemoteError(f"{url!r} is not an s3://BUCKET/PREFIX URL")
    options: ClientConfig = {"allow_http": True} if contract.loopback_endpoint(os.environ) else {}
    return S3Store.from_url(url.rstrip("/"), client_options=options)


def publish_remote(out: Path, url: str, keep: int = publish.KEEP_VERSIONS) -> Published:
    """Upload the version `out/current` names under versions/<build_id>/, check every object's
    size against the manifest, then point current.json at it and prune old versions. The
    build lock is held throughout, so a local build cannot prune the version mid-upload."""
    store = open_store(url)
    started = time.perf_counter()
    if not out.is_dir():  # the lock would create it
        raise RemoteError(f"nothing is published in {out}: build first")
    with publish.build_lock(out):
        version = contract.current_version_dir(out)
        if version is None:
            raise RemoteError(f"nothing is published in {out}: build first")
        manifest_bytes = (version / contract.MANIFEST).read_bytes()
        manifest = json.loads(manifest_bytes)
        sums: dict[str, contract.FileSum] | None = manifest.get(contract.CHECKSUMS)
        if not sums:
            raise RemoteError(
                f"{version / contract.MANIFEST} has no {contract.CHECKSUMS}: it was built by an "
                "older version of the pipeline; build again"
            )
        build_id = version.name
        pointer: contract.Pointer = {
            "build_id": build_id,
            "manifest_bytes": len(manifest_bytes),
            "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
        }
        try:
            uploaded = _read_pointer(store) != pointer
            if uploaded:
                _upload(store, version, build_id, sums)
                # The manifest last: a version with one is complete (prune relies on it).
                _put(store, contract.remote_key(build_id, contract.MANIFEST), manifest_bytes)
                _verify(store, build_id, {**sums, contract.MANIFEST: _sum(manifest_bytes)})
                body = json.dumps(pointer, sort_keys=True).encode() + b"\n"
                _put(store, contract.POINTER, body)
        except (BaseError, OSError) as exc:  # obstore raises both
            raise RemoteError(_first_line(exc)) from None
        try:
            pruned = _prune(store, build_id, keep)
        except (BaseError, OSError) as exc:  # published all the same; the next publish prunes again
            log.warning("pruning old versions failed: %s", _first_line(exc))
            pruned = []
    total = sum(s["bytes"] for s in sums.values()) + len(manifest_bytes)
    seconds = time.perf_counter() - started
    return Published(build_id, len(sums) + 1, total, seconds, uploaded, pruned)


def _sum(data: bytes) -> contract.FileSum:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _read_pointer(store: S3Store) -> Any:
    """The published pointer, or None when there is none (or it is not JSON)."""
    try:
        return json.loads(bytes(obstore.get(store, contract.POINTER).bytes()))
    except (FileNotFoundError, NotFoundError):  # obstore raises the builtin for a 404
        return None
    except ValueError:
        return None  # replaced by a good one below


def _upload(
    store: S3Store, version: Path, build_id: str, sums: dict[str, contract.FileSum]
) -> None:
    """Upload every file but the manifest, each checked against the manifest as it is read."""
    with ThreadPoolExecutor(PARALLEL, thread_name_prefix="upload") as pool:
        jobs = [
            pool.submit(_upload_file, store, version / rel, contract.remote_key(build_id, rel), s)
            for rel, s in sums.items()
        ]
        for job in jobs:
            job.result()


def _upload_file(store: S3Store, path: Path, key: str, expected: contract.FileSum) -> None:
    """Upload one file from the bytes hashed on the way (SigV4 signs each request's body, so
    the object holds what was hashed); RemoteError when they are not the manifest's."""
    digest = hashlib.sha256()
    size = 0

    def chunks(handle: Any) -> Iterator[bytes]:
        nonlocal size
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            yield chunk

    with open(path, "rb") as handle:
        if expected["bytes"] <= CHUNK:
            _put(store, key, b"".join(chunks(handle)))
        else:
            _put(store, key, chunks(handle), multipart=True)
    if size != expected["bytes"] or digest.hexdigest() != expected["sha256"]:
        raise RemoteError(f"{path}: differs from its manifest's checksum (changed since the build)")


def _put(store: S3Store, key: str, data: Any, multipart: bool = False) -> None:
    try:
        obstore.put(store, key, data, use_multipart=multipart, chunk_size=CHUNK)
    except (BaseError, OSError) as exc:
        raise RemoteError(f"uploading {key} failed: {_first_line(exc)}") from None


def _verify(store: S3Store, build_id: str, sums: dict[str, contract.FileSum]) -> None:
    """Every file of the manifest is in storage with its size; else RemoteError."""
    prefix = f"{contract.VERSIONS}/{build_id}/"
    sizes = {
        meta["path"].removeprefix(prefix): meta["size"]
        for batch in obstore.list(store, prefix)
        for meta in batch
    }
    wrong = [rel for rel, s in sums.items() if sizes.get(rel) != s["bytes"]]
    if wrong:
        raise RemoteError(
            f"{len(wrong)} object(s) missing or of the wrong size after the upload, e.g. "
            f"{prefix}{wrong[0]}; the pointer is unchanged"
        )


def _prune(store: S3Store, current: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` complete versions (and the pointer's), and versions
    whose upload never finished (no manifest) older than the current one."""
    listed = obstore.list_with_delimiter(store, f"{contract.VERSIONS}/")
    ids = sorted((p.rsplit("/", 1)[-1] for p in listed["common_prefixes"]), reverse=True)
    complete = [i for i in ids if _exists(store, contract.remote_key(i, contract.MANIFEST))]
    keepers = set(complete[:keep]) | {current}
    # An unfinished upload newer than the current one may be another publish under way.
    doomed = [i for i in ids if i not in keepers and (i in complete or i < current)]
    for build_id in doomed:
        paths = [
            meta["path"]
            for batch in obstore.list(store, f"{contract.VERSIONS}/{build_id}/")
            for meta in batch
        ]
        # The manifest first: a version half deleted is no longer complete.
        paths.sort(key=lambda p: not p.endswith("/" + contract.MANIFEST))
        for path in paths:
            obstore.delete(store, path)
    return doomed


def _exists(store: S3Store, key: str) -> bool:
    try:
        obstore.head(store, key)
    except (FileNotFoundError, NotFoundError):
        return False
    return True


def _first_line(exc: BaseException) -> str:
    """An obstore error's first line, without the response body (its text goes on with the
    whole request chain)."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return line.split(": <?xml", 1)[0][:300]
