"""A provider's webcam catalog: the Windy Webcams API v3.

    GET {base}/webcams/api/v3/webcams?lang=en&limit=50&offset=N
        &include=categories,images,location,player,urls[&countries=CC]
    x-windy-api-key: WEATHERAPI_WINDY_API_KEY

The key travels in a header and URLs are logged without their query: it is never logged. The
answer is {"total", "webcams": [{webcamId, title, viewCount, status, lastUpdatedOn,
categories, images: {current: {icon, thumbnail, preview}, sizes, daylight}, location: {city,
region, country, country_code, continent, latitude, longitude, ...}, player: {day, month, year,
lifetime}, urls: {detail, edit, provider}}]}. Pages are asked within the plan: `limit` up to 50
and `offset` up to 1,000 on the free plan (10,000 professional: WEATHERAPI_WINDY_MAX_OFFSET); a
listing longer than that is cut there (the notes say so): list per country
(WEATHERAPI_WINDY_COUNTRIES, one listing each) to reach more. A 429 waits as asked
(Retry-After); a refused key (401, 403) fails at once.

Terms (https://api.windy.com/webcams/terms): images are shown only through the URLs the API
returns, never re-hosted, each linked to the webcam's page or player, with the courtesy
"Webcams provided by windy.com". Image URLs carry a token valid 10 minutes on the free plan (24
hours professional: WEATHERAPI_WINDY_LINK_TTL_S), after which they answer 401. So the links go
apart from the catalog, to datasets/webcam-links/windy.csv with the time they expire, written
every run; a refresh more frequent than the expiry rebuilds only them (webcams' `links` part),
and the server leaves out a link that would expire within its answer's cache period.
datasets/webcams/provider/windy.csv (public_id `windy-<webcamId>`, name, position, country,
views, status) is rewritten when its rows changed other than in views, or daily. Nothing is
written unless every page arrived.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlencode

from contract import Webcams as W
from pipeline.fetch.files import replace_if_changed
from pipeline.fetch.http import Downloader, DownloadError, HttpConfig, host_of
from pipeline.fetch.pacing import RateLimit
from pipeline.fetch.source import FetchError, FetchReport

API = "https://api.windy.com"
PATH = "/webcams/api/v3/webcams"
KEY_ENV = "WEATHERAPI_WINDY_API_KEY"
CATALOG = Path("webcams") / "provider" / "windy.csv"
LINKS = Path("webcam-links") / "windy.csv"
CATALOG_COLUMNS = ("public_id", "name", "latitude", "longitude", "country_code", "views", "status")
LINK_COLUMNS = (
    "public_id",
    "provider",
    "image_url",
    "thumbnail_url",
    "player_url",
    "page_url",
    "updated_at",
    "expires_at",
)
CATALOG_MAX_AGE_S = 86400
INCLUDE = "categories,images,location,player,urls"


@dataclass(frozen=True)
class ProviderConfig:
    """The plan's limits and what to list."""

    limit: int = 50  # webcams per page (the API's maximum)
    max_offset: int = 1000  # the free plan's
    link_ttl_s: int = 600  # the free plan's image token validity
    countries: tuple[str, ...] = ()  # one listing per country; none: one listing
    rate: RateLimit = RateLimit(per_minute=300, burst=10)
    http: HttpConfig = field(default_factory=lambda: HttpConfig(attempts=5, progress=False))

    @classmethod
    def from_env(cls) -> ProviderConfig:
        config = cls()
        for name, env in (
            ("max_offset", "WEATHERAPI_WINDY_MAX_OFFSET"),
            ("link_ttl_s", "WEATHERAPI_WINDY_LINK_TTL_S"),
        ):
            raw = os.environ.get(env, "").strip()
            if raw:
                if not raw.isdigit() or int(raw) <= 0:
                    raise FetchError(f"{env}={raw!r}: expected a whole number above 0")
                config = replace(config, **{name: int(raw)})
        raw = os.environ.get("WEATHERAPI_WINDY_COUNTRIES", "")
        countries = tuple(c.strip().upper() for c in raw.split(",") if c.strip())
        unknown = [c for c in countries if c not in W.COUNTRIES]
        if unknown:
            raise FetchError(f"WEATHERAPI_WINDY_COUNTRIES: {', '.join(unknown)} not ISO 3166-1")
        return replace(config, countries=countries)


def key() -> str | None:
    return os.environ.get(KEY_ENV, "").strip() or None


