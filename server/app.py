"""Application factory: routes, the middleware, and resources opened once per process."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
from aiohttp import web

from server import apidocs
from server.areas import AREAS, loaders
from server.artifacts.store import UNPUBLISHED, Store
from server.config import Config
from server.http.errors import ApiError
from server.http.middleware import (
    CONFIG,
    KEYS,
    LIMITER,
    STORE,
    api_middleware,
    endpoint,
    fixed_etag,
)
from server.observe.requests import OBSERVER, Observer, observe_middleware
from server.openapi import document as openapi
from server.security.keys import KeyStore
from server.security.ratelimit import RateLimiter
from server.security.ratelimit_redis import SharedRateLimiter

log = logging.getLogger("server")


def create_app(config: Config) -> web.Application:
    """Build the application for one configuration; nothing is opened until startup."""
    app = web.Application(
        middlewares=[observe_middleware, api_middleware], client_max_size=64 * 1024
    )
    app[CONFIG] = config
    app[STORE] = Store(config.build_dir, loaders(), config.load_retry_s)
    metrics = None
    if config.metrics_enabled:  # prometheus_client is imported only then
        from server.observe import metrics as metrics_module

        metrics = metrics_module.setup(app)
    app[OBSERVER] = Observer(config.trust_request_id, metrics)
    # Loaded at startup (_watch_build), where a fault is a log line: the file may have changed
    # since `python -m server` checked it, and a worker must not die of that with a traceback.
    app[KEYS] = KeyStore(config.keys_file, load=False)
    app[LIMITER] = RateLimiter()
    app.cleanup_ctx.append(_executor)
    if config.build_from:
        app.cleanup_ctx.append(_follow_remote)
    app.cleanup_ctx.append(_watch_build)
    if config.rate_limit_redis_url:
        app.cleanup_ctx.append(_shared_limiter)
    for area in AREAS:
        if area.setup is not None:
            area.setup(app)
    app.router.add_routes(
        [
            web.get("/health", health),
            web.get("/ready", ready),
            web.get("/openapi.json", openapi_document),
            *apidocs.routes(),
            *(route for area in AREAS for route in area.routes()),
        ]
    )
    return app


def _blocking_threads() -> int:
    """One thread per usable CPU, 2 to 8: at least 2 so that a reload does not hold up every
    long search, and few, as the work holds the GIL for much of its time and each thread keeps its
    own malloc arena and scratch memory in this worker (asyncio's default: CPUs + 4, up to 32)."""
    usable = getattr(os, "sched_getaffinity", None)
    cpus = len(usable(0)) if usable else os.cpu_count() or 1
    return max(2, min(8, cpus))


class _ContextExecutor(ThreadPoolExecutor):
    """Runs each call in its caller's context, so a search's log lines carry the request id
    (run_in_executor, unlike asyncio.to_thread, does not pass it on)."""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


async def _executor(app: web.Application) -> AsyncIterator[None]:
    """The threads blocking work (long searches, area loads) runs in."""
    executor = _ContextExecutor(max_workers=_blocking_threads(), thread_name_prefix="blocking")
    asyncio.get_running_loop().set_default_executor(executor)
    yield
    # Queued work is dropped; asyncio.run still joins the threads (shutdown_default_executor).
    executor.shutdown(wait=False, cancel_futures=True)


async def _watch_build(app: web.Application) -> AsyncIterator[None]:
    """Load the published build in the background, then follow newly published versions and
    changes of the keys file."""
    config, store, keys = app[CONFIG], app[STORE], app[KEYS]
    keys_failing = _follow_keys(keys, False)

    async def watch() -> None:
        nonlocal keys_failing
        while True:
            try:
                await store.refresh()
            except Exception:  # keep watching: the next publish may fix it
                log.exception("reloading the build failed")
            keys_failing = _follow_keys(keys, keys_failing)
            await asyncio.sleep(config.reload_interval_s)

    if config.preload:
        await store.refresh()
    task = asyncio.create_task(watch())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


FOLLOWER = web.AppKey("follower", Any)


async def _follow_remote(app: web.Application) -> AsyncIterator[None]:
    """Follow the builds published to object storage into the build directory (a thread of
    its own: a download must not hold up the searches' threads)."""
    from server.artifacts.remote import Follower, Stopped

    config = app[CONFIG]
    follower = Follower(config.build_from, config.build_dir, config.load_retry_s)
    app[FOLLOWER] = follower
    thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="follow")
    loop = asyncio.get_running_loop()

    async def follow() -> None:
        while True:
            try:
                await loop.run_in_executor(thread, follower.check)
            except Stopped:
                return
            except Exception:  # keep following: the next publish may fix it
                log.exception("following %s failed", follower.url)
            await asyncio.sleep(config.poll_interval_s)

    task = asyncio.create_task(follow())
    yield
    follower.stop.set()  # a download under way stops at its next chunk
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    thread.shutdown(wait=False, cancel_futures=True)


def _follow_keys(keys: KeyStore, failing: bool) -> bool:
    """Re-read the keys file if it changed; True while it fails. A failure is one line, once
    (KeyStore raises each once), never a traceback every tick; nothing stops the watch."""
    try:
        loaded = keys.refresh()
    except FileNotFoundError:
        log.error("the keys file %s was removed: no key is valid until it is back", keys.path)
        return True
    except Exception as exc:  # noqa: BLE001 (the watch must go on)
        log.error("reloading the keys file failed, the keys loaded before stay in use: %s", exc)
        return True
    if loaded and failing:
        log.info(
            "the keys file %s is loaded again (%d key%s)",
            keys.path,
            keys.count,
            "" if keys.count == 1 else "s",
        )
    return failing and not loaded


async def _shared_limiter(app: web.Application) -> AsyncIterator[None]:
    """Rate limits kept in Redis for the life of the application."""
    limiter = SharedRateLimiter(app[CONFIG].rate_limit_redis_url)
    app[LIMITER] = limiter
    yield
    await limiter.close()


@endpoint(limited=False, auth="none")
async def health(request: web.Request) -> web.Response:
    """GET /health: liveness."""
    return web.Response(body=b'{"status":"ok"}', content_type="application/json")


@endpoint(limited=False, auth="none")
async def ready(request: web.Request) -> web.Response:
    """GET /ready: 200 once a version is published and every area present in it is loaded."""
    is_ready, body = request.app[STORE].readiness()
    follower = request.app.get(FOLLOWER)
    if follower is not None:
        body["remote"] = follower.status()
    if is_ready:
        return web.Response(body=orjson.dumps(body), content_type="application/json")
    raise ApiError(503, f"not ready: {_waiting(body)}", headers={"Retry-After": "1"}, extra=body)


def _waiting(body: dict) -> str:
    """What readiness waits for, in words, for the 503's detail."""
    if body["state"] == UNPUBLISHED:
        return "no version is published"
    waiting = sorted(a for a, s in body["areas"].items() if s["state"] not in ("loaded", "absent"))
    return f"{', '.join(waiting) or 'build'} {body['state']}"


@endpoint(limited=False, auth="none", max_age=3600, fixed_etag=fixed_etag(openapi.document_bytes()))
async def openapi_document(request: web.Request) -> web.Response:
    """GET /openapi.json: the OpenAPI 3.1 description of every endpoint."""
    return web.Response(body=openapi.document_bytes(), content_type="application/json")
