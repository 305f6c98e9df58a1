"""Every download from an upstream: one small class the sources share.

    async with Downloader(HttpConfig(rate_limits={"nomads.ncep.noaa.gov": RateLimit(100)})) as http:
        text = await http.get_bytes(url + ".idx", missing_ok=True)     # None when 404
        transfer = await http.download(url, dest, ranges=[(0, 1000), (5000, None)],
                                       verify=verify.grib())
        http.totals                                                     # for the summary

A file is streamed to `.NAME.part` in its destination folder (builds ignore dot-files and the
.part suffix), checked by the caller's verifier, fsync'd and renamed into place: a partial
file never becomes a build input, and a failed download leaves nothing behind. A dropped
connection is resumed with a Range request (from the same version: If-Range); transient
failures (connection errors, timeouts, 408/429/5xx) are retried with exponential backoff and
full jitter, honouring Retry-After. Requests to one host are paced by a token bucket where
configured; every request names the service, its version and the operator's contact.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from pipeline.fetch import progress as progress_mod
from pipeline.fetch.pacing import HostLimits, RateLimit, backoff_s, retry_after_s
from pipeline.fetch.ranges import MERGE_GAP, Span, merge, parse_content_range, wanted_parts
from pipeline.fetch.source import FetchError
from pipeline.fetch.state import ValidatorState
from pipeline.fetch.useragent import user_agent
from pipeline.fetch.verify import Verifier, VerifyError

log = logging.getLogger("pipeline.fetch")

CHUNK = 256 * 1024
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class HttpConfig:
    """How a Downloader behaves; the defaults suit public data servers."""

    concurrency: int = 4  # requests in flight at once, over all hosts
    connect_timeout_s: float = 20.0
    read_timeout_s: float = 60.0  # the longest silence while waiting for bytes
    attempts: int = 6  # tries of one request before it fails
    backoff_base_s: float = 1.0  # first retry within [0, 1 s], then [0, 2 s], ...
    backoff_cap_s: float = 60.0
    retry_after_cap_s: float = 300.0  # asked to wait longer: give up, "retry later"
    rate_limits: dict[str, RateLimit] = field(default_factory=dict)  # host -> limit
    merge_gap: int = MERGE_GAP  # ranges closer than this share one request
    progress: bool | None = None  # bars (True), log lines (False), auto (terminal)


@dataclass
class Transfer:
    """What one download did."""

    path: Path
    changed: bool  # False: a conditional request found it unchanged (304)
    bytes: int = 0  # bytes received over the network (retries included)
    bytes_whole: int = 0  # the whole remote file's size, when the server said it
    bytes_written: int = 0  # the file's size
    seconds: float = 0.0


@dataclass
class Totals:
    """All transfers of one Downloader, for a fetch's summary."""

    files: int = 0  # files written
    unchanged: int = 0  # conditional requests answered 304
    requests: int = 0
    bytes: int = 0  # bytes received (index files and retries included)
    bytes_whole: int = 0  # what the whole files written would have been
    seconds: float = 0.0  # from the first request to the last answer


class DownloadError(FetchError):
    """One URL could not be fetched; `status` is the last HTTP status (None: no answer)."""

    def __init__(self, message: str, retry_later: bool = False, status: int | None = None):
        super().__init__(message, retry_later=retry_later)
        self.status = status


class _Retry(Exception):
    """A transient failure of one request: try again after `wait_s` (Retry-After) or backoff."""

    def __init__(self, reason: str, wait_s: float | None = None, status: int | None = None):
        super().__init__(reason)
        self.wait_s, self.status = wait_s, status


def public_url(url: str) -> str:
    """The URL as logged: no credentials, no query string (keys travel there too)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" + ("?..." if parts.query else "")


def host_of(url: str) -> str:
    """ "host" or "host:port": how rate limits name a server."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or "")


