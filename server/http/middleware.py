"""Endpoint metadata and the one middleware: keys, rate limits, caching, CORS, gzip, errors."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import ipaddress
import logging
import math
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache

from aiohttp import web
from multidict import istr

from server.artifacts.store import Store
from server.config import Config
from server.http.errors import ApiError, bad_request, problem_response
from server.security.keys import ApiKey, KeyStore
from server.security.ratelimit import Decision, RateLimiter
from server.security.ratelimit_redis import SharedRateLimiter

log = logging.getLogger("server")

CONFIG = web.AppKey("config", Config)
STORE = web.AppKey("store", Store)
KEYS = web.AppKey("keys", KeyStore)
LIMITER = web.AppKey("limiter", RateLimiter | SharedRateLimiter)
NOW = web.RequestKey("now_s", float)  # the time a period_s endpoint answers for (Unix s)
AUTHORISED = web.RequestKey("authorised_key", ApiKey | None)  # the key that authorised it
REQUEST_ID = web.RequestKey("request_id", str)  # set by server.observe.requests
# Why a request was refused (403, 429), for the metrics: forbidden, refusal_limit, key_limit,
# token_limit or address_limit.
REFUSAL = web.RequestKey("refusal", str)
API_KEY = "api_key"
KEY_NAMES = frozenset({"api_key", "api%5fkey"})  # the parameter's name, lowercased, as sent
try:
    API_VERSION = importlib.metadata.version("weather-geodata-api")
except importlib.metadata.PackageNotFoundError:  # running from a source tree without install
    API_VERSION = "0.0.0"
GZIP_MIN_BYTES = 1024
QVALUE = re.compile(r"0(\.[0-9]{0,3})?|1(\.0{0,3})?")  # RFC 9110 12.4.2
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "ETag, X-Data-Version, X-API-Version, X-Request-Id, RateLimit-Limit, "
    "RateLimit-Remaining, RateLimit-Reset, Retry-After",
}
STATIC_HEADERS = {**CORS, "X-API-Version": API_VERSION, "Server": "weather-geodata-api"}
# Case-insensitive keys as aiohttp keeps them, so copying them into a response skips folding.
STATIC_HEADERS = {istr(k): v for k, v in STATIC_HEADERS.items()}
# CORS is open for GET only (docs/api/conventions.md#cors): the token POST is not for browsers.
CORS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
X_DATA_VERSION, CACHE_CONTROL = istr("X-Data-Version"), istr("Cache-Control")
NON_CORS_HEADERS = {istr("X-API-Version"): API_VERSION, istr("Server"): "weather-geodata-api"}
PREFLIGHT = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
    "Access-Control-Allow-Headers": "X-API-Key, If-None-Match, Content-Type",
    "Access-Control-Max-Age": "86400",
    **NON_CORS_HEADERS,
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# eq=False: compared and hashed by identity, which is fast (the header sets are cached by it).
@dataclass(frozen=True, eq=False)
class Endpoint:
    """What the middleware needs to know about a handler."""

    area: str | None = None  # artifact area answering it (ETag, X-Data-Version)
    auth: str = "optional"  # none | optional | key | token (a key, else `token`)
    # auth="token": the key the request's token names, None when it carries none; ApiError 403
    # for a token that is not valid or whose key has been removed (even beside a valid key).
    token: Callable[[web.Request], ApiKey | None] | None = None
    etag: bool = True  # False for answers that change at every request
    # The tag of an answer that changes only with the code (no area): made once, at import.
    fixed_etag: str | None = None
    max_age: int = 0  # Cache-Control max-age for 200 answers
    limited: bool = True  # counts against a rate limit
    # Answers that change at every multiple of period_s (UTC), e.g. "the current hour": the
    # ETag names the period and max-age does not reach past its end.
    period_s: int = 0
    also: tuple[str, ...] = ()  # other areas whose data shapes the answer (in the ETag)
    # The answer to an ApiError when it is not problem+json (None: it is), e.g. an HTML page.
    error_page: Callable[[web.Request, ApiError], web.Response | None] | None = None

    # True for an answer nothing but its handler decides (no key, limit, data, tag or caching
    # of its own: /health, /ready): the middleware then only adds its static headers (_plain).
    plain: bool = field(init=False)

    def __post_init__(self) -> None:
        plain = (
            self.auth == "none"
            and not self.limited
            and self.area is None
            and self.fixed_etag is None
            and not self.max_age
            and not self.period_s
            and self.error_page is None
        )
        object.__setattr__(self, "plain", plain)  # frozen: set once, read every request


UNLIMITED = Endpoint(limited=False)  # what a handler without metadata is


def endpoint(**meta) -> Callable[[Handler], Handler]:
    """Attach Endpoint metadata to a handler."""

    def wrap(handler: Handler) -> Handler:
        handler.endpoint = Endpoint(**meta)  # type: ignore[attr-defined]
        return handler

    return wrap


def client_address(request: web.Request, config: Config) -> str:
    """The client's address: the connection's, or the proxy's own X-Forwarded-For entry when
    configured to trust it."""
    if config.trust_forwarded_for:
        forwarded = request.headers.getall("X-Forwarded-For", ())
        if forwarded:
            # The proxy appends the address it saw, to the last line or as a line of its own
            # (HAProxy): that is the last entry of the last line. Everything before it is the
            # client's word, so a client could pick a fresh budget per request with it.
            last = forwarded[-1].rsplit(",", 1)[-1].strip()
            if last:
                return last
    return request.remote or "unknown"


def address_budget(address: str) -> str:
    """Whose budget a client address draws from: an IPv4 address its own, an IPv6 address its
    /64 (one subscriber's allotment: per address, one client would hold 2**64 budgets)."""
    if ":" not in address:
        return address
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:  # a zone index (fe80::1%eth0), or not an address at all
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))


