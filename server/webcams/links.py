"""Absolute, signed links of one request: images on {cdn_url}, players on {embed_base_url}
(docs/api/webcams.md#signed-links), and the Webcam JSON objects that carry them.

Image links: `{cdn_url}/webcams/{public_id}/{captured_at}{ext}?expires=…&kid=…&sig=…` for
images the built-in image host serves (rendered on demand, or files copied into the artifact);
`{cdn_url}/{object_key}?webcam={public_id}&expires=…&kid=…&sig=…` for object keys on a CDN, the
signature covering the object key (docs/operations/keys-and-secrets.md#cdn). Object keys need a
configured {cdn_url}: the built-in host does not hold them.
Without configuration both bases are this server: {base_url}, else the request's own origin
(its Host header, accepted only as hostname[:port], and the answers carry Vary: Host; set
WEATHERAPI_BASE_URL in production so that no client chooses the origin its links point at).

Renderings are cached per period and signing key with the link bases left out (spliced in per
request), so requests naming other hosts neither see nor flush each other's entries.
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import orjson
from aiohttp import web

from server.config import Config
from server.http.errors import bad_request
from server.http.middleware import CONFIG
from server.webcams import kernels
from server.webcams.data import PROVIDERS, ProviderLink, WebcamsData, bucket
from server.webcams.snapshots import iso as iso_stamps
from server.webcams.tokens import EMBED, TTL_S, Signer

CDN_PATH = "/cdn"
EMBED_PATH = "/webcams/embed/"
IMAGE_PREFIX = "/webcams/"
# '_' too: container and compose service names (weather_api:8080) carry it.
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
HOST = re.compile(
    rf"(?:{_LABEL}(?:\.{_LABEL})*\.?|\[[0-9A-Fa-f:.]{{2,45}}\])(?::(?P<port>[0-9]{{1,5}}))?"
)
MAX_PORT = 65535
# Where the link bases go in cached renderings (control characters never occur in JSON text:
# they are escaped). One byte each: bytes.replace() of a single byte is a memchr pass, some
# thirty times faster than of two bytes on a page of list items.
CDN_MARK, EMBED_MARK = b"\x00", b"\x01"


def origin(request: web.Request, config: Config) -> str:
    """{base_url}, else scheme://host of the request, the Host header validated."""
    if config.base_url:
        return config.base_url.rstrip("/")
    host = request.host
    match = HOST.fullmatch(host) if len(host) <= 260 else None
    if match is None or int(match["port"] or 0) > MAX_PORT:
        raise bad_request("Host", "the Host header must be hostname[:port] or [IPv6][:port]")
    return f"{request.scheme}://{host}"


