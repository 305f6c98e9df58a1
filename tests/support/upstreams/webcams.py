"""Stand-ins for the webcam upstreams on a StandIn server: a Windy-like Webcams API v3 and
cameras that serve JPEGs.

    with StandIn() as server:
        windy = WindyLayout(server, key="k", webcams=windy_webcams(120))
        ... GET {server.url}/webcams/api/v3/webcams?limit=50&offset=0&include=... with
            x-windy-api-key: k ...
        cams = Cameras(server)
        url = cams.add("cam-1")           # a JPEG, a new frame on each request
        cams.add("dead", status=503)      # a camera that fails

As the real API: a missing or wrong key is 401, `limit` above 50 or `offset` above the plan's
limit a 400; each image URL carries a token that expires `token_ttl_s` after the listing
(then the image answers 401, as the real ones do). 429s and other faults are queued on the
listing's path with StandIn.fault().
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import time
from dataclasses import dataclass, field

from aiohttp import web

from tests.support.jpeg import jpeg
from tests.support.upstreams.base import StandIn

PATH = "/webcams/api/v3/webcams"
COUNTRIES = ("CH", "AT", "DE", "FR", "IT", "US", "NO", "ES")


def windy_webcams(count: int, seed: int = 1, countries: tuple[str, ...] = COUNTRIES) -> list[dict]:
    """`count` webcams as the API knows them (before the per-request image links), spread
    over `countries` in turn."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        country = countries[i % len(countries)]
        out.append(
            {
                "webcamId": 1_000_000_000 + i,
                "title": f"Webcam {i}: Summit view",
                "viewCount": rng.randrange(0, 500_000),
                "status": "active" if i % 25 else "inactive",
                "lastUpdatedOn": "2026-01-01T00:00:00.000Z",
                "categories": [{"id": "mountain", "name": "Mountain"}],
                "location": {
                    "city": f"Town {i}",
                    "region": "Region",
                    "region_code": f"{country}.01",
                    "country": country,
                    "country_code": country,
                    "continent": "Europe",
                    "continent_code": "EU",
                    "latitude": round(rng.uniform(-60, 70), 6),
                    "longitude": round(rng.uniform(-180, 180), 6),
                },
            }
        )
    return out


@dataclass
class WindyLayout:
    """The listing and the images it links to, on `server`."""

    server: StandIn
    key: str
    webcams: list[dict]
    max_offset: int = 1000
    token_ttl_s: int = 600
    updated_s: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.server.route(PATH, self._list)
        self.server.route("/img/", self._image)

    def _token(self, webcam_id: int, expires: int) -> str:
        return f"{expires}.{hashlib.sha256(f'{webcam_id}:{expires}'.encode()).hexdigest()[:16]}"

    def _list(self, request: web.Request) -> web.Response:
        if request.headers.get("x-windy-api-key") != self.key:
            return web.json_response({"message": "Unauthorized"}, status=401)
        limit, offset = int(request.query.get("limit", 10)), int(request.query.get("offset", 0))
        if limit > 50 or offset > self.max_offset:
            return web.json_response({"message": "limit or offset over the plan's"}, status=400)
        countries = request.query.get("countries")
        chosen = [
            w
            for w in self.webcams
            if not countries or w["location"]["country_code"] in countries.split(",")
        ]
        include = set(request.query.get("include", "").split(","))
        expires = int(time.time()) + self.token_ttl_s
        page = [self._item(w, include, expires) for w in chosen[offset : offset + limit]]
        return web.json_response({"total": len(chosen), "webcams": page})

    def _item(self, webcam: dict, include: set[str], expires: int) -> dict:
        item = {k: v for k, v in webcam.items() if k not in ("location", "categories")}
        item["lastUpdatedOn"] = dt.datetime.fromtimestamp(self.updated_s, dt.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S.000Z"
        )
        wid, token = webcam["webcamId"], self._token(webcam["webcamId"], expires)
        if "location" in include:
            item["location"] = webcam["location"]
        if "categories" in include:
            item["categories"] = webcam["categories"]
        if "images" in include:
            item["images"] = {
                "current": {
                    size: f"{self.server.url}/img/{wid}/{size}.jpg?token={token}"
                    for size in ("icon", "thumbnail", "preview")
                },
                "sizes": {"preview": {"width": 400, "height": 224}},
            }
        if "player" in include:
            item["player"] = {
                span: f"https://webcams.windy.com/webcams/public/embed/player/{wid}/{span}"
                for span in ("day", "month", "year", "lifetime")
            }
        if "urls" in include:
            item["urls"] = {
                "detail": f"https://www.windy.com/webcams/{wid}",
                "edit": f"https://www.windy.com/webcams/{wid}/edit",
                "provider": "https://example.org/",
            }
        return item

    def _image(self, request: web.Request) -> web.Response | bytes:
        webcam_id = int(request.path.split("/")[2])
        token = request.query.get("token", "")
        expires = int(token.split(".")[0]) if token[:1].isdigit() else 0
        if token != self._token(webcam_id, expires) or expires <= time.time():
            return web.json_response({"message": "token expired"}, status=401)
        return jpeg(seed=webcam_id % 97)


@dataclass
class Cameras:
    """IP cameras on `server`: /cams/{name}.jpg answers a new JPEG frame on each request."""

    server: StandIn
    frames: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, status: int = 200) -> str:
        self.frames[name] = 0

        def answer(request: web.Request):
            if status != 200:
                return web.Response(status=status)
            self.frames[name] += 1
            return jpeg(seed=self.frames[name], comment=f"{name} frame {self.frames[name]}")

        self.server.route(f"/cams/{name}.jpg", answer)
        return f"{self.server.url}/cams/{name}.jpg"
