"""A replica following builds published to object storage into its local build directory.

The pipeline's `publish --to s3://BUCKET/PREFIX` writes versions/<build_id>/... and then
current.json (contract.Pointer). Here one thread polls current.json (conditional on its ETag),
downloads a new version into BUILD_DIR/versions/.<build_id>.partial-<pid>, verifies every file
against the manifest's checksums, renames it into place and swaps BUILD_DIR/current: the Store
then loads it exactly as it does a local publish. Nothing unverified is ever renamed into place.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import obstore
from obstore.exceptions import BaseError, NotFoundError, NotModifiedError
from obstore.store import S3Store

import contract

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ClientConfig, RetryConfig

log = logging.getLogger("server.remote")
CHUNK = 8 * 1024 * 1024
PARALLEL = 4  # files downloaded at once
KEEP_VERSIONS = 3  # as the pipeline keeps locally
PARTIAL = ".partial-"
RETRY_TIMEOUT_S = 20


class Refused(Exception):
    """A published version that cannot be installed (missing, corrupt, malformed)."""


class Unreadable(Refused):
    """current.json cannot be read, or is not a pointer."""


class Stopped(Exception):
    """The server is stopping: the download is abandoned."""


def open_store(url: str) -> S3Store:
    """An S3 store for s3://BUCKET/PREFIX from the AWS_* environment; plain HTTP only for a
    loopback endpoint (or with AWS_ALLOW_HTTP)."""
    options: ClientConfig = {"allow_http": True} if contract.loopback_endpoint(os.environ) else {}
    # A poll or download gives up after a while (obstore's default: 3 minutes of retries):
    # a stopping server must not wait that long, and the next poll tries again anyway.
    retry: RetryConfig = {"max_retries": 3, "retry_timeout": timedelta(seconds=RETRY_TIMEOUT_S)}
    return S3Store.from_url(url.rstrip("/"), client_options=options, retry_config=retry)


def _first_line(exc: BaseException) -> str:
    """An obstore error's first line, without the response body."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return line.split(": <?xml", 1)[0][:300]


def _safe(rel: str) -> bool:
    """True for a relative path inside the version (the manifest's names are remote input)."""
    parts = PurePosixPath(rel).parts
    return (
        bool(parts)
        and not rel.startswith("/")
        and "\\" not in rel
        and all(p not in ("", ".", "..") and not p.startswith(".") for p in parts)
        and rel != contract.MANIFEST
    )