def presented_key(request: web.Request) -> str | None:
    """The key from the X-API-Key header, else the api_key parameter (header wins). An empty
    api_key is no key; two non-empty ones are a 400 (which would the caller mean?)."""
    header = request.headers.get("X-API-Key")
    if header is not None:
        # Two header lines are one comma-separated list (RFC 9110 5.3): which would it mean?
        if "," in header or len(request.headers.getall("X-API-Key")) > 1:
            raise bad_request("X-API-Key", "the X-API-Key header is given more than once")
        if header:
            return header
    query = request.rel_url.raw_query_string  # as sent, without any fragment
    # Parsing the whole query (yarl) costs time on every request; most carry no api_key
    # ("api%5Fkey" too), and the rest mostly need no decoding.
    if "api" not in query.lower():
        return None
    if "%" in query or "+" in query:
        values = [value for value in request.query.getall(API_KEY, ()) if value]
    else:
        values = [
            value
            for name, _, value in (part.partition("=") for part in query.split("&"))
            if name == API_KEY and value
        ]
    if len(values) > 1:
        raise bad_request(API_KEY, f"{API_KEY} is given more than once")
    return values[0] if values else None


@lru_cache(maxsize=64)
def _allow(methods: str) -> str:
    """A 405's Allow header (aiohttp's "GET,HEAD") with OPTIONS, which every path answers."""
    return ",".join(sorted({*methods.split(","), "OPTIONS"} - {""}))


def fixed_etag(body: bytes) -> str:
    """The weak tag of an answer that changes only with the code (and the API version)."""
    digest = hashlib.blake2b(API_VERSION.encode() + b"\n" + body, digest_size=12)
    return f'W/"{digest.hexdigest()}"'


def _tags(if_none_match: str | None) -> set[str]:
    """Entity tags listed in If-None-Match, compared weakly (RFC 9110 13.1.2)."""
    if not if_none_match:
        return set()
    return {t.strip().removeprefix("W/") for t in if_none_match.split(",")}


def _etag(
    version: str, request: web.Request, period: int | None = None, by_host: bool = False
) -> str:
    """A weak tag (gzip and identity bodies are equivalent) of the data version and the request
    without its api_key (the same answer whoever asks), of the period for answers that change
    with time, and of the Host header for answers that vary on it (links on its origin)."""
    path, _, query = request.raw_path.partition("?")
    if "api" in query.lower():
        query = "&".join(
            [p for p in query.split("&") if p.partition("=")[0].lower() not in KEY_NAMES]
        )
    when = "" if period is None else f"\n{period}"
    host = f"\n{request.host}" if by_host else ""
    digest = hashlib.blake2b(
        f"{API_VERSION}\n{version}\n{path}?{query}{when}{host}".encode(), digest_size=12
    )
    return f'W/"{digest.hexdigest()}"'


def _weights(accept_encoding: str) -> dict[str, float]:
    """Accept-Encoding as {coding: weight} (RFC 9110 12.5.3); see _accepts_gzip."""
    weights: dict[str, float] = {}
    for element in accept_encoding.split(","):
        coding, *params = element.split(";")
        weight = 1.0
        for param in params:  # other parameters than q are not for us: ignored
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                value = value.strip()
                # Not a qvalue (1.5, abc): taken as a refusal, as identity is always safe.
                weight = float(value) if QVALUE.fullmatch(value) else 0.0
        coding = coding.strip().lower()
        if coding:  # the first entry of a coding counts; x-gzip is gzip (8.4.1.3)
            weights.setdefault("gzip" if coding == "x-gzip" else coding, weight)
    return weights