async def fetch(base: str, datasets: Path, config: ProviderConfig, report: FetchReport) -> bool:
    """List the provider's catalog; write it and its links. True when a file changed."""
    notes = report.notes
    api_key = key()
    if api_key is None:
        return False
    http_config = replace(config.http, rate_limits={host_of(base): config.rate})
    fetched_at = int(time.time())
    async with Downloader(http_config) as http:
        listings = await asyncio.gather(
            *(
                _listing(http, base, api_key, config, c, notes)
                for c in (config.countries or (None,))
            )
        )
        report.bytes += http.totals.bytes
    webcams = {}
    for listing in listings:
        for item in listing:
            webcams.setdefault(str(item.get("webcamId")), item)
    catalog, links, skipped = _rows(webcams.values(), fetched_at + config.link_ttl_s)
    notes.append(
        f"windy: {len(catalog)} webcams listed, links valid until "
        f"{_iso(fetched_at + config.link_ttl_s)}"
        + (f"; {skipped} without a position or a known country left out" if skipped else "")
    )
    changed = _write_catalog(datasets / CATALOG, catalog)
    return replace_if_changed(datasets / LINKS, _csv(LINK_COLUMNS, links)) or changed


async def _listing(
    http: Downloader,
    base: str,
    api_key: str,
    config: ProviderConfig,
    country: str | None,
    notes: list[str],
) -> list[dict]:
    """Every page of one listing the plan reaches (the first says the total)."""
    first = await _page(http, base, api_key, config, country, 0)
    total = int(first.get("total") or 0)
    reach = min(total, config.max_offset + config.limit)
    offsets = range(config.limit, reach, config.limit)
    pages = await asyncio.gather(*(_page(http, base, api_key, config, country, o) for o in offsets))
    if total > reach:
        notes.append(
            f"windy: {total - reach} webcams{' in ' + country if country else ''} "
            f"lie beyond the plan's offset limit ({config.max_offset}) and were not "
            "listed: list per country (WEATHERAPI_WINDY_COUNTRIES)"
        )
    return [w for page in [first, *pages] for w in page.get("webcams") or [] if isinstance(w, dict)]


async def _page(
    http: Downloader,
    base: str,
    api_key: str,
    config: ProviderConfig,
    country: str | None,
    offset: int,
) -> dict:
    query = {"lang": "en", "limit": config.limit, "offset": offset, "include": INCLUDE}
    if country:
        query["countries"] = country
    try:
        body = await http.get_bytes(
            f"{base}{PATH}?{urlencode(query)}",
            headers={"x-windy-api-key": api_key, "Accept": "application/json"},
        )
    except DownloadError as exc:
        if exc.status in (401, 403):
            raise FetchError(
                f"the Windy Webcams API refused the key in {KEY_ENV} (HTTP {exc.status})"
            ) from None
        raise
    try:
        page = json.loads(body)
    except ValueError:
        raise FetchError(f"{base}{PATH}: a page that is not JSON", retry_later=True) from None
    if not isinstance(page, dict) or not isinstance(page.get("webcams", []), list):
        raise FetchError(f"{base}{PATH}: a page without a webcams list", retry_later=True)
    return page


def _rows(items, expires_s: int) -> tuple[list[dict], list[dict], int]:
    """Catalog and link rows of the provider's webcams, by public id; and how many were left
    out (no position, or a country code the catalog does not know)."""
    catalog, links, skipped = [], [], 0
    for item in sorted(items, key=lambda w: str(w.get("webcamId"))):
        location = item.get("location") or {}
        country = str(location.get("country_code") or "").upper()
        lat, lon = location.get("latitude"), location.get("longitude")
        if (
            country not in W.COUNTRIES
            or not isinstance(lat, (int, float))
            or not isinstance(lon, (int, float))
        ):
            skipped += 1
            continue
        public_id = f"windy-{item.get('webcamId')}"
        current = (item.get("images") or {}).get("current") or {}
        player = item.get("player") or {}
        catalog.append(
            {
                "public_id": public_id,
                "name": str(item.get("title") or public_id),
                "latitude": lat,
                "longitude": lon,
                "country_code": country,
                "views": int(item.get("viewCount") or 0),
                "status": "active" if item.get("status") == "active" else "inactive",
            }
        )
        links.append(
            {
                "public_id": public_id,
                "provider": "windy",
                "image_url": current.get("preview") or "",
                "thumbnail_url": current.get("thumbnail") or "",
                "player_url": player.get("day") or player.get("lifetime") or "",
                "page_url": (item.get("urls") or {}).get("detail") or "",
                "updated_at": item.get("lastUpdatedOn") or "",
                "expires_at": _iso(expires_s),
            }
        )
    return catalog, links, skipped


def _write_catalog(path: Path, rows: list[dict]) -> bool:
    """Rewrite the catalog when anything but views changed, or once a day (views)."""
    data = _csv(CATALOG_COLUMNS, rows)
    try:
        old = path.read_bytes()
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return replace_if_changed(path, data)
    if age < CATALOG_MAX_AGE_S and _without_views(old) == _without_views(data):
        return False
    return replace_if_changed(path, data)


def _without_views(data: bytes) -> list:
    return [
        {k: v for k, v in row.items() if k != "views"}
        for row in csv.DictReader(io.StringIO(data.decode()))
    ]


def _csv(columns: tuple[str, ...], rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _iso(unix_s: int) -> str:
    return dt.datetime.fromtimestamp(unix_s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
