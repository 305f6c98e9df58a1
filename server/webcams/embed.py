"""The embeddable snapshot player (docs/api/webcams.md#player).

A self-contained HTML page: its style and script are inline and allowed by hash in the
Content-Security-Policy, images come only from {cdn_url}, nothing else is loaded. The frames
are the snapshot history (24h or 30d); their image links expire with the page's token, and the
page says so when that happens. An error answers problem+json, or, for a browser that asks for
HTML (as an iframe does), a small page in the player's style with the same message.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from html import escape
from importlib.resources import files
from urllib.parse import urlsplit

import orjson
from aiohttp import web

from server.http.errors import ApiError

ASSETS = files("server.webcams") / "player"


@lru_cache(maxsize=1)
def assets() -> tuple[str, str, str]:
    """(style, script, Content-Security-Policy source list for them), read once."""
    style = (ASSETS / "player.css").read_text(encoding="utf-8")
    script = (ASSETS / "player.js").read_text(encoding="utf-8")

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    return style, script, f"style-src {digest(style)}; script-src {digest(script)}"


def _policy(img_origin: str) -> str:
    _, _, sources = assets()
    return (
        f"default-src 'none'; img-src {img_origin} data:; {sources}; base-uri 'none'; "
        "form-action 'none'; frame-ancestors *"
    )


def origin(url: str) -> str:
    """scheme://host[:port] of an absolute URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _script_json(value: dict) -> str:
    """JSON safe inside <script type=application/json> (no "</script>" or "<!--")."""
    return orjson.dumps(value).decode().replace("<", "\\u003c")


def page(
    name: str,
    data: dict,
    ranges: dict[str, str],
    current: str,
    img_origin: str,
    credit: tuple[str, str, str | None] | None = None,
) -> web.Response:
    """The player page for one webcam; `credit` (courtesy line, provider's site, the webcam's
    page there) for a provider's webcam, whose terms ask for both links."""
    style, script, _ = assets()
    links = "".join(
        f'<a href="{escape(href)}"{" aria-current=page" if key == current else ""}>{key}</a>'
        for key, href in ranges.items()
    )
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>{escape(name)} – webcam</title>
<style>{style}</style></head>
<body><main>
<header><h1>{escape(name)}</h1><nav aria-label="Time range">{links}</nav></header>
<figure><img id="frame" alt="" width="640" height="360">
<div id="message" class="message" role="status" aria-live="polite" hidden></div></figure>
<div class="controls">
<button id="play" type="button" aria-label="Play" aria-pressed="false">&#9654;</button>
<input id="slider" type="range" min="0" max="0" step="1" value="0" aria-label="Snapshot time">
<output id="when" for="slider" aria-live="off"></output></div>
<p class="hint">Space or K: play/pause &middot; &larr; &rarr;: step &middot; Home/End: first/last</p>
{_credit(credit)}</main>
<script id="player-data" type="application/json">{_script_json(data)}</script>
<script>{script}</script>
</body></html>
"""
    return web.Response(
        text=body,
        content_type="text/html",
        charset="utf-8",
        headers={
            "Content-Security-Policy": _policy(img_origin),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        },
    )


def _credit(credit: tuple[str, str, str | None] | None) -> str:
    """The provider's courtesy line, linked to its site and the webcam's page there ("" for
    the service's own webcams: their page is unchanged)."""
    if credit is None:
        return ""
    line, site, webcam_page = credit
    text = escape(line)
    if site:
        text = f'<a href="{escape(site)}" target="_blank" rel="noopener">{text}</a>'
    if webcam_page:
        text += (
            f' &middot; <a href="{escape(webcam_page)}" target="_blank" rel="noopener">'
            "this webcam there</a>"
        )
    return f'<p class="hint credit">{text}</p>\n'


def wants_html(request: web.Request) -> bool:
    """True when the client prefers HTML to JSON (a browser loading an iframe does)."""
    accept = request.headers.get("Accept", "").lower()
    return "text/html" in accept and "json" not in accept.split("text/html")[0]


def error_answer(request: web.Request, exc: ApiError) -> web.Response | None:
    """error_page() for a client that prefers HTML (an iframe), else None (problem+json)."""
    return error_page(exc) if wants_html(request) else None


def error_page(exc: ApiError) -> web.Response:
    """An error as a page in the player's style (status and message as in problem+json)."""
    style, _, _ = assets()
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Webcam player unavailable</title><style>{style}</style></head>
<body><main><figure><div class="message" role="alert">{escape(_human(exc))}</div></figure>
</main></body></html>
"""
    return web.Response(
        status=exc.status,
        text=body,
        content_type="text/html",
        charset="utf-8",
        headers={
            "Cache-Control": "no-store",
            **exc.headers,
            "Content-Security-Policy": f"default-src 'none'; img-src data:; {assets()[2]}",
            "X-Content-Type-Options": "nosniff",
        },
    )


def _human(exc: ApiError) -> str:
    if exc.status == 403 and "expired" in exc.detail:
        return (
            "This player link has expired. Reload the page that shows this player to get "
            "a fresh one."
        )
    if exc.status == 403:
        return "This player link is not valid."
    if exc.status == 404:
        return "This webcam is not available."
    if exc.status == 503:
        return "Webcams are not available right now. Please try again in a moment."
    return f"This player cannot be shown: {exc.detail}"