@lru_cache(maxsize=256)  # clients send a handful of distinct values; parsing each costs µs
def _accepts_gzip(accept_encoding: str) -> bool:
    """True when Accept-Encoding allows gzip (RFC 9110 12.5.3): gzip's own entry decides, else
    that of *; q=0 refuses; an identity listed with a higher weight is preferred. Codings and
    the parameter name q are case-insensitive, other parameters ignored."""
    weights = _weights(accept_encoding)
    gzip = weights.get("gzip", weights.get("*", 0.0))
    # identity not listed takes *'s weight (12.5.3: * matches every coding not listed).
    return gzip > 0 and gzip >= weights.get("identity", weights.get("*", 0.0))


@web.middleware
async def api_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Run one request through auth, limits and caching; turn every failure into problem+json."""
    headers: dict[str, str] = {}
    meta: Endpoint = getattr(handler, "endpoint", None) or UNLIMITED
    version = answering = None
    try:
        if meta.plain and request.method != "OPTIONS":
            return _plain(request, await handler(request), meta)
        # Answered for every path that exists (routed, but not for OPTIONS: a 405 there),
        # before keys and limits; a path that does not exist is the usual 404.
        if (
            request.method == "OPTIONS"
            and request.match_info.http_exception is not None
            and request.match_info.http_exception.status == 405
        ):
            return web.Response(status=204, headers=PREFLIGHT)
        app = request.app
        await _admit(request, app, meta, headers)
        store = app[STORE]
        area = store.area(meta.area) if meta.area else None
        version = area.version if area else None
        answering = version if area and area.data is not None else None
        cacheable = meta.etag and version is not None and request.method in ("GET", "HEAD")
        period = now = None
        if meta.period_s:
            # Whole seconds: an answer is a function of the second it names (currently.time),
            # not of the fraction of it the request arrived in.
            request[NOW] = now = float(int(time.time()))
            period = int(now // meta.period_s)
        # The handler runs even when the tag matches: a 304 must not skip its validation or
        # its stale-data check (an invalid or stale request is never "not modified").
        response = await handler(request)
        etag = meta.fixed_etag
        if cacheable:
            versions = (
                version
                if not meta.also
                else version + "".join(f"\n{store.area(a).version}" for a in meta.also)
            )
            etag = _etag(versions, request, period, "Host" in response.headers.get("Vary", ""))
        if etag and response.status == 200 and "If-None-Match" in request.headers:
            # Several header lines are one list (RFC 9110 5.3).
            tags = _tags(",".join(request.headers.getall("If-None-Match")))
            if etag.removeprefix("W/") in tags or "*" in tags:
                response = _not_modified(response)
        _decorate(request, response, meta, headers, version, etag, now)
        return response
    except ApiError as exc:
        # The handler's refusal (404, 400, stale 503) rests on that data; a 403 (a bad token
        # or signature) and its 429 do not.
        if answering and exc.status not in (403, 429):
            headers["X-Data-Version"] = answering
        return await _error_answer(request, meta, exc, headers)
    except web.HTTPException as exc:
        detail = {
            404: "no such endpoint",
            405: f"method {request.method} is not allowed here",
            413: "request body too large",
        }.get(exc.status, exc.reason)
        allow = {"Allow": _allow(exc.headers["Allow"])} if "Allow" in exc.headers else {}
        return _problem(request, exc.status, detail, headers={**headers, **allow})
    except asyncio.CancelledError:
        raise
    except Exception:
        request_id = request.get(REQUEST_ID) or secrets.token_hex(8)
        log.exception(
            "unhandled error, request id %s, %s %s", request_id, request.method, request.path
        )
        return _problem(
            request,
            500,
            "internal error; quote the request id when reporting it",
            extra={"request_id": request_id},
            headers={"X-Request-Id": request_id},
        )


async def _error_answer(
    request: web.Request, meta: Endpoint, exc: ApiError, headers: dict[str, str]
) -> web.Response:
    """The answer to an ApiError: problem+json, or the endpoint's own error page; a 403 draws
    from the refusal budget first (and becomes a 429 past it)."""
    if exc.status == 403:
        exc = await _refused(request, exc, headers)
    page = meta.error_page(request, exc) if meta.error_page else None
    if page is None:
        return _problem(
            request,
            exc.status,
            exc.detail,
            errors=exc.errors,
            extra=exc.extra,
            headers={**headers, **exc.headers},
        )
    page.headers.update({**_cors(request), **headers, **exc.headers})
    return page


async def _admit(
    request: web.Request, app: web.Application, meta: Endpoint, headers: dict[str, str]
) -> None:
    """Authenticate (the key, if any) and take one request from its budget (RateLimit headers
    into `headers`); ApiError 400/403/429 otherwise. A malformed key draws from the client
    address's budget before its 400."""
    key, by_token = None, False
    if meta.auth != "none":
        try:
            key, by_token = _authenticate(request, app[KEYS], meta)
        except ApiError as exc:
            if exc.status == 400 and meta.limited:
                await _limit(request, app[CONFIG], app[LIMITER], None, False, headers)
            raise
        request[AUTHORISED] = key
    if meta.limited:
        await _limit(request, app[CONFIG], app[LIMITER], key, by_token, headers)


