"""A local HTTP stand-in for an upstream data server, with faults to inject per path.

    with StandIn() as server:                       # aiohttp on 127.0.0.1:<ephemeral port>
        server.put("/data/file.grib2", payload)     # bytes, or a Blob served lazily
        server.fault("/data/file.grib2", Status(503, retry_after="1"), Drop(after=1000))
        ...  fetch server.url + "/data/file.grib2" ...
        server.hits("/data/file.grib2")             # what arrived: time, range, status, bytes

Paths under a prefix given to `route(prefix, answer)` are answered by `answer(request)` first
(an API with query parameters, keys, a required header): it returns a Blob or bytes, served as
a file is, or an aiohttp response sent as it is, or None to fall through to the files.

It serves GET and HEAD like a static file server or S3: one byte range per request (206 with
Content-Range; 416 past the end; a list of ranges is refused with 400 as some mirrors do),
ETag and Last-Modified with If-None-Match / If-Modified-Since (304) and If-Range. Faults queue
per path, one per request, in order (`always=True`: every request); times in `hits` are taken
on the server (time.monotonic), so tests assert on what the server saw, not on sleeps.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import email.utils
import hashlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

SEND_CHUNK = 64 * 1024
_INVERT = bytes(255 - i for i in range(256))


@dataclass(frozen=True)
class Blob:
    """A served file: its size, its bytes by range (produced on demand), its validators."""

    size: int
    read: Callable[[int, int], bytes]  # (start, stop) -> bytes
    etag: str
    last_modified: float  # Unix time

    @classmethod
    def of(cls, data: bytes, last_modified: float | None = None) -> Blob:
        """A file held in memory."""
        return cls(
            len(data),
            lambda a, b: data[a:b],
            '"' + hashlib.sha1(data).hexdigest()[:16] + '"',
            time.time() // 1 if last_modified is None else last_modified,
        )

    @classmethod
    def joined(cls, parts: list[bytes | int], tag: str, last_modified: float | None = None) -> Blob:
        """A file made of `parts` back to back, an int being that many padding bytes (never
        held in memory): whole files of hundreds of MB cost only their real parts."""
        starts, position = [], 0
        for part in parts:
            starts.append(position)
            position += part if isinstance(part, int) else len(part)

        def read(a: int, b: int) -> bytes:
            out = bytearray()
            i = max(0, bisect.bisect_right(starts, a) - 1)
            while i < len(parts) and starts[i] < b:
                part, start = parts[i], starts[i]
                size = part if isinstance(part, int) else len(part)
                lo, hi = max(a, start), min(b, start + size)
                if lo < hi:
                    out += (
                        bytes(hi - lo) if isinstance(part, int) else part[lo - start : hi - start]
                    )
                i += 1
            return bytes(out)

        return cls(
            position, read, f'"{tag}"', time.time() // 1 if last_modified is None else last_modified
        )


# ---- faults ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    """Answer with this status (and Retry-After, seconds or an HTTP date) instead."""

    status: int
    retry_after: str | None = None


@dataclass(frozen=True)
class Drop:
    """Send the headers and `after` body bytes, then reset the connection (RST)."""

    after: int


@dataclass(frozen=True)
class Truncate:
    """Promise the whole length, send `after` bytes, then close the connection cleanly."""

    after: int


@dataclass(frozen=True)
class Corrupt:
    """Send the right number of bytes, every one of them inverted (nothing decodes)."""


@dataclass(frozen=True)
class Stall:
    """Say nothing for `seconds` (a read timeout's test), then answer normally."""

    seconds: float


@dataclass(frozen=True)
class IgnoreRange:
    """Answer a Range request with the whole file (200), as some servers do."""


NOT_FOUND = Status(404)
Fault = Status | Drop | Truncate | Corrupt | Stall | IgnoreRange


@dataclass
class Hit:
    """One request as the server saw it."""

    t: float  # time.monotonic() when it arrived
    wall: float  # time.time() then (for Retry-After as an HTTP date)
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0
    sent: int = 0  # body bytes written
    fault: Fault | None = None

    @property
    def range(self) -> str | None:
        return self.headers.get("Range")


@dataclass
class _Plan:
    """What one request gets: its status, headers and body bytes [start, stop)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    start: int = 0
    stop: int = 0


class StandIn:
    """The server; runs its own event loop in a thread while inside `with`."""

    def __init__(self) -> None:
        self.files: dict[str, Blob] = {}
        self._faults: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._always: dict[str, Fault] = {}
        self._hits: list[Hit] = []
        self._lock = threading.Lock()
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closing: asyncio.Event | None = None
        self.on_hit: Callable[[Hit], None] | None = None  # called (server thread) on arrival
        self._routes: list[tuple[str, Callable]] = []
        self.active = self.max_active = 0  # requests being answered

    # ---- content and faults (callable from the test's thread) --------------------------

    def put(self, path: str, content: bytes | Blob) -> None:
        """Serve `content` at `path` (from now on)."""
        self.files[path] = content if isinstance(content, Blob) else Blob.of(content)

    def route(
        self,
        prefix: str,
        answer: Callable[[web.Request], Blob | bytes | web.StreamResponse | None],
    ) -> None:
        """Answer requests of paths under `prefix` with `answer(request)` (see the module's
        docstring); called on the server's thread, after any fault of the path."""
        self._routes.append((prefix, answer))

    def remove(self, path: str) -> None:
        """Stop serving `path` (404 from now on)."""
        self.files.pop(path, None)

    def fault(self, path: str, *faults: Fault, always: bool = False) -> None:
        """Queue faults for the next requests of `path` (or apply one to every request)."""
        with self._lock:
            if always:
                (
                    self._always.__setitem__(path, faults[0])
                    if faults
                    else self._always.pop(path, None)
                )
            else:
                self._faults[path].extend(faults)

    def hits(self, path: str | None = None, prefix: str | None = None) -> list[Hit]:
        """Requests so far (of `path`, or under `prefix`), in arrival order."""
        with self._lock:
            hits = list(self._hits)
        return [
            h
            for h in hits
            if (path is None or h.path == path) and (prefix is None or h.path.startswith(prefix))
        ]

    def clear_hits(self) -> None:
        with self._lock:
            self._hits.clear()

    def bytes_sent(self, prefix: str = "/") -> int:
        return sum(h.sent for h in self.hits(prefix=prefix))

    # ---- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> StandIn:
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._serve, args=(ready, failure), daemon=True, name="stand-in"
        )
        self._thread.start()
        ready.wait(timeout=30)
        if failure or not self.url:
            raise RuntimeError(f"stand-in did not start: {failure}")
        return self

    def __exit__(self, *exc_info) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
        self._thread.join(timeout=30)

    def _serve(self, ready: threading.Event, failure: list) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main(ready))
        except BaseException as exc:  # noqa: BLE001 (reported to __enter__, which waits)
            failure.append(exc)
            ready.set()
        finally:
            loop.close()

    async def _main(self, ready: threading.Event) -> None:
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        ready.set()
        try:
            await self._closing.wait()
        finally:
            await runner.cleanup()

    # ---- requests ----------------------------------------------------------------------

    def _next_fault(self, path: str) -> Fault | None:
        with self._lock:
            if self._faults.get(path):
                return self._faults[path].popleft()
            return self._always.get(path)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        hit = Hit(
            time.monotonic(), time.time(), request.method, request.path, dict(request.headers)
        )
        with self._lock:
            self._hits.append(hit)
        if self.on_hit is not None:
            self.on_hit(hit)
        fault = hit.fault = self._next_fault(request.path)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            return await self._respond(request, hit, fault)
        except ConnectionResetError:  # the client went away (it timed out): nothing to do
            raise asyncio.CancelledError from None
        finally:
            self.active -= 1

    async def _respond(
        self, request: web.Request, hit: Hit, fault: Fault | None
    ) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            return self._answer(hit, web.Response(status=405))
        if isinstance(fault, Stall):
            try:
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
            except TimeoutError:
                pass
        if isinstance(fault, Status):
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return self._answer(hit, web.Response(status=fault.status, headers=headers))
        blob = self.files.get(request.path)
        for prefix, answer in self._routes:
            if request.path.startswith(prefix):
                found = answer(request)
                if isinstance(found, web.StreamResponse):
                    return self._answer(hit, found)
                if found is not None:
                    blob = found if isinstance(found, Blob) else Blob.of(found)
                    break
        if blob is None:
            return self._answer(hit, web.Response(status=404))
        plan = _plan(request, blob, ignore_range=isinstance(fault, IgnoreRange))
        if plan.status not in (200, 206):
            return self._answer(hit, web.Response(status=plan.status, headers=plan.headers))
        return await self._send(request, hit, blob, plan, fault)

    def _answer(self, hit: Hit, response: web.StreamResponse) -> web.StreamResponse:
        hit.status = response.status
        return response

    async def _send(
        self, request: web.Request, hit: Hit, blob: Blob, plan: _Plan, fault: Fault | None
    ) -> web.StreamResponse:
        """Stream bytes [start, stop), or the part a Drop/Truncate fault lets through."""
        response = web.StreamResponse(status=plan.status, headers=plan.headers)
        response.content_length = plan.stop - plan.start
        hit.status = plan.status
        await response.prepare(request)
        if request.method == "HEAD":
            return response
        limit = plan.stop
        if isinstance(fault, (Drop, Truncate)):
            limit = min(plan.stop, plan.start + fault.after)
        position = plan.start
        while position < limit:
            data = blob.read(position, min(limit, position + SEND_CHUNK))
            if isinstance(fault, Corrupt):
                data = data.translate(_INVERT)
            await response.write(data)
            hit.sent += len(data)
            position += len(data)
        if limit < plan.stop:
            _cut(request, reset=isinstance(fault, Drop))
            raise asyncio.CancelledError  # aiohttp then stops this request quietly
        await response.write_eof()
        return response


