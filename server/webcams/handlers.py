"""Webcam endpoints (docs/api/webcams.md): list, detail, token, clusters, snapshots, player."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from contract import Webcams as W
from server.config import Config
from server.http import params
from server.http.errors import ApiError
from server.http.middleware import AUTHORISED, CONFIG, KEYS, STORE, endpoint
from server.security.keys import ApiKey, token_subject
from server.webcams import embed as webcams_embed
from server.webcams import images, queries
from server.webcams.data import PROVIDERS, WebcamsData, load
from server.webcams.links import BASES, EMBED_PATH, Links
from server.webcams.secrets import ensure_secrets_file, parse_secrets
from server.webcams.tokens import CLUSTERS, EMBED, PERIOD_S, SIGNER, TTL_S, Signer, TokenError

__all__ = ["load", "routes", "setup"]
log = logging.getLogger("server.webcams")
NAME = W.AREA
# The path segment of a public id: aiohttp's default ([^{}/]+) but the fixed paths' words.
PUBLIC_ID = "{public_id:(?!(?:" + "|".join(W.RESERVED_IDS) + ")$)[^{}/]+}"
# Lists and details hold links signed for a period: cacheable until the period ends.
LINKED = dict(area=NAME, max_age=PERIOD_S, period_s=PERIOD_S)
# Answers with many clusters rendered one by one (mostly webcams of one each) are rendered off
# the event loop.
HEAVY_CLUSTERS = 1000


def _data(request: web.Request) -> WebcamsData:
    return request.app[STORE].require(NAME).data


def _json(body: bytes, links: Links) -> web.Response:
    return web.Response(body=body, content_type="application/json", headers=links.vary)


def _row(data: WebcamsData, raw_id: str) -> int:
    public_id = queries.public_id(raw_id)
    row = data.catalog.row_of.get(public_id)
    if row is None:
        raise ApiError(404, f"no webcam with public_id {public_id}")
    return row


def _links(request: web.Request, data: WebcamsData) -> Links:
    return Links(request, data, request.app[SIGNER])


@endpoint(auth="key", **LINKED)
async def list_webcams(request: web.Request) -> web.Response:
    """GET /webcams: one page of webcams matching every filter."""
    query = queries.list_query(request.query)
    data = _data(request)
    rows, total = data.catalog.select(query)
    links = _links(request, data)
    items = links.webcams(rows.tolist())
    return _json(
        links.resolve(b'{"results":[%b],"count":%d,"total":%d}' % (items, len(rows), total)), links
    )


@endpoint(auth="key", **LINKED)
async def webcam_detail(request: web.Request) -> web.Response:
    """GET /webcams/{public_id}: the webcam with last_updated and a signed player link."""
    data = _data(request)
    row = _row(data, request.match_info["public_id"])
    links = _links(request, data)
    return _json(links.webcam_detail(row), links)


@endpoint(area=NAME, auth="key")
async def create_token(request: web.Request) -> web.Response:
    """POST /webcams/token: a clusters token for the calling key, valid TTL_S seconds."""
    key = request[AUTHORISED]
    _data(request)  # 503 while the area is unavailable, like its other operations
    signer: Signer = request.app[SIGNER]
    subject = token_subject(key, signer.secrets.subject_keys[signer.secrets.current])
    token = signer.issue(CLUSTERS, subject, signer.now() + TTL_S)
    return web.Response(
        body=orjson.dumps({"token": token, "expires_in": TTL_S}),
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def _clusters_token(request: web.Request) -> ApiKey | None:
    """The key the request's clusters token names, None without a token; 403 for a token
    that is not valid or whose key was removed."""
    params.once(request.query, ("token",))
    token = request.query.get("token")
    if not token:
        return None
    signer: Signer = request.app[SIGNER]
    try:
        subject = signer.verify(token, CLUSTERS)
    except TokenError as exc:
        raise ApiError(403, str(exc)) from None
    kid = token.split(".", 2)[1]  # verified: the subject is keyed by the signing key's id
    key = request.app[KEYS].by_subject(subject, signer.secrets.subject_keys[kid])
    if key is None:
        raise ApiError(403, "the token's API key has been revoked; request a new token")
    return key


# A token's calls count per key (docs/api/conventions.md#rate-limits): in a bucket of its key's
# size, apart from the key's own calls (server.http.middleware._limit).
@endpoint(auth="token", token=_clusters_token, **LINKED)
async def clusters(request: web.Request) -> web.Response:
    """GET /webcams/clusters: grid clusters of the webcams in a bbox, by API key or token."""
    query = queries.cluster_query(request.query)
    data = _data(request)
    links = _links(request, data)
    cells = data.clusters.classify(query)
    if cells.rendered > HEAVY_CLUSTERS:
        # In a worker thread: render without touching the shared per-period cache (the signer's
        # signature memo may gain entries: single dict stores, atomic under the GIL).
        body = await asyncio.get_running_loop().run_in_executor(
            None, data.clusters.answer, query, cells, links.render
        )
    else:
        body = data.clusters.answer(query, cells, links.webcam)
    return _json(links.resolve(body), links)


@endpoint(auth="key", **LINKED)
async def snapshots(request: web.Request) -> web.Response:
    """GET /webcams/{public_id}/snapshots: the history, oldest first."""
    range_ = queries.range_(request.query)
    data = _data(request)
    row = _row(data, request.match_info["public_id"])
    links = _links(request, data)
    if row in data.provider:
        return _json(links.provider_snapshots(row, range_), links)
    indices, times = data.snapshots.window(row, range_, links.now, data.catalog.timezones[row])
    return _json(links.snapshots_body(row, indices, times), links)


# Not cached and no ETag: the page holds the time it was made (for "3 h ago" and its expiry
# message), so no two answers are the same.
# Errors as a page in the player's style when a browser asks (the middleware's error_page).
@endpoint(area=NAME, auth="none", etag=False, error_page=webcams_embed.error_answer)
async def embed(request: web.Request) -> web.Response:
    """GET /webcams/embed/{public_id}?token=…: the player page."""
    return _embed_page(request)


def _embed_page(request: web.Request) -> web.Response:
    range_ = queries.range_(request.query, queries.EMBED_PARAMETERS)
    raw_id = queries.public_id(request.match_info["public_id"])  # malformed: 400
    token = request.query.get("token")
    if not token:
        raise ApiError(403, "token is required: use the player.embed link of the webcam detail")
    signer: Signer = request.app[SIGNER]
    try:
        signer.verify(token, EMBED, raw_id)
    except TokenError as exc:
        raise ApiError(403, str(exc)) from None
    data = _data(request)
    row = _row(data, raw_id)
    links = _links(request, data)
    expires = int(token.split(".")[2])  # verified above: images expire with the page
    credit = None
    if row in data.provider:
        frames, image_origin, credit = _provider_frames(data, row, links, range_)
        expires = min(expires, data.provider[row].expires)
    else:
        indices, times = data.snapshots.window(row, range_, links.now, data.catalog.timezones[row])
        frames = [
            {"t": t, "url": url}
            for t, url in zip(times.tolist(), links.image_urls(row, indices, times, expires))
        ]
        image_origin = webcams_embed.origin(links.cdn)
    name = data.catalog.name(row)
    page_data = {
        "name": name,
        "timezone": data.catalog.timezones[row],
        "range": range_,
        "now": links.now,
        "expires": expires,
        "frames": frames,
    }
    # Where the page itself is served ({embed_base_url}, or {base_url} with its path prefix).
    base = f"{links.embed}{EMBED_PATH}{raw_id}?token={token}"
    ranges = {"24h": base, "30d": base + "&range=30d"}
    response = webcams_embed.page(name, page_data, ranges, range_, image_origin, credit)
    response.headers.update(links.vary)
    return response


def _provider_frames(
    data: WebcamsData, row: int, links: Links, range_: str
) -> tuple[list[dict], str, tuple[str, str, str | None]]:
    """A provider's webcam in the player: its current image through the provider's link
    (while that lasts), images allowed from the provider's host, and the courtesy its terms
    ask for, linked to the webcam's page: (frames, image origin, (courtesy, site, page))."""
    link = data.provider[row]
    frames = []
    if (
        (usable := links.provider_link(row)) is not None
        and usable.updated is not None
        and range_ == "24h"
        and links.now - 86400 <= usable.updated <= links.now
    ):
        frames = [{"t": usable.updated, "url": usable.image_url}]
    name, site, courtesy = PROVIDERS.get(link.provider, (link.provider, "", None))
    origin = webcams_embed.origin(link.image_url) if link.image_url else "'none'"
    return frames, origin, (courtesy or f"Webcams provided by {name}", site, link.page_url)