def _authenticate(
    request: web.Request, keys: KeyStore, meta: Endpoint
) -> tuple[ApiKey | None, bool]:
    """The key that authorises the request, and whether a token named it: the key presented,
    or (auth="token", no key presented) the one a valid token names. A credential presented
    must be valid even when another would do: an invalid key is refused beside a valid token,
    an invalid token beside a valid key (the caller should learn it is wrong)."""
    presented = presented_key(request)
    key = keys.authenticate(presented)
    token_key = meta.token(request) if meta.token is not None else None
    if key is not None or meta.auth == "optional":
        return key, False
    if presented or token_key is None:
        raise ApiError(
            403,
            "a valid API key is required: send it in the X-API-Key header or "
            "the api_key parameter" + (" (or a valid token)" if meta.token else ""),
        )
    return token_key, True


async def _refused(request: web.Request, exc: ApiError, headers: dict[str, str]) -> ApiError:
    """Every refusal (403: no valid key, token or image signature) draws from a bucket of
    refusals per client address: without one, guessing keys or signatures, or flooding the log
    with 403s, would cost nothing. `exc` while it lasts (its RateLimit headers into `headers`),
    then a 429. Valid keys, tokens and links never touch it."""
    config = request.app[CONFIG]
    limit = config.rate_limit_per_minute
    identity = f"ip:{address_budget(client_address(request, config))}:denied"
    decision = await _take(request.app[LIMITER], identity, limit, config.burst)
    headers.update(decision.headers())
    if not decision.allowed:
        request[REFUSAL] = "refusal_limit"
        return ApiError(
            429,
            f"too many refused requests (no valid API key, token or signature; {limit} a "
            f"minute); retry in {decision.retry_after_s} s",
            headers=headers,
        )
    request[REFUSAL] = "forbidden"
    return exc


async def _limit(
    request: web.Request,
    config: Config,
    limiter: RateLimiter | SharedRateLimiter,
    key: ApiKey | None,
    by_token: bool,
    headers: dict[str, str],
) -> None:
    """Take one request from the client's bucket (RateLimit headers into `headers`), else
    ApiError 429. A key's bucket holds its own limit; the calls its tokens authorise (from
    visitors' browsers, which anyone can copy a token into) have a bucket of their own of the
    same size, so they cannot use up the budget of the key's server-side calls."""
    if key is None:
        identity = f"ip:{address_budget(client_address(request, config))}"
    else:  # key names have no ':', so no key's identity is another's token identity
        identity = f"key:{key.name}:token" if by_token else f"key:{key.name}"
    if key and key.rate_limit:
        limit = burst = key.rate_limit
    else:
        limit, burst = config.rate_limit_per_minute, config.burst
    decision = await _take(limiter, identity, limit, burst)
    headers.update(decision.headers())
    if not decision.allowed:
        request[REFUSAL] = (
            "address_limit" if key is None else "token_limit" if by_token else "key_limit"
        )
        raise ApiError(
            429,
            f"rate limit of {limit} requests a minute exceeded; "
            f"retry in {decision.retry_after_s} s",
            headers=headers,
        )


async def _take(
    limiter: RateLimiter | SharedRateLimiter, identity: str, limit: int, burst: int
) -> Decision:
    """Take one request from `identity`'s bucket (the shared limiter's is awaited)."""
    if isinstance(limiter, SharedRateLimiter):
        return await limiter.check(identity, limit, burst)
    return limiter.check(identity, limit, burst)


def _not_modified(response: web.StreamResponse) -> web.Response:
    """A 304 for a 200, keeping the Cache-Control and Vary the handler chose, and the Vary
    that compressing the 200 would add (a 304 sends the 200's Vary: RFC 9110 15.4.5)."""
    kept = {
        name: response.headers[name]
        for name in ("Cache-Control", "Vary")
        if name in response.headers
    }
    if _compressible(response):
        kept["Vary"] = f"{kept['Vary']}, Accept-Encoding" if "Vary" in kept else "Accept-Encoding"
    return web.Response(status=304, headers=kept or None)


