"""The fixed list of requests behind the golden answers (tests/golden/answers.json): every
endpoint and its main parameter families, refusals, methods, CORS, conditional requests and
compression. Ids name the area, the case and its parameters ("forecast-zurich-si-de").

No request depends on what an earlier one left in the server; a few take a value from an
earlier one's answer (a signed link, a token, an ETag: see Fill), so they come after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

KEY = "golden-answers-test-key"  # a test key of no value anywhere else
BASE_URL = "http://golden.test"  # links name this, not the server's ephemeral port


@dataclass
class Reply:
    """One answer as it came over the wire (header lines in order, repeats kept)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def json(self):
        return json.loads(self.body)


@dataclass(frozen=True)
class Fill:
    """A value taken from an earlier request's answer (a signed link, a token, an ETag): "{}"
    in the path and header values is replaced with pick(that answer)."""

    source: str
    pick: Callable[[Reply], str]


@dataclass(frozen=True)
class Ask:
    """One request of the list."""

    id: str
    path: str
    method: str = "GET"
    key: bool = True  # send X-API-Key: KEY
    headers: dict[str, str] = field(default_factory=dict)
    fill: Fill | None = None


def _local(url: str) -> str:
    """The path and query of a link the server made (on BASE_URL)."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == BASE_URL, url
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _link(*keys: str | int) -> Callable[[Reply], str]:
    """pick(): the link at `keys` in a JSON answer, as a local path."""

    def pick(reply: Reply) -> str:
        value = reply.json()
        for k in keys:
            value = value[k]
        return _local(value)

    return pick


def _token(reply: Reply) -> str:
    return reply.json()["token"]


def _etag(reply: Reply) -> str:
    return reply.header("ETag") or "no-etag"


def _spoil(pick: Callable[[Reply], str], before: str) -> Callable[[Reply], str]:
    """pick(), with the character after the first match of regex `before` changed to another
    of its kind (a digit to a digit): a forged signature or a changed expiry."""

    def spoiled(reply: Reply) -> str:
        def other(match: re.Match) -> str:
            c = match[2]
            return match[1] + (str((int(c) + 1) % 10) if c.isdigit() else "AB"[c == "A"])

        return re.sub(f"({before})(.)", other, pick(reply), count=1)

    return spoiled


def table(prefix: str, base: str, rows: str, key: bool = True, **options) -> list[Ask]:
    """Asks from lines "NAME SUFFIX": id PREFIX-NAME, path BASE + SUFFIX (SUFFIX may be empty)."""
    asks = []
    for line in filter(None, map(str.strip, rows.splitlines())):
        name, _, suffix = line.partition(" ")
        asks.append(Ask(f"{prefix}-{name}", base + suffix.strip(), key=key, **options))
    return asks


ZURICH, NEW_YORK = "47.3769,8.5417", "40.7128,-74.006"
# Webcams of the generated catalog (seeded, at answers.WEBCAMS_SCALE): in CH, DE, AU and US;
# the one with the fewest snapshots (outages), and an inactive one (never served).
CH_CAM, DE_CAM, AU_CAM, US_CAM = "1286825478", "1783584022", "1769877061", "1699423965"
OUTAGE_CAM, INACTIVE_CAM = "1425014449", "1001449540"
TOKEN_SIGNATURE = r"[?&]token=(?:[^.&]*\.){4}"  # purpose.kid.expires.subject.SIGNATURE
GZIP = {"Accept-Encoding": "gzip"}


def search_asks() -> list[Ask]:
    """Search and lookup by id; without a key, as geocoding allows."""
    return [
        *table(
            "geo-lookup",
            "/geocoding/lookup?",
            """
        zurich                q=zurich
        zurich-encoded        q=Z%C3%BCrich
        zuerich               q=zuerich
        typo-zurihc           q=zurihc
        typo-londn            q=londn
        london-ontario        q=london,%20on
        springfield-all       q=springfield%20illinois&field=all
        bern-all              q=bern&field=all
        paris-de              q=paris&language=de
        roma                  q=Roma
        munich-encoded        q=M%C3%BCnchen
        moscow-cyrillic       q=%D0%9C%D0%BE%D1%81%D0%BA%D0%B2%D0%B0
        tokyo-ja              q=tokyo&language=ja
        geneva-fr             q=Gen%C3%A8ve&language=fr
        lisbon-pt-br          q=lisbon&language=pt-BR
        taipei-zh-tw          q=taipei&language=zh-TW
        zurich-private-lang   q=zurich&language=x-pig-latin
        zurich-ch             q=zurich&country=CH
        new-york-3            q=new%20york&limit=3
        springfield-us-20     q=springfield&country=US&limit=20
        berlin-1              q=berlin&limit=1
        san-50                q=san&limit=50
        icao-code             q=LSZH
        iata-code             q=zrh
        sao-paulo-plus        q=sao+paulo
        trimmed               q=%20%20zurich%20
        no-match              q=qxqxqxzz
        unknown-param         q=zurich&foo=bar
        """,
            key=False,
        ),
        *table(
            "geo-id",
            "/geocoding/lookup?",
            """
        zurich                id=2657896
        zurich-de             id=2657896&language=de
        london-fr             id=2643743&language=fr
        rome-it               id=3169070&language=it
        icao-lszh             id=icao:LSZH
        icao-kjfk             id=icao:KJFK
        """,
            key=False,
        ),
        *table(
            "geo-error",
            "/geocoding/lookup",
            """
        lookup-nothing
        q-short               ?q=a
        q-empty               ?q=
        q-twice               ?q=zurich&q=bern
        q-and-id              ?q=zurich&id=2657896
        q-broken-escape       ?q=zur%ich
        limit-51              ?q=zurich&limit=51
        limit-0               ?q=zurich&limit=0
        field-bogus           ?q=zurich&field=bogus
        country-xx            ?q=zurich&country=XX
        language-bad          ?q=zurich&language=!!
        id-404                ?id=999999999
        id-path               ?id=../../etc/passwd
        icao-lower            ?id=icao:lszh
        """,
            key=False,
        ),
        Ask("geo-error-q-too-long", "/geocoding/lookup?q=" + "z" * 201, key=False),
    ]


def places_asks() -> list[Ask]:
    """Reverse geocoding and countries; without a key, as geocoding allows."""
    return [
        *table(
            "geo-reverse",
            "/geocoding/reverse?",
            """
        zurich-1              lat=47.3769&lon=8.5417
        zurich-3              lat=47.3769&lon=8.5417&limit=3
        zurich-50             lat=47.3769&lon=8.5417&limit=50
        new-york-5            lat=40.7128&lon=-74.006&limit=5
        sydney-2-fr           lat=-33.8688&lon=151.2093&limit=2&language=fr
        tokyo-ja              lat=35.6762&lon=139.6503&language=ja
        ocean                 lat=0&lon=0
        north-pole            lat=90&lon=0
        south-pole-2          lat=-90&lon=0&limit=2
        antimeridian-2        lat=-17.7&lon=180&limit=2
        """,
            key=False,
        ),
        *table(
            "geo-error-reverse",
            "/geocoding/reverse?",
            """
        no-lon                lat=47
        lat-91                lat=91&lon=0
        lon-181               lat=0&lon=181
        lat-text              lat=abc&lon=1
        lat-huge              lat=1e400&lon=1
        limit-51              lat=1&lon=2&limit=51
        limit-0               lat=1&lon=2&limit=0
        """,
            key=False,
        ),
        *table(
            "geo",
            "/geocoding/countries",
            """
        countries
        country-ch            /ch
        country-CH            /CH
        country-us            /us
        country-JP            /JP
        country-BR            /BR
        country-ZA            /ZA
        country-AQ            /AQ
        country-XK            /XK
        country-fr-language   /FR?language=fr
        country-404           /ZZ
        country-bad-code      /CHE
        country-newline       /CH%0A
        """,
            key=False,
        ),
        Ask("geo-countries-with-key", "/geocoding/countries"),
    ]


def air_quality_asks() -> list[Ask]:
    """Points in the European grid, on its edges and in the global one; refusals."""
    return table(
        "air",
        "/air-quality/",
        f"""
        zurich                {ZURICH}
        london                51.5074,-0.1278
        europe-corner         72,45
        europe-edge           30,-25
        madrid-plus-sign      +40.4168,-3.7038
        exponent              4.73e1,8.54e0
        new-york              {NEW_YORK}
        beijing               39.9042,116.4074
        sao-paulo             -23.55,-46.633
        sahara                23.4,12.5
        north-pole            90,0
        error-lat-91          91,0
        error-lon-181         0,181
        error-nan             nan,0
        error-one-number      47.3
        error-three-numbers   47.3,8.5,1
        error-space           %2047.37,8.54
        error-huge            1e999,0
        """,
    )


def forecast_asks() -> list[Ask]:
    """Points, unit systems, languages, excluded blocks, extend; refusals."""
    langs = ("en", "de", "fr", "es", "ja", "zh-TW", "pt-BR", "ar", "x-pig-latin", "xx")
    return [
        *table(
            "forecast",
            "/forecast/",
            f"""
        zurich-si             {ZURICH}?units=si
        new-york-si           {NEW_YORK}?units=si
        london-si             51.5074,-0.1278?units=si
        toronto-si            43.6532,-79.3832?units=si
        sydney-si             -33.8688,151.2093?units=si
        tokyo-si              35.6762,139.6503?units=si
        mumbai-si             19.076,72.8777?units=si
        kathmandu-si          27.7172,85.324?units=si
        kiritimati-si         1.87,-157.4?units=si
        pacific-si            0,-140?units=si
        antimeridian-si       -17.7,-180?units=si
        sahara-si             23.4,12.5?units=si
        svalbard-si           78.22,15.65?units=si
        north-pole-si         90,0?units=si
        south-pole-si         -90,0?units=si
        zurich-default        {ZURICH}
        zurich-uk             {ZURICH}?units=uk
        zurich-ca             {ZURICH}?units=ca
        zurich-auto           {ZURICH}?units=auto
        new-york-auto         {NEW_YORK}?units=auto
        london-auto           51.5074,-0.1278?units=auto
        toronto-auto          43.6532,-79.3832?units=auto
        pacific-auto          0,-140?units=auto
        zurich-exclude-minutely-hourly   {ZURICH}?exclude=minutely,hourly
        zurich-exclude-currently         {ZURICH}?exclude=currently
        zurich-exclude-minutely          {ZURICH}?exclude=minutely
        zurich-exclude-hourly            {ZURICH}?exclude=hourly
        zurich-exclude-daily             {ZURICH}?exclude=daily
        zurich-exclude-alerts            {ZURICH}?exclude=alerts
        zurich-exclude-hourly-daily      {ZURICH}?exclude=hourly,daily
        zurich-exclude-everything        {ZURICH}?exclude=currently,minutely,hourly,daily,alerts
        zurich-exclude-repeated          {ZURICH}?exclude=minutely&exclude=hourly
        zurich-extend-hourly             {ZURICH}?extend=hourly&units=si
        tokyo-extend-no-minutely-daily   35.6762,139.6503?extend=hourly&exclude=minutely,daily
        new-york-us-es-no-minutely       {NEW_YORK}?units=us&lang=es&exclude=minutely
        zurich-api-key-param             {ZURICH}?units=si&api_key={KEY}
        error-units-metric    {ZURICH}?units=metric
        error-units-upper     {ZURICH}?units=SI
        error-units-twice     {ZURICH}?units=si&units=si
        error-lang-bad        {ZURICH}?lang=%21%21
        error-extend-daily    {ZURICH}?extend=daily
        error-exclude-flags   {ZURICH}?exclude=flags
        error-exclude-gap     {ZURICH}?exclude=hourly,,daily
        error-exclude-space   {ZURICH}?exclude=%20
        error-lat-91          91,0
        error-lon-181         0,181
        error-nan             nan,0
        error-one-number      47.
        error-trailing-space  47.37,8.54%20
        error-nul             47.37,8.54%00
        """,
        ),
        *[
            Ask(f"forecast-zurich-si-{lang.lower()}", f"/forecast/{ZURICH}?units=si&lang={lang}")
            for lang in langs
        ],
    ]


def webcams_asks() -> list[Ask]:
    """Lists with every filter and paging, details and histories; refusals."""
    cams = "\n".join(
        f"""
        detail-{n}            /{cam}
        snapshots-{n}-24h     /{cam}/snapshots
        snapshots-{n}-30d     /{cam}/snapshots?range=30d"""
        for n, cam in (("ch", CH_CAM), ("de", DE_CAM), ("au", AU_CAM), ("us", US_CAM))
    )
    return [
        *table(
            "webcams-list",
            "/webcams",
            """
        default
        limit-3               ?limit=3
        page-2                ?limit=10&offset=10
        last-page             ?limit=50&offset=950
        past-end              ?offset=5000
        views-asc             ?sort=views_asc&limit=20
        country-ch            ?country=CH
        country-lower         ?country=ch&limit=5
        country-us            ?country=US
        country-jp-asc        ?country=JP&sort=views_asc
        location-zurich       ?location=2657896
        location-airport      ?location=icao:LSZH
        nearby-30km           ?nearby=47.37,8.54,30
        nearby-tiny           ?nearby=47.37,8.54,0.001
        nearby-sydney-page    ?nearby=-33.87,151.21,500&limit=5&offset=2
        nearby-and-country    ?nearby=47.37,8.54,200&country=DE
        bbox-alps             ?bbox=45.8,5.9,47.8,10.5
        bbox-alps-page        ?bbox=45.8,5.9,47.8,10.5&limit=5&offset=5
        bbox-world            ?bbox=-90,-180,90,180&limit=200
        bbox-empty            ?bbox=0,-150,1,-149
        bbox-and-country      ?bbox=40,-10,55,20&country=FR&limit=10
        error-limit-201       ?limit=201
        error-limit-0         ?limit=0
        error-offset-negative ?offset=-1
        error-offset-text     ?offset=x
        error-bbox-three      ?bbox=1,2,3
        error-bbox-reversed   ?bbox=50,0,40,10
        error-bbox-lat-91     ?bbox=-91,0,10,10
        error-country-xx      ?country=XX
        error-country-che     ?country=CHE
        error-country-twice   ?country=CH&country=DE
        error-location-bad    ?location=abc
        error-sort-bogus      ?sort=newest
        error-nearby-negative ?nearby=47,8,-5
        error-nearby-no-radius ?nearby=47.37,8.54
        """,
        ),
        *table(
            "webcams",
            "/webcams",
            cams
            + f"""
        snapshots-outage-24h      /{OUTAGE_CAM}/snapshots
        snapshots-explicit-24h    /{CH_CAM}/snapshots?range=24h
        detail-inactive           /{INACTIVE_CAM}
        detail-404                /0000000000
        detail-malformed          /x%20y
        snapshots-404             /0000000000/snapshots
        snapshots-range-7d        /{CH_CAM}/snapshots?range=7d
        snapshots-range-twice     /{CH_CAM}/snapshots?range=24h&range=30d
        """,
        ),
    ]


def clusters_asks() -> list[Ask]:
    """Map clusters by key and by token, and the token endpoint."""
    token = Fill("webcams-token", _token)
    keyless = {"key": False, "fill": token}
    return [
        *table(
            "webcams-clusters",
            "/webcams/clusters?",
            """
        alps-8                bbox=45.8,5.9,47.8,10.5&zoom=8
        world-1               bbox=-90,-180,90,180&zoom=1
        europe-5              bbox=35,-10,60,30&zoom=5
        japan-6               bbox=30,128,46,146&zoom=6
        zurich-12             bbox=47.3,8.4,47.45,8.65&zoom=12
        zurich-18             bbox=47.3,8.4,47.45,8.65&zoom=18
        empty-10              bbox=0,-150,1,-149&zoom=10
        error-zoom-0          bbox=0,0,1,1&zoom=0
        error-zoom-19         bbox=0,0,1,1&zoom=19
        error-zoom-fraction   bbox=0,0,1,1&zoom=3.5
        error-no-bbox         zoom=3
        error-no-zoom         bbox=0,0,1,1
        error-bbox-three      bbox=0,0,1&zoom=3
        """,
        ),
        Ask("webcams-token", "/webcams/token", method="POST"),
        Ask("webcams-token-no-key", "/webcams/token", method="POST", key=False),
        Ask(
            "webcams-token-bad-key",
            "/webcams/token",
            method="POST",
            key=False,
            headers={"X-API-Key": "not-a-key"},
        ),
        Ask("webcams-token-get-405", "/webcams/token"),
        *table(
            "webcams-clusters",
            "/webcams/clusters?",
            """
        by-token              bbox=45.8,5.9,47.8,10.5&zoom=8&token={}
        forged-token          bbox=0,0,1,1&zoom=3&token={}x
        """,
            **keyless,
        ),
        *table(
            "webcams-clusters",
            "/webcams/clusters?",
            """
        token-and-key         bbox=35,-10,60,30&zoom=5&token={}
        """,
            fill=token,
        ),
        *table(
            "webcams-clusters",
            "/webcams/clusters?",
            """
        garbage-token         bbox=0,0,1,1&zoom=3&token=abc
        no-credentials        bbox=0,0,1,1&zoom=3
        """,
            key=False,
        ),
    ]


def player_asks() -> list[Ask]:
    """The embed page (its style and script are inline, allowed by hash in its CSP: the player
    has no asset URLs of its own) and the image host, from the links the details gave."""
    ch, de = "webcams-detail-ch", "webcams-detail-de"
    embed, image = _link("player", "embed"), _link("image", "current")
    html = {"Accept": "text/html,application/xhtml+xml"}

    def ask(
        name: str, source: str, pick: Callable[[Reply], str], path: str = "{}", **options
    ) -> Ask:
        return Ask(f"webcams-{name}", path, key=False, fill=Fill(source, pick), **options)

    return [
        ask("embed-24h", ch, embed),
        ask("embed-30d", ch, embed, "{}&range=30d"),
        ask("embed-de", de, embed),
        ask("embed-browser", de, embed, headers=html),
        ask("embed-forged", ch, _spoil(embed, TOKEN_SIGNATURE)),
        ask("embed-forged-browser", ch, _spoil(embed, TOKEN_SIGNATURE), headers=html),
        ask("embed-other-webcam", ch, lambda r: embed(r).replace(CH_CAM, DE_CAM, 1)),
        ask("embed-bad-range", ch, embed, "{}&range=7d"),
        Ask("webcams-embed-no-token", f"/webcams/embed/{CH_CAM}", key=False),
        Ask("webcams-embed-no-token-browser", f"/webcams/embed/{CH_CAM}", key=False, headers=html),
        ask("cdn-current-ch", ch, image),
        ask("cdn-current-au", "webcams-detail-au", image),
        ask("cdn-current-us", "webcams-detail-us", image),
        ask("cdn-30d-first", "webcams-snapshots-de-30d", _link("snapshots", 0, "image_url")),
        ask("cdn-24h-72", "webcams-snapshots-ch-24h", _link("snapshots", 72, "image_url")),
        ask("cdn-head", ch, image, method="HEAD"),
        ask("cdn-forged-sig", ch, _spoil(image, "[?&]sig=")),
        ask("cdn-changed-expiry", ch, _spoil(image, "[?&]expires=")),
        Ask(
            "webcams-cdn-no-signature", f"/cdn/webcams/{CH_CAM}/2026-06-15T10:00:45Z.svg", key=False
        ),
        Ask(
            "webcams-cdn-unknown",
            "/cdn/webcams/x/2026-01-31T12:00:00Z.svg?expires=9999999999&kid=golden&sig=AAAA",
            key=False,
        ),
    ]


def edge_asks() -> list[Ask]:
    """Service endpoints, unknown paths and methods, keys, CORS preflights, HEAD."""
    preflight = {
        "Origin": "https://example.org",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "X-API-Key",
    }
    return [
        *table("service", "/", "health health\nready ready\nopenapi openapi.json", key=False),
        Ask("service-openapi-gzip", "/openapi.json", key=False, headers=GZIP),
        *table(
            "edge-404", "/", "path nope\ngeocoding geocoding\nwebcams-slash webcams/", key=False
        ),
        Ask("edge-405-delete-countries", "/geocoding/countries", method="DELETE", key=False),
        Ask("edge-405-post-health", "/health", method="POST", key=False),
        Ask("edge-405-post-forecast", f"/forecast/{ZURICH}", method="POST"),
        Ask("edge-405-put-webcams", "/webcams", method="PUT"),
        *table(
            "edge-key",
            "/",
            f"""
        missing-forecast      forecast/{ZURICH}
        missing-air           air-quality/{ZURICH}
        missing-webcams       webcams
        missing-detail        webcams/{CH_CAM}
        wrong-param-air       air-quality/{ZURICH}?api_key=wrong
        empty-param           forecast/{ZURICH}?api_key=
        two-params            webcams?limit=1&api_key={KEY}&api_key=x
        """,
            key=False,
        ),
        Ask("edge-key-header-and-param", f"/webcams?limit=1&api_key={KEY}"),
        *[
            Ask(f"edge-key-header-{name}", path, key=False, headers={"X-API-Key": value})
            for name, path, value in (
                ("wrong-forecast", f"/forecast/{ZURICH}", "wrong"),
                ("wrong-geocoding", "/geocoding/lookup?q=zurich", "wrong"),
                ("list", "/webcams?limit=1", f"{KEY},x"),
            )
        ],
        *table(
            "edge-options",
            "/",
            f"""
        forecast              forecast/{ZURICH}
        lookup                geocoding/lookup?q=zurich
        token                 webcams/token
        404                   nope
        """,
            key=False,
            method="OPTIONS",
            headers=preflight,
        ),
        *table(
            "edge-head",
            "/",
            f"""
        country               geocoding/countries/CH
        forecast              forecast/{ZURICH}?units=si
        """,
            method="HEAD",
        ),
    ]


def caching_asks() -> list[Ask]:
    """Conditional requests (If-None-Match with the ETag just served) and compression."""
    country = Fill("geo-country-CH", _etag)

    def cond(
        name: str,
        path: str,
        tag: str,
        fill: Fill | None = None,
        key: bool = True,
        headers: dict[str, str] | None = None,
    ) -> Ask:
        return Ask(
            f"edge-{name}",
            path,
            key=key,
            fill=fill,
            headers={"If-None-Match": tag, **(headers or {})},
        )

    return [
        cond("304-country", "/geocoding/countries/CH", "{}", country, key=False),
        cond("304-country-star", "/geocoding/countries/CH", "*", key=False),
        cond("304-country-list", "/geocoding/countries/CH", '"other", {}', country, key=False),
        cond("304-country-gzip", "/geocoding/countries/CH", "{}", country, key=False, headers=GZIP),
        cond("200-etag-mismatch", "/geocoding/countries/CH", '"other"', key=False),
        cond(
            "304-forecast", f"/forecast/{ZURICH}?units=si", "{}", Fill("forecast-zurich-si", _etag)
        ),
        cond("304-webcams", "/webcams?limit=3", "{}", Fill("webcams-list-limit-3", _etag)),
        cond("304-air", f"/air-quality/{ZURICH}", "{}", Fill("air-zurich", _etag)),
        cond("400-not-304", "/geocoding/lookup?q=a", "*", key=False),
        *table(
            "edge-gzip",
            "/",
            f"""
        lookup                geocoding/lookup?q=zurich
        countries             geocoding/countries
        small-body            geocoding/countries/CH
        forecast              forecast/{ZURICH}?units=si
        air                   air-quality/{ZURICH}
        webcams               webcams?country=CH
        """,
            headers=GZIP,
        ),
        Ask(
            "edge-gzip-refused-q0",
            "/geocoding/countries",
            key=False,
            headers={"Accept-Encoding": "gzip;q=0"},
        ),
        Ask(
            "edge-gzip-star",
            "/geocoding/reverse?lat=47.37&lon=8.54&limit=50",
            key=False,
            headers={"Accept-Encoding": "*"},
        ),
    ]


def asks() -> list[Ask]:
    """The whole list, in replay order (an Ask with a Fill comes after its source)."""
    every = (
        search_asks()
        + places_asks()
        + air_quality_asks()
        + forecast_asks()
        + webcams_asks()
        + clusters_asks()
        + player_asks()
        + edge_asks()
        + caching_asks()
    )
    seen: set[str] = set()
    for ask in every:
        assert ask.id not in seen, f"duplicate request id {ask.id}"
        assert ask.fill is None or ask.fill.source in seen, f"{ask.id} comes before its source"
        seen.add(ask.id)
    return every