class Downloader:
    """An HTTP client session with the rules above; use as `async with Downloader() as d`."""

    def __init__(self, config: HttpConfig | None = None):
        self.config = config or HttpConfig()
        self.totals = Totals()
        self._limits = HostLimits(self.config.rate_limits)
        self._session: aiohttp.ClientSession | None = None
        self._slots: asyncio.Semaphore | None = None  # requests in flight
        self._transfers: asyncio.Semaphore | None = None  # files being downloaded
        self._started: float | None = None
        self._progress = progress_mod.Progress(self.config.progress)

    async def __aenter__(self) -> Downloader:
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.config.connect_timeout_s, sock_read=self.config.read_timeout_s
        )
        self._session = aiohttp.ClientSession(
            timeout=timeout,
            headers={"User-Agent": user_agent()},
            auto_decompress=False,
            connector=aiohttp.TCPConnector(limit=self.config.concurrency),
        )
        self._slots = asyncio.Semaphore(self.config.concurrency)
        self._transfers = asyncio.Semaphore(self.config.concurrency)
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self._session.close()

    # ---- small objects -----------------------------------------------------------------

    async def exists(self, url: str, headers: dict[str, str] | None = None) -> bool:
        """Whether the server has `url` (HEAD: 2xx yes, 404/410 no, anything else fails)."""

        async def once() -> bool:
            async with self._request("HEAD", url, headers or {}) as resp:
                if resp.status in (404, 410):
                    return False
                self._raise_for(resp, url)
                return True

        return await self._retrying(url, once)

    async def size(self, url: str, headers: dict[str, str] | None = None) -> int | None:
        """The remote file's length from HEAD (None when missing or not said)."""

        async def once() -> int | None:
            async with self._request("HEAD", url, headers or {}) as resp:
                if resp.status in (404, 410):
                    return None
                self._raise_for(resp, url)
                length = resp.headers.get("Content-Length", "")
                return int(length) if length.isdigit() else None

        return await self._retrying(url, once)

    async def get_bytes(
        self, url: str, headers: dict[str, str] | None = None, missing_ok: bool = False
    ) -> bytes | None:
        """A small object's whole body in memory (an index, a listing); None for a 404/410
        when `missing_ok`."""

        async def once() -> bytes | None:
            async with self._request("GET", url, headers or {}) as resp:
                if resp.status in (404, 410) and missing_ok:
                    return None
                self._raise_for(resp, url)
                body = bytearray()
                try:
                    async for chunk in resp.content.iter_chunked(CHUNK):
                        body += chunk
                        self.totals.bytes += len(chunk)
                except (
                    TimeoutError,
                    aiohttp.ClientPayloadError,
                    aiohttp.ClientConnectionError,
                ) as exc:
                    raise _Retry(f"body cut short: {exc.__class__.__name__}") from None
                return bytes(body)

        return await self._retrying(url, once)

    # ---- files -------------------------------------------------------------------------

    async def download(
        self,
        url: str,
        dest: Path,
        *,
        ranges: list[tuple[int, int | None]] | None = None,
        verify: Verifier | None = None,
        conditional: bool = False,
        headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> Transfer:
        """Fetch `url` (or only its byte `ranges`, (start, stop) with stop exclusive or None
        for the end, written in order into one file) into `dest`, atomically.

        With `conditional`, a file already at `dest` is revalidated (If-None-Match /
        If-Modified-Since from its sidecar state) and kept when the server answers 304. A body
        longer than `max_bytes` (said or sent) fails at once, not retried: an endless stream
        (a camera's MJPEG) or an outsized file is not waited for."""
        # Many files may be asked for at once: only `concurrency` of them run (and show bars).
        async with self._transfers:
            return await self._download(
                url, Path(dest), ranges, verify, conditional, headers or {}, max_bytes
            )

    async def _download(
        self,
        url: str,
        dest: Path,
        ranges,
        verify: Verifier | None,
        conditional: bool,
        headers: dict[str, str],
        max_bytes: int | None = None,
    ) -> Transfer:
        """download() inside a transfer slot."""
        spans = merge(ranges, self.config.merge_gap) if ranges else [Span(0, None, ((0, None),))]
        job = _Job(url, dest, spans, dict(headers), ranges is not None, max_bytes=max_bytes)
        state = ValidatorState(job.dest) if conditional else None
        if state is not None and job.dest.exists():
            job.conditional = state.request_headers(url)
        started = time.monotonic()
        job.dest.parent.mkdir(parents=True, exist_ok=True)
        part = job.dest.parent / f".{job.dest.name}.part"
        bar = self._progress.start(job.dest.name, sum(s.wanted_bytes or 0 for s in spans))
        try:
            for attempt in range(self.config.attempts):
                changed = await self._retrying(url, lambda: self._fill(job, part, bar))
                if not changed:
                    break
                try:
                    if verify is not None:
                        await asyncio.to_thread(verify, part)
                    break
                except VerifyError as exc:
                    job.restart()
                    if attempt + 1 == self.config.attempts:
                        raise DownloadError(
                            f"{public_url(url)}: {exc} (after {self.config.attempts} attempts)"
                        ) from None
                    log.warning("%s: %s; downloading again", public_url(url), exc)
                    await asyncio.sleep(
                        backoff_s(attempt, self.config.backoff_base_s, self.config.backoff_cap_s)
                    )
            if changed:
                _commit(part, job.dest)
                if state is not None:
                    state.save(url, job.validators)
        finally:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
            bar.close()
        transfer = Transfer(
            job.dest, changed, job.moved, job.whole or 0, job.written, time.monotonic() - started
        )
        self._account(transfer)
        self._progress.done(transfer, partial=job.partial)
        return transfer

    async def _fill(self, job: _Job, part: Path, bar) -> bool:
        """One request towards the file: continue where the last one stopped; False when the
        server says the file held is unchanged. Raises _Retry to be called again."""
        mode = "r+b" if part.exists() and job.written else "wb"
        with open(part, mode) as out:
            out.seek(job.written)
            out.truncate()
            while job.index < len(job.spans):
                if not await self._fill_span(job, out, bar):
                    return False
            out.flush()
            os.fsync(out.fileno())
        return True

    async def _fill_span(self, job: _Job, out, bar) -> bool:
        """Request the rest of the current span and write its wanted bytes."""
        span = job.spans[job.index]
        offset = span.start + job.pos
        headers = {**job.headers, **job.conditional}
        if offset > 0 or span.stop is not None:
            headers["Range"] = span.header(offset)
            if_range = _if_range(job.validators)
            if if_range and (offset > span.start or job.index > 0):
                headers["If-Range"] = if_range  # the rest must come from the same version
        async with self._request("GET", job.url, headers) as resp:
            if resp.status == 304 and job.conditional:
                return False
            first = self._body_start(job, resp, offset)
            await self._stream(job, span, resp, first, out, bar)
        job.conditional = {}
        return True

    def _body_start(self, job: _Job, resp: aiohttp.ClientResponse, offset: int) -> int:
        """The remote offset of the response's first byte; restarts the job when the remote
        file changed under it."""
        if resp.status == 416:
            raise DownloadError(
                f"{public_url(job.url)}: range {offset}- not satisfiable "
                f"({resp.headers.get('Content-Range', 'no Content-Range')})",
                status=416,
            )
        self._raise_for(resp, job.url)
        seen = {k: resp.headers[k] for k in ("ETag", "Last-Modified") if k in resp.headers}
        if job.validators and seen and seen != job.validators:
            job.restart()  # a new version upstream: what was written is of the old one
            job.validators = seen
            raise _Retry("the remote file changed during the download", wait_s=0.0)
        job.validators = seen
        if resp.status == 206:
            got = parse_content_range(resp.headers.get("Content-Range"))
            if got is None or got[0] > offset:
                raise _Retry(f"bad Content-Range {resp.headers.get('Content-Range')!r}")
            job.whole = got[2] or job.whole
            return got[0]
        if not job.ranged:  # a whole-file request: its length is the whole
            job.whole = resp.content_length or job.whole
        return 0  # 200: the server ignored the Range; skip to where we are

    async def _stream(self, job: _Job, span: Span, resp, first: int, out, bar) -> None:
        """Read the body, write the wanted bytes; stop at the span's end."""
        position = first
        if job.max_bytes is not None and (resp.content_length or 0) > job.max_bytes:
            raise DownloadError(
                f"{public_url(job.url)}: {resp.content_length:,} bytes, over "
                f"the limit of {job.max_bytes:,}"
            )
        try:
            async for chunk in resp.content.iter_chunked(CHUNK):
                job.moved += len(chunk)
                self.totals.bytes += len(chunk)
                here = span.start + job.pos
                if position + len(chunk) > here:  # bytes before `here` are held already
                    lo = max(here, position)
                    view = memoryview(chunk)[lo - position :]
                    if span.stop is not None:
                        view = view[: max(0, span.stop - lo)]
                    for i, j in wanted_parts(span, lo, len(view)):
                        out.write(view[i:j])
                        job.written += j - i
                        bar.update(j - i)
                    job.pos += len(view)
                position += len(chunk)
                if job.max_bytes is not None and job.written > job.max_bytes:
                    raise DownloadError(
                        f"{public_url(job.url)}: more than {job.max_bytes:,} bytes, over the limit"
                    )
                if span.stop is not None and span.start + job.pos >= span.stop:
                    break
        except (TimeoutError, aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
            job.partial = True
            raise _Retry(
                f"connection lost after {job.pos:,} bytes of the range ({exc.__class__.__name__})"
            ) from None
        if span.stop is not None and span.start + job.pos < span.stop:
            job.partial = True
            raise _Retry(f"body ended {span.stop - span.start - job.pos:,} bytes early")
        if span.stop is not None:
            resp.close()  # the rest of an ignored Range is not wanted: drop it
        job.index, job.pos = job.index + 1, 0

    # ---- requests ----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _request(self, method: str, url: str, headers: dict[str, str]):
        """One request, inside a concurrency slot and the host's rate limit."""
        if self._started is None:
            self._started = time.monotonic()
        async with self._slots:
            await self._limits.take(host_of(url))
            self.totals.requests += 1
            try:
                async with self._session.request(
                    method, url, headers=headers, allow_redirects=True
                ) as resp:
                    yield resp
            except (TimeoutError, aiohttp.ClientConnectionError) as exc:
                raise _Retry(f"{exc.__class__.__name__}: {exc}") from None
            finally:
                self.totals.seconds = time.monotonic() - self._started

    def _raise_for(self, resp: aiohttp.ClientResponse, url: str) -> None:
        """Nothing for 2xx; _Retry for a transient status, DownloadError for the rest."""
        if 200 <= resp.status < 300:
            return
        if resp.status in RETRY_STATUSES:
            wait = (
                retry_after_s(resp.headers.get("Retry-After"))
                if resp.status in (429, 503)
                else None
            )
            raise _Retry(f"HTTP {resp.status} {resp.reason}", wait_s=wait, status=resp.status)
        raise DownloadError(
            f"{public_url(url)}: HTTP {resp.status} {resp.reason}", status=resp.status
        )

    async def _retrying(self, url: str, once):
        """Call `once` until it succeeds, sleeping between tries; DownloadError at the end."""
        cfg = self.config
        for attempt in range(cfg.attempts):
            try:
                return await once()
            except _Retry as exc:
                if attempt + 1 == cfg.attempts:
                    raise DownloadError(
                        f"{public_url(url)}: {exc} (after {cfg.attempts} attempts)",
                        retry_later=True,
                        status=exc.status,
                    ) from None
                if exc.wait_s is not None and exc.wait_s > cfg.retry_after_cap_s:
                    raise DownloadError(
                        f"{public_url(url)}: {exc}; the server asks to wait {exc.wait_s:.0f} s",
                        retry_later=True,
                        status=exc.status,
                    ) from None
                delay = backoff_s(attempt, cfg.backoff_base_s, cfg.backoff_cap_s)
                if exc.wait_s is not None:
                    delay = max(delay, exc.wait_s)
                log.info(
                    "%s: %s; try %d of %d in %.1f s",
                    public_url(url),
                    exc,
                    attempt + 2,
                    cfg.attempts,
                    delay,
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _account(self, transfer: Transfer) -> None:
        if transfer.changed:
            self.totals.files += 1
            self.totals.bytes_whole += transfer.bytes_whole or transfer.bytes_written
        else:
            self.totals.unchanged += 1


@dataclass
class _Job:
    """One download's progress: which span, how far into it, what is written."""

    url: str
    dest: Path
    spans: list[Span]
    headers: dict[str, str]
    ranged: bool
    conditional: dict[str, str] = field(default_factory=dict)
    validators: dict[str, str] = field(default_factory=dict)
    index: int = 0  # the span being fetched
    pos: int = 0  # remote bytes of that span consumed
    written: int = 0
    moved: int = 0
    whole: int | None = None
    partial: bool = False  # some request ended early (resumed)
    max_bytes: int | None = None

    def restart(self) -> None:
        """Start over from the first byte (verification failed, or the file changed)."""
        self.index = self.pos = self.written = 0


def _if_range(validators: dict[str, str]) -> str | None:
    """The validator for If-Range: a strong ETag, else Last-Modified (weak ones may not)."""
    etag = validators.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return validators.get("Last-Modified")


def _commit(part: Path, dest: Path) -> None:
    """Rename the checked, fsync'd file into place and make the rename itself durable."""
    os.replace(part, dest)
    fd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