def iso(unix_s: int) -> str:
    """ISO 8601 UTC with Z."""
    return dt.datetime.fromtimestamp(unix_s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


Bases = tuple[str, str, bytes, bytes]
# The app's memo of bases() by (scheme, Host): one entry with base_url set, a few without.
BASES = web.AppKey("webcam_link_bases", dict)
_MAX_BASES = 64


def bases(request: web.Request) -> Bases:
    """({cdn_url}, {embed_base_url}, both as JSON string contents) for a request."""
    memo = request.app[BASES]
    found = memo.get((request.scheme, request.host))
    if found is None:
        config = request.app[CONFIG]
        base = "" if config.cdn_url and config.embed_base_url else origin(request, config)
        cdn = config.cdn_url.rstrip("/") or base + CDN_PATH
        embed = config.embed_base_url.rstrip("/") or base
        if len(memo) >= _MAX_BASES:  # many Host values: start over (no unbounded growth)
            memo.clear()
        found = memo[(request.scheme, request.host)] = (
            cdn,
            embed,
            orjson.dumps(cdn)[1:-1],
            orjson.dumps(embed)[1:-1],
        )
    return found


class Links:
    """Link building for one request."""

    def __init__(self, request: web.Request, data: WebcamsData, signer: Signer):
        self.cdn, self.embed, self._cdn_json, self._embed_json = bases(request)
        # Links from the Host header: a shared cache must not hand them to another host.
        self.vary = {"Vary": "Host"} if request.app[CONFIG].links_follow_host else {}
        self.data, self.signer = data, signer
        self.now = signer.now()
        self.expires = signer.link_expiry(self.now)
        # Answers are cached to the end of the period at most: a provider's link must last
        # that long to be given out.
        self.period_end = self.expires - TTL_S
        # What cached renderings depend on besides the row (not the link bases).
        self.key = (self.expires, signer.secrets.current)
        self._items = bucket(data.items, self.key)

    def query(self, public_id: str, expires: int | None = None) -> str:
        """The signature parameters of a webcam's image links."""
        expires = self.expires if expires is None else expires
        kid, sig = self.signer.image_signature(public_id, expires)
        return f"expires={expires}&kid={kid}&sig={sig}"

    def image_paths(
        self, row: int, indices: np.ndarray, times: np.ndarray, expires: int | None = None
    ) -> list[str]:
        """Each snapshot's image link below {cdn_url} (snapshots by index and capture time)."""
        public_id = self.data.catalog.public_ids[row]
        expires = self.expires if expires is None else expires
        query = self.query(public_id, expires)
        return [
            signed(self.signer, public_id, head, query, expires)
            for head in path_heads(self.data, row, indices, times)
        ]

    def provider_link(self, row: int) -> ProviderLink | None:
        """The provider's link of a provider's webcam that lasts the period, else None."""
        link = self.data.provider.get(row)
        return link if link is not None and link.usable(self.period_end) else None

    def provider_snapshots(self, row: int, range_: str) -> bytes:
        """A provider's webcam's history: its current image (the provider's link) when taken
        in the last 24 hours; no other image of it is held (its terms: never re-hosted)."""
        link = self.provider_link(row)
        if (
            link is None
            or link.updated is None
            or range_ != "24h"
            or not self.now - 86400 <= link.updated <= self.now
        ):
            return b'{"snapshots":[],"count":0}'
        return b'{"snapshots":[{"captured_at":%b,"image_url":%b}],"count":1}' % (
            orjson.dumps(iso(link.updated)),
            orjson.dumps(link.image_url),
        )

    def snapshots_body(self, row: int, indices: np.ndarray, times: np.ndarray) -> bytes:
        """The snapshot history's JSON body (snapshots by index and capture time): rendered
        images in one compiled pass, since their links differ only in the capture time."""
        count = b'],"count":%d}' % len(times)
        if self.data.snapshots.rendered:
            public_id = self.data.catalog.public_ids[row]
            return kernels.stamped_body(
                times,
                b'{"snapshots":[',
                b'{"captured_at":"',
                b'Z","image_url":"%b/webcams/%b/' % (self._cdn_json, public_id.encode()),
                b'Z.svg?%b"}' % self.query(public_id).encode(),
                count,
            )
        cdn = self._cdn_json.decode()
        items = ",".join(
            [
                f'{{"captured_at":"{s}Z","image_url":"{cdn}{p}"}}'
                for s, p in zip(iso_stamps(times), self.image_paths(row, indices, times))
            ]
        )
        return b'{"snapshots":[%b%b' % (items.encode(), count)

    def image_urls(
        self, row: int, indices: np.ndarray, times: np.ndarray, expires: int | None = None
    ) -> list[str]:
        """Absolute image links."""
        return [self.cdn + p for p in self.image_paths(row, indices, times, expires)]

    def current_image(self, row: int) -> bytes:
        """JSON of image.current: the newest snapshot's link (CDN_MARK for {cdn_url}), a
        provider's link while it lasts the period, or null."""
        if row in self.data.provider:
            link = self.provider_link(row)
            return b"null" if link is None else orjson.dumps(link.image_url)
        head = self.data.current_heads[row]
        if head is None:
            return b"null"
        public_id = self.data.catalog.public_ids[row]
        path = signed(self.signer, public_id, head, self.query(public_id), self.expires)
        return b'"%b%b"' % (CDN_MARK, path.encode())

    def webcam(self, row: int) -> bytes:
        """A Webcam object as in lists and clusters, CDN_MARK where {cdn_url} goes (resolve()
        the body it ends up in); cached per period."""
        item = self._items.get(row)
        if item is None:
            item = self._items[row] = self.render(row)
        return item

    def render(self, row: int) -> bytes:
        """webcam() without the cache (safe in a worker thread: it changes nothing shared)."""
        return b'%b,"image":{"current":%b}%b}' % (
            self.data.catalog.prefix(row),
            self.current_image(row),
            self.credit(row),
        )

    def credit(self, row: int) -> bytes:
        """`,"provider":{…}` for a provider's webcam (name, courtesy, its page), else b""."""
        link = self.data.provider.get(row)
        if link is None:
            return b""
        name, site, courtesy = PROVIDERS.get(link.provider, (link.provider, None, None))
        return b',"provider":' + orjson.dumps(
            {"name": name, "attribution": courtesy, "url": link.page_url or site}
        )

    def webcams(self, rows: list[int]) -> bytes:
        """webcam() of each row, comma-separated (one C-level pass over the cache)."""
        items = self._items
        for row in rows:
            if row not in items:
                items[row] = self.render(row)
        return b",".join(map(items.__getitem__, rows))

    def resolve(self, body: bytes) -> bytes:
        """A body with the link bases in place of their marks (one pass over it)."""
        return body.replace(CDN_MARK, self._cdn_json)

    def webcam_detail(self, row: int) -> bytes:
        """A Webcam object with last_updated and player (cached per period: the embed token
        depends only on the webcam, the expiry and the key)."""
        details = bucket(self.data.details, self.key)
        detail = details.get(row)
        if detail is None and row in self.data.provider:
            detail = details[row] = self.provider_detail(row)
        if detail is None:
            last = self.data.snapshots.last_time(row)
            public_id = self.data.catalog.public_ids[row]
            token = self.signer.issue(EMBED, public_id, self.expires)
            # Ids and tokens are URL- and JSON-safe ([A-Za-z0-9._-]).
            detail = details[row] = (
                b'%b,"last_updated":%b,"image":{"current":%b},"player":{"embed":"%b%b%b?token='
                b'%b","expires_in":%d}}'
                % (
                    self.data.catalog.prefix(row),
                    orjson.dumps(None if last is None else iso(last)),
                    self.current_image(row),
                    EMBED_MARK,
                    EMBED_PATH.encode(),
                    public_id.encode(),
                    token.encode(),
                    TTL_S,
                )
            )
        return self.resolve(detail).replace(EMBED_MARK, self._embed_json)

    def provider_detail(self, row: int) -> bytes:
        """A provider's webcam's detail: its player is the provider's (its terms: images link
        to its player or page), last_updated the provider's."""
        link = self.data.provider[row]
        player = link.player_url or link.page_url
        return (
            b'%b,"last_updated":%b,"image":{"current":%b},"player":{"embed":%b,'
            b'"expires_in":%d}%b}'
            % (
                self.data.catalog.prefix(row),
                orjson.dumps(None if link.updated is None else iso(link.updated)),
                self.current_image(row),
                orjson.dumps(player),
                TTL_S,
                self.credit(row),
            )
        )


def path_heads(data: WebcamsData, row: int, indices: np.ndarray, times: np.ndarray) -> list[str]:
    """Each snapshot's image link below {cdn_url} up to its signature parameters: through
    `?` for the built-in image host, through `&` for an object key."""
    snaps, public_id = data.snapshots, data.catalog.public_ids[row]
    stamps = iso_stamps(times)
    if snaps.rendered:
        return [f"/webcams/{public_id}/{s}Z.svg?" for s in stamps]
    return [
        f"/{image.ref}?webcam={public_id}&"
        if image.kind == "key"
        else f"/webcams/{public_id}/{stamp}Z{image.ext}?"
        for image, stamp in zip(snaps.images(indices), stamps)
    ]


OBJECT_MARK = "?webcam="


def signed(signer: Signer, public_id: str, head: str, query: str, expires: int) -> str:
    """A path head from path_heads() with its signature parameters: the webcam's shared
    `query`, or for an object key a signature of its own over the key."""
    if OBJECT_MARK not in head:
        return head + query
    object_key = head[1 : head.index(OBJECT_MARK)]
    kid, sig = signer.object_signature(public_id, expires, object_key)
    return f"{head}expires={expires}&kid={kid}&sig={sig}"


def current_heads(data: WebcamsData) -> list[str | None]:
    """path_heads() of every webcam's newest snapshot, made once when the area loads."""
    heads: list[str | None] = []
    for row in range(data.catalog.size):
        last = data.snapshots.last_index(row)
        heads.append(
            None
            if last is None
            else path_heads(data, row, np.array([last]), data.snapshots.last[row : row + 1])[0]
        )
    return heads