def setup(app: web.Application) -> None:
    """Give the app its signer (secrets loaded at startup, followed while it runs) and its
    memo of link bases."""
    app[BASES] = {}
    app.cleanup_ctx.append(_signer_ctx)


def make_signer(config: Config) -> Signer:
    """A signer over WEATHERAPI_SIGNING_SECRETS, else over the shared secrets file."""
    if config.signing_secrets:
        return Signer(parse_secrets(config.signing_secrets))
    path = config.secrets_path
    return Signer(ensure_secrets_file(path), source=path)


async def _signer_ctx(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    app[SIGNER] = make_signer(config)

    async def follow() -> None:
        while True:
            await asyncio.sleep(config.reload_interval_s)
            try:
                app[SIGNER].refresh()
            except Exception as exc:  # noqa: BLE001 (the follower must go on)
                # Raised once per change of the file: one line, not a traceback every tick.
                log.warning(
                    "reloading the signing secrets failed, the current ones stay in use: %s", exc
                )

    task = asyncio.create_task(follow())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def routes() -> list[web.RouteDef]:
    """The area's routes."""
    # aiohttp tries a path's fixed routes first, then the dynamic ones under its longest fixed
    # prefix in this order: the detail, asked for most, before the snapshots (no path fits both).
    # A public id is never a word of the fixed paths (the pipeline refuses those), so that
    # /webcams/token answers any method but POST with 405 and Allow: OPTIONS,POST (whatever the
    # key or the data: no 403, 404 or 503 first), not with the detail's GET as well.
    return [
        web.get("/webcams", list_webcams),
        web.post("/webcams/token", create_token),
        web.get("/webcams/clusters", clusters),
        web.get("/webcams/embed/{public_id}", embed),
        web.get(f"/webcams/{PUBLIC_ID}", webcam_detail),
        web.get(f"/webcams/{PUBLIC_ID}/snapshots", snapshots),
        *images.routes(),
    ]
