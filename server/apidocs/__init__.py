"""The landing page at / and the interactive API reference at /docs: Swagger UI (vendored in
swagger-ui/, see its README) rendering this server's own /openapi.json, under a
Content-Security-Policy that allows nothing from another host and no inline script
(docs/api/service.md#docs)."""

from __future__ import annotations

import asyncio
import gzip
import html
from dataclasses import dataclass, field
from importlib.resources import files

from aiohttp import web
from aiohttp.payload import BytesPayload

from server.http.middleware import (
    API_VERSION,
    GZIP_MIN_BYTES,
    Handler,
    _accepts_gzip,
    endpoint,
    fixed_etag,
)

SWAGGER_UI_VERSION = "5.35.0"
PACKAGE = files("server.apidocs")
MAX_AGE = 3600
# 'self' only. img-src data: for the style sheet's icons, blob: for Swagger UI's rendering of
# an image answer; connect-src 'self' for /openapi.json and "Try it out".
DOCS_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# img-src data: for the empty icon both pages name (else the browser asks for /favicon.ico).
LANDING_POLICY = (
    "default-src 'none'; style-src 'self'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
JS, CSS = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
PAGE_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


@dataclass
class Asset:
    """A file served under /docs/assets/ as it is, gzipped once (on first demand) when asked."""

    name: str
    source: str  # its path in the package
    content_type: str
    body: bytes = field(init=False, repr=False)
    _gzipped: bytes | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.body = PACKAGE.joinpath(self.source).read_bytes()

    @property
    def path(self) -> str:
        return f"/docs/assets/{self.name}"

    async def gzipped(self) -> bytes:
        """The gzip bytes, made once per process in a thread (1.7 MB take some 0.3 s of CPU:
        compressing them per request, as the middleware would, would make each a cost)."""
        if self._gzipped is None:
            self._gzipped = await asyncio.get_running_loop().run_in_executor(
                None, lambda: gzip.compress(self.body, 9, mtime=0)
            )
        return self._gzipped


ASSETS = (
    Asset("swagger-ui-bundle.js", "swagger-ui/swagger-ui-bundle.js", JS),
    Asset("swagger-ui.css", "swagger-ui/swagger-ui.css", CSS),
    Asset("docs.js", "docs.js", JS),
    Asset("docs.css", "docs.css", CSS),
)


def _page(title: str, head: str, body: str) -> bytes:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        f'<link rel="icon" href="data:,">{head}</head>\n<body>{body}</body></html>\n'
    ).encode()


DOCS_PAGE = _page(
    "Weather and Geodata API: reference",
    '<link rel="stylesheet" href="docs/assets/swagger-ui.css">'
    '<link rel="stylesheet" href="docs/assets/docs.css">',
    '<div id="swagger-ui"></div>'
    '<script src="docs/assets/swagger-ui-bundle.js"></script>'
    '<script src="docs/assets/docs.js"></script>',
)
LANDING_PAGE = _page(
    "Weather and Geodata API",
    '<link rel="stylesheet" href="docs/assets/docs.css">',
    f'<main class="landing"><h1>Weather and Geodata API</h1>'
    f"<p>Version {html.escape(API_VERSION)}. Geocoding, air quality, forecasts and webcams; "
    f"forecasts, air quality and webcams need an API key.</p><ul>"
    f'<li><a href="docs">/docs</a>: the interactive API reference (try calls with your key)</li>'
    f'<li><a href="openapi.json">/openapi.json</a>: the OpenAPI 3.1 description</li>'
    f'<li><a href="health">/health</a>: liveness</li>'
    f'<li><a href="ready">/ready</a>: readiness, and the data version of each area</li>'
    f"</ul></main>",
)


def _html_handler(body: bytes, policy: str) -> Handler:
    @endpoint(limited=False, auth="none", max_age=MAX_AGE, fixed_etag=fixed_etag(body))
    async def page(request: web.Request) -> web.Response:
        return web.Response(
            body=body,
            content_type="text/html",
            charset="utf-8",
            headers={"Content-Security-Policy": policy, **PAGE_HEADERS},
        )

    return page


def _asset_handler(asset: Asset) -> Handler:
    @endpoint(limited=False, auth="none", max_age=MAX_AGE, fixed_etag=fixed_etag(asset.body))
    async def serve(request: web.Request) -> web.Response:
        nosniff = {"X-Content-Type-Options": "nosniff"}
        if len(asset.body) > GZIP_MIN_BYTES and _accepts_gzip(
            ",".join(request.headers.getall("Accept-Encoding", ()))
        ):
            # A payload, not bytes: the middleware would compress bytes again (and add Vary).
            body = BytesPayload(await asset.gzipped(), content_type=asset.content_type)
            return web.Response(
                body=body,
                headers={**nosniff, "Content-Encoding": "gzip", "Vary": "Accept-Encoding"},
            )
        return web.Response(
            body=asset.body,
            content_type=asset.content_type.split(";")[0],
            charset="utf-8",
            headers=nosniff,
        )

    return serve


def routes() -> list[web.RouteDef]:
    """/, /docs and the files /docs loads (not in /openapi.json: pages, not API operations)."""
    return [
        web.get("/", _html_handler(LANDING_PAGE, LANDING_POLICY)),
        web.get("/docs", _html_handler(DOCS_PAGE, DOCS_POLICY)),
        *(web.get(asset.path, _asset_handler(asset)) for asset in ASSETS),
    ]


PATHS = ("/", "/docs", *(asset.path for asset in ASSETS))
