"""The outer middleware: every request's id, its Server-Timing, its access log line and, when
metrics are on, its count and duration (docs/operations/production.md#requests)."""

from __future__ import annotations

import logging
import os
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web
from multidict import istr

from server.http.middleware import AUTHORISED, REQUEST_ID, Handler

if TYPE_CHECKING:  # imported at run time only when metrics are on (it imports prometheus)
    from server.observe.metrics import Metrics

access_log = logging.getLogger("server.access")

# The id of the request being handled, for every log line written while handling it (the
# blocking threads run each call in the caller's context: server.app._executor).
CURRENT_REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
# What a proxy's id may look like (a UUID, 32 hex digits, base64, "Root=1-..."): no spaces,
# quotes, commas or control characters, so that it cannot forge a log line or a header.
TRUSTED_ID = re.compile(r"[A-Za-z0-9._:+/=-]{1,128}")
# As aiohttp keeps header names: setting them then skips folding the case.
X_REQUEST_ID, SERVER_TIMING = istr("X-Request-Id"), istr("Server-Timing")


@dataclass(frozen=True)
class Observer:
    """What the outer middleware needs, decided once per application."""

    trust_request_id: bool = False
    metrics: Metrics | None = None  # None while metrics are off


OBSERVER = web.AppKey("observer", Observer)


class _RandomIds:
    """Made ids: 16 random hex digits (the shape of the 500 answers' request_id before), cut
    from 4 KiB of os.urandom at a time: a call each would cost a system call per request.
    Random, not a counter: a counter would tell clients how busy the server is."""

    def __init__(self) -> None:
        self._pool, self._at = b"", 0

    def __call__(self) -> str:
        if self._at >= len(self._pool):
            self._pool, self._at = os.urandom(4096), 0
        self._at += 8
        return self._pool[self._at - 8 : self._at].hex()


new_request_id = _RandomIds()  # called from the event loop's thread only


def request_id(request: web.Request, trusted: bool) -> str:
    """The proxy's X-Request-Id when it is trusted and well formed, else a made one."""
    if trusted:
        given = request.headers.get("X-Request-Id")
        if given and TRUSTED_ID.fullmatch(given):
            return given
    return new_request_id()


@web.middleware
async def observe_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Give the request its id, time it, and add X-Request-Id and Server-Timing to its answer."""
    observer = request.app[OBSERVER]
    request[REQUEST_ID] = rid = request_id(request, observer.trust_request_id)
    token = CURRENT_REQUEST_ID.set(rid)
    started = time.perf_counter()
    try:
        # api_middleware answers every failure; only a cancelled request ends here unanswered.
        response = await handler(request)
        elapsed = time.perf_counter() - started
        headers = response.headers
        headers[X_REQUEST_ID] = rid
        # The application's own time (keys, limits, the handler, caching headers); neither
        # reading the request nor sending (or compressing) the answer is in it.
        headers[SERVER_TIMING] = f"app;dur={elapsed * 1e3:.3f}"
        if observer.metrics is not None:
            observer.metrics.observe(request, response.status, elapsed)
        if access_log.isEnabledFor(logging.INFO):
            _access_line(request, response.status, elapsed)
        return response
    finally:
        CURRENT_REQUEST_ID.reset(token)


def _access_line(request: web.Request, status: int, elapsed: float) -> None:
    """One line per request; it names the key, never the key itself (nor the query)."""
    key = request.get(AUTHORISED)  # set once the key is known (also for a 429)
    name = key.name if key else "-"
    access_log.info(
        "%s %s %d key=%s %.1fms",
        request.method,
        request.path,
        status,
        name,
        elapsed * 1e3,
        extra={
            "http.request.method": request.method,
            "url.path": request.path,
            "http.response.status_code": status,
            "user.name": name,
            "event.duration": round(elapsed * 1e9),
        },
    )