def _cut(request: web.Request, reset: bool) -> None:
    """Close the connection mid-body: an RST (linger 0) for a drop, a FIN for a truncation."""
    transport = request.transport
    if transport is None:
        return
    if reset:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()


def _plan(request: web.Request, blob: Blob, ignore_range: bool) -> _Plan:
    """Status, headers and byte range for a GET/HEAD of `blob`."""
    headers = {
        "ETag": blob.etag,
        "Accept-Ranges": "bytes",
        "Last-Modified": email.utils.formatdate(blob.last_modified, usegmt=True),
    }
    if _not_modified(request, blob):
        return _Plan(304, headers)
    wanted = request.headers.get("Range")
    if_range = request.headers.get("If-Range")
    if if_range and if_range not in (blob.etag, headers["Last-Modified"]):
        wanted = None  # changed since the client's first part: the whole new file
    if not wanted or ignore_range:
        return _Plan(200, headers, 0, blob.size)
    unit, _, spec = wanted.partition("=")
    if unit.strip() != "bytes" or "," in spec:
        return _Plan(400, {"X-Stand-In": "one byte range per request"})
    first, _, last = spec.strip().partition("-")
    if not first:  # a suffix: the last N bytes
        start, stop = max(0, blob.size - int(last)), blob.size
    else:
        start = int(first)
        stop = min(blob.size, int(last) + 1) if last else blob.size
    if start >= blob.size or stop <= start:
        return _Plan(416, {**headers, "Content-Range": f"bytes */{blob.size}"})
    headers["Content-Range"] = f"bytes {start}-{stop - 1}/{blob.size}"
    return _Plan(206, headers, start, stop)


def _not_modified(request: web.Request, blob: Blob) -> bool:
    """If-None-Match (wins when present) or If-Modified-Since says the client's copy is current."""
    match = request.headers.get("If-None-Match")
    if match is not None:
        return blob.etag in [tag.strip() for tag in match.split(",")] or match.strip() == "*"
    since = request.headers.get("If-Modified-Since")
    if since:
        try:
            return email.utils.parsedate_to_datetime(since).timestamp() >= blob.last_modified
        except (TypeError, ValueError):
            return False
    return False