def _plain(
    request: web.Request, response: web.StreamResponse, meta: Endpoint
) -> web.StreamResponse:
    """A plain endpoint's answer (Endpoint.plain) with the headers _decorate would give it."""
    ok = response.status in (200, 304)
    headers = response.headers
    headers.update(_static_set(meta, request.method in CORS_METHODS, None, ok))
    if ok and CACHE_CONTROL not in headers:
        headers[CACHE_CONTROL] = "no-store"
    if _compressible(response):
        _compress(request, response)
    return response


def _compressible(response: web.StreamResponse) -> bool:
    """True for a body gzip is worth it for (so its answer varies on Accept-Encoding)."""
    body = getattr(response, "body", None)
    return isinstance(body, (bytes, bytearray)) and len(body) > GZIP_MIN_BYTES


def _decorate(
    request: web.Request,
    response: web.StreamResponse,
    meta: Endpoint,
    headers: dict[str, str],
    version: str | None,
    etag: str | None,
    now: float | None = None,
) -> None:
    """Add the answer's headers: `headers` (RateLimit-*), the endpoint's static set, the tag,
    Cache-Control and Vary; enable gzip where it is worth it and accepted."""
    ok = response.status in (200, 304)
    headers.update(_static_set(meta, request.method in CORS_METHODS, version, ok))
    if ok:
        if etag:
            headers["ETag"] = etag
        if "Cache-Control" not in headers:  # not static: by period, or the handler's own
            max_age = meta.max_age
            if meta.period_s and now is not None:  # the answer changes when the period ends
                max_age = min(max_age, max(1, math.ceil(meta.period_s - now % meta.period_s)))
            headers["Cache-Control"] = (
                f"public, max-age={max_age}"
                if max_age
                else response.headers.get("Cache-Control", "no-store")
            )
    # No shared cache may hand an answer authorised by a key header to another key, or none
    # (added to what the handler varies on, e.g. Host).
    if meta.auth == "key" or (meta.auth != "none" and "X-API-Key" in request.headers):
        chosen = response.headers.get("Vary")
        headers["Vary"] = f"{chosen}, X-API-Key" if chosen else "X-API-Key"
    response.headers.update(headers)
    if _compressible(response):
        _compress(request, response)


def _compress(request: web.Request, response: web.StreamResponse) -> None:
    """Vary on Accept-Encoding, and gzip the answer where the request accepts it."""
    vary = response.headers.get("Vary")
    response.headers["Vary"] = f"{vary}, Accept-Encoding" if vary else "Accept-Encoding"
    # Several header lines are one list (RFC 9110 5.3).
    if _accepts_gzip(",".join(request.headers.getall("Accept-Encoding", ()))):
        response.enable_compression(web.ContentCoding.gzip)


# (endpoint, CORS or not, data version, 200/304 or not) -> the headers those alone decide.
_STATIC_SETS: dict[tuple[Endpoint, bool, str | None, bool], dict[str, str]] = {}
STATIC_SETS_MAX = 1024  # endpoints x 2 x versions in use x 2: far fewer; a bound all the same


def _static_set(meta: Endpoint, cors: bool, version: str | None, ok: bool) -> dict[str, str]:
    """The headers of an answer that depend only on its endpoint, the method's CORS, the data
    version and whether it is a 200 or 304: made once per combination, not per request."""
    key = (meta, cors, version, ok)
    found = _STATIC_SETS.get(key)
    if found is None:
        if len(_STATIC_SETS) >= STATIC_SETS_MAX:  # old versions' sets
            _STATIC_SETS.clear()
        found = dict(STATIC_HEADERS if cors else NON_CORS_HEADERS)
        if version:
            found[X_DATA_VERSION] = version
        if ok and meta.max_age and not meta.period_s:
            found[CACHE_CONTROL] = f"public, max-age={meta.max_age}"
        _STATIC_SETS[key] = found
    return found


def _problem(request: web.Request, status: int, detail: str, **kwargs) -> web.Response:
    response = problem_response(status, detail, **kwargs)
    response.headers.update(_cors(request))
    response.headers["Cache-Control"] = "no-store"
    return response


def _cors(request: web.Request) -> dict:
    """The static headers of an answer: open CORS for GET (and its preflight) only; the token
    POST, its refusals included, is not for browsers (docs/api/conventions.md#cors)."""
    return STATIC_HEADERS if request.method in CORS_METHODS else NON_CORS_HEADERS