class Follower:
    """Installs the version current.json names into `build_dir`; `check` runs in one thread."""

    def __init__(self, url: str, build_dir: Path, retry_s: float):
        self.url = url.rstrip("/")
        self.dir = build_dir
        self.retry_s = retry_s
        self.store = open_store(url)
        self.stop = threading.Event()
        self.etag: str | None = None
        self.pointer: contract.Pointer | None = None
        self.state = "starting"  # starting | following | downloading | failed
        self.error: str | None = None
        self.failed_at = 0.0
        self.checked: str | None = None  # when current.json was last read (ISO 8601)
        self.said: str | None = None

    def status(self) -> dict[str, Any]:
        """The follower's state for /ready (no URL: the bucket is nobody's business)."""
        body = {
            "state": self.state,
            "pointer": self.pointer["build_id"] if self.pointer else None,
            "checked": self.checked,
            "error": self.error,
        }
        return {k: v for k, v in body.items() if v is not None}

    def check(self) -> None:
        """Read the pointer and install what it names, unless another worker of this server
        holds the cache's lock (it does the same)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".follow.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            try:
                self._check()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _check(self) -> None:
        pointer = self.pointer
        try:
            changed = self._poll()
            pointer = self.pointer
            if pointer is None or self._installed(pointer):
                self._following()
                return
            failed = self.state == "failed"
            if failed and not changed and time.time() - self.failed_at < self.retry_s:
                return
            self._install(pointer)
        except Unreadable as exc:
            self._failed(f"{self.url}: {exc}", logging.WARNING, str(exc))
        except Refused as exc:
            build = pointer["build_id"] if pointer else "?"
            self._failed(f"refusing build {build} from {self.url}: {exc}", logging.ERROR, str(exc))
        except OSError as exc:  # the cache's disk (full, read-only): retried as a refusal is
            why = f"cannot write the cache {self.dir}: {exc.strerror or exc}"
            self._failed(why, logging.ERROR, why)
        else:
            self._following()

    def _following(self) -> None:
        self.state, self.error, self.said = "following", None, None

    def _failed(self, line: str, level: int, error: str) -> None:
        """Note a failure; its line is logged once (DEBUG when it repeats)."""
        self.state, self.error, self.failed_at = "failed", error, time.time()
        line = f"{line}; still serving {self._serving() or 'nothing'}"
        log.log(logging.DEBUG if line == self.said else level, "%s", line)
        self.said = line

    def _poll(self) -> bool:
        """Read current.json unless its ETag is unchanged; True when a new pointer was read.
        Unreadable when it cannot be read or is not a pointer."""
        options: GetOptions = {"if_none_match": self.etag} if self.etag else {}
        try:
            result = obstore.get(self.store, contract.POINTER, options=options)
            body = bytes(result.bytes())
        except NotModifiedError:
            return False
        except (FileNotFoundError, NotFoundError):
            raise Unreadable("nothing is published there (no current.json)") from None
        except (BaseError, OSError) as exc:  # unreachable, denied: said once, tried again
            raise Unreadable(f"reading {contract.POINTER} failed: {_first_line(exc)}") from None
        finally:
            self.checked = _now()
        try:
            pointer = json.loads(body)
            if not contract.BUILD_ID.fullmatch(pointer["build_id"]) or not isinstance(
                pointer["manifest_sha256"], str
            ):
                raise ValueError(pointer["build_id"])
        except (ValueError, KeyError, TypeError):
            # Its ETag is not kept: read again at every poll until it is replaced.
            raise Unreadable(f"{contract.POINTER} is not a pointer to a build") from None
        self.etag = result.meta.get("e_tag")
        changed: bool = pointer != self.pointer
        self.pointer = pointer
        return changed

    def _serving(self) -> str | None:
        version = contract.current_version_dir(self.dir)
        return version.name if version else None

    def _installed(self, pointer: contract.Pointer) -> bool:
        """True when `current` is the pointer's version; a verified copy already in the cache
        is pointed at (another worker, or a restart, downloaded it)."""
        version = self.dir / contract.VERSIONS / pointer["build_id"]
        try:
            manifest = (version / contract.MANIFEST).read_bytes()
        except OSError:
            return False
        if hashlib.sha256(manifest).hexdigest() != pointer["manifest_sha256"]:
            return False
        if contract.current_version_dir(self.dir) != version.resolve():
            self._point_current(version)
        return True

    def _install(self, pointer: contract.Pointer) -> None:
        """Download, verify, rename into place, point `current` at it, prune."""
        build_id = pointer["build_id"]
        started = time.perf_counter()
        manifest_bytes = self._get_manifest(pointer)
        sums = self._checksums(manifest_bytes)
        versions = self.dir / contract.VERSIONS
        versions.mkdir(parents=True, exist_ok=True)
        partial = versions / f".{build_id}{PARTIAL}{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        self.state = "downloading"
        try:
            fetched = self._fill(partial, build_id, sums)
            _write_synced(partial / contract.MANIFEST, manifest_bytes)
            _fsync_dir(partial)
            final = versions / build_id
            shutil.rmtree(final, ignore_errors=True)  # an unverified leftover of that name
            os.rename(partial, final)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        self._point_current(final)
        total = sum(s["bytes"] for s in sums.values())
        log.info(
            "build %s from %s: %d files, %s bytes (%s downloaded) verified in %.1f s; "
            "serving it from the next reload",
            build_id,
            self.url,
            len(sums) + 1,
            f"{total:,}",
            f"{fetched:,}",
            time.perf_counter() - started,
        )
        self._prune(final)

    def _get_manifest(self, pointer: contract.Pointer) -> bytes:
        key = contract.remote_key(pointer["build_id"], contract.MANIFEST)
        try:
            data = bytes(obstore.get(self.store, key).bytes())
        except (FileNotFoundError, NotFoundError):
            raise Refused(f"{key} is missing (the pointer names a version not there)") from None
        except (BaseError, OSError) as exc:
            raise Refused(f"{key}: {_first_line(exc)}") from None
        if hashlib.sha256(data).hexdigest() != pointer["manifest_sha256"]:
            raise Refused(f"{key} is not the manifest current.json names (its SHA-256 differs)")
        return data

    def _checksums(self, manifest_bytes: bytes) -> dict[str, contract.FileSum]:
        """The manifest's checksums, every name a path inside the version."""
        try:
            sums = json.loads(manifest_bytes)[contract.CHECKSUMS]
            ok = isinstance(sums, dict) and all(
                _safe(rel) and isinstance(s["bytes"], int) and isinstance(s["sha256"], str)
                for rel, s in sums.items()
            )
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            raise Refused(f"the manifest has no usable {contract.CHECKSUMS}")
        return dict(sums)

    def _fill(self, partial: Path, build_id: str, sums: dict[str, contract.FileSum]) -> int:
        """Every file into `partial`: linked from a cached version holding the same bytes,
        else downloaded and verified. The bytes downloaded."""
        reusable = self._cached_files()
        abort = threading.Event()  # the first failure stops the other downloads
        with ThreadPoolExecutor(PARALLEL, thread_name_prefix="download") as pool:
            jobs = []
            for rel, expected in sums.items():
                dst = partial / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                src = reusable.get((rel, expected["sha256"], expected["bytes"]))
                if src is not None and _link(src, dst):
                    continue
                key = contract.remote_key(build_id, rel)
                jobs.append(pool.submit(self._download, key, dst, expected, abort))
            try:
                return sum(job.result() for job in jobs)
            except BaseException:
                abort.set()
                pool.shutdown(wait=True, cancel_futures=True)
                raise

    def _cached_files(self) -> dict[tuple[str, str, int], Path]:
        """(path, sha256, bytes) -> file, of the verified versions in the cache."""
        found: dict[tuple[str, str, int], Path] = {}
        for version in self._complete_versions():
            try:
                sums = json.loads((version / contract.MANIFEST).read_bytes())[contract.CHECKSUMS]
                for rel, s in sums.items():
                    found.setdefault((rel, s["sha256"], s["bytes"]), version / rel)
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
        return found

    def _download(
        self, key: str, dst: Path, expected: contract.FileSum, abort: threading.Event
    ) -> int:
        """One object into `dst`, hashed on the way; Refused unless it is the manifest's."""
        digest, size = hashlib.sha256(), 0
        try:
            result = obstore.get(self.store, key)
            with open(dst, "wb") as handle:
                for chunk in result.stream(min_chunk_size=CHUNK):
                    if self.stop.is_set() or abort.is_set():
                        raise Stopped
                    size += len(chunk)
                    if size > expected["bytes"]:
                        break
                    digest.update(chunk)
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())
        except (FileNotFoundError, NotFoundError):
            raise Refused(f"{key} is missing") from None
        except BaseError as exc:
            raise Refused(f"{key}: {_first_line(exc)}") from None
        if size != expected["bytes"] or digest.hexdigest() != expected["sha256"]:
            raise Refused(f"{key} is not the file the manifest lists (size or SHA-256 differs)")
        return size

    def _point_current(self, version: Path) -> None:
        """Swap `current` with one atomic rename, as the pipeline publishes locally."""
        tmp = self.dir / f".{contract.CURRENT}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(Path(contract.VERSIONS) / version.name)
        os.replace(tmp, self.dir / contract.CURRENT)
        _fsync_dir(self.dir)

    def _complete_versions(self) -> list[Path]:
        """The cache's verified versions, newest first (a manifest means verified)."""
        versions = self.dir / contract.VERSIONS
        if not versions.is_dir():
            return []
        return sorted(
            (v for v in versions.iterdir() if (v / contract.MANIFEST).is_file()), reverse=True
        )

    def _prune(self, current: Path) -> None:
        """Keep the newest KEEP_VERSIONS verified versions and `current`; drop the rest and
        partial downloads abandoned by a stopped process (only the lock holder downloads). A
        worker still mapping files of a deleted version keeps reading them (POSIX)."""
        keep = set(self._complete_versions()[:KEEP_VERSIONS]) | {current}
        for version in (self.dir / contract.VERSIONS).iterdir():
            leftover = PARTIAL in version.name
            if version not in keep and (leftover or (version / contract.MANIFEST).is_file()):
                shutil.rmtree(version, ignore_errors=True)


def _link(src: Path, dst: Path) -> bool:
    try:
        os.link(src, dst)
    except OSError:
        return False
    return True


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
