"""Stand-ins for the alert upstreams on a StandIn server: the NWS API and MeteoAlarm's feeds.

    with StandIn() as server:
        nws = NwsLayout(server)
        nws.set_alerts([nws_feature("a-1", "Tornado Warning", ring=...),      # a polygon
                        nws_feature("a-2", "Flood Watch", zones=["KSZ001"])])  # zones only
        nws.add_zone("forecast/KSZ001", ring)
        meteo = MeteoAlarmLayout(server)
        meteo.set_country("germany", [Warning("w-1", "DE097", ...)])

As the real NWS API does, every path of it answers 403 (problem+json) to a request without a
User-Agent. MeteoAlarm's layout as observed in its public feeds: an Atom feed per country,
`cap:` elements and a link of type application/cap+xml per entry, one entry per warning and
area, the CAP 1.2 document (a German and an English info) at the link without its query.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from aiohttp import web

from tests.support.upstreams.base import StandIn

NWS_ZONE_URL = "https://api.weather.gov/zones/forecast/"
CAP12 = "urn:oasis:names:tc:emergency:cap:1.2"


def iso(unix_s: float) -> str:
    return dt.datetime.fromtimestamp(unix_s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def nws_feature(
    ident: str,
    event: str,
    onset_s: float,
    ends_s: float,
    ring: list | None = None,
    zones: list[str] = (),
) -> dict:
    """An alert as /alerts/active lists it: with a polygon (`ring` of [lon, lat]), or with
    geometry null and the forecast zones it covers (`zones`: UGC codes such as KSZ001)."""
    url = f"https://api.weather.gov/alerts/{ident}"
    return {
        "id": url,
        "type": "Feature",
        "geometry": {"type": "Polygon", "coordinates": [ring]} if ring else None,
        "properties": {
            "@id": url,
            "@type": "wx:Alert",
            "id": ident,
            "areaDesc": "; ".join(zones) or "Polygon area",
            "geocode": {"SAME": [], "UGC": list(zones)},
            "affectedZones": [NWS_ZONE_URL + z for z in zones],
            "references": [],
            "sent": iso(onset_s - 600),
            "effective": iso(onset_s - 600),
            "onset": iso(onset_s),
            "expires": iso(ends_s),
            "ends": iso(ends_s),
            "status": "Actual",
            "messageType": "Alert",
            "category": "Met",
            "severity": "Severe",
            "certainty": "Likely",
            "urgency": "Expected",
            "event": event,
            "sender": "w-nws.webmaster@noaa.gov",
            "senderName": "NWS Test Office",
            "headline": f"{event} issued",
            "description": f"{event} in effect.",
            "instruction": "Stay informed.",
            "response": "Prepare",
            "parameters": {"NWSheadline": [f"{event.upper()} IN EFFECT"]},
        },
    }


def forbidden(request: web.Request) -> web.Response | None:
    """403 as api.weather.gov gives it to a request without a User-Agent."""
    if request.headers.get("User-Agent", "").strip():
        return None
    return web.Response(
        status=403,
        content_type="application/problem+json",
        text=json.dumps(
            {
                "correlationId": "0",
                "title": "Forbidden",
                "type": "https://api.weather.gov/problems/Forbidden",
                "status": 403,
                "detail": "Access denied: a User-Agent is required",
                "instance": "https://api.weather.gov/requests/0",
            }
        ),
    )


@dataclass
class NwsLayout:
    """The NWS API's /alerts/active and /zones/{type}/{id} on `server`."""

    server: StandIn

    def __post_init__(self) -> None:
        self.server.route("/alerts", forbidden)
        self.server.route("/zones", forbidden)

    def set_alerts(self, features: list[dict]) -> None:
        self.server.put(
            "/alerts/active",
            json.dumps(
                {
                    "@context": ["https://geojson.org/geojson-ld/geojson-context.jsonld"],
                    "type": "FeatureCollection",
                    "features": features,
                    "title": "Current watches, warnings, and advisories",
                    "updated": iso(0),
                }
            ).encode(),
        )

    def add_zone(self, ref: str, ring: list) -> None:
        """A zone ("forecast/KSZ001") whose outline is one ring of [lon, lat]."""
        kind, zone = ref.split("/")
        self.server.put(
            f"/zones/{ref}",
            json.dumps(
                {
                    "id": f"https://api.weather.gov/zones/{ref}",
                    "type": "Feature",
                    "geometry": {"type": "Polygon", "coordinates": [ring]},
                    "properties": {
                        "@id": f"https://api.weather.gov/zones/{ref}",
                        "@type": "wx:Zone",
                        "id": zone,
                        "type": "public" if kind == "forecast" else kind,
                        "name": f"Zone {zone}",
                        "state": zone[:2],
                    },
                }
            ).encode(),
        )


@dataclass
class Warning:
    """One MeteoAlarm warning: its areas as (name, EMMA_ID, polygon "lat,lon ..." or None)."""

    ident: str
    event: str
    onset_s: float
    expires_s: float
    areas: list[tuple[str, str, str | None]] = field(default_factory=list)
    severity: str = "Moderate"


def cap_document(warning: Warning) -> str:
    """The warning as MeteoAlarm's CAP 1.2: a German info, then an English one."""

    def info(language: str, event: str) -> str:
        areas = "".join(
            f"<area><areaDesc>{escape(name)}</areaDesc>"
            + (f"<polygon>{polygon}</polygon>" if polygon else "")
            + f"<geocode><valueName>EMMA_ID</valueName><value>{code}</value></geocode></area>"
            for name, code, polygon in warning.areas
        )
        return (
            f"<info><language>{language}</language><category>Met</category>"
            f"<event>{escape(event)}</event><responseType>Monitor</responseType>"
            f"<urgency>Future</urgency><severity>{warning.severity}</severity>"
            f"<certainty>Likely</certainty><onset>{iso(warning.onset_s)}</onset>"
            f"<expires>{iso(warning.expires_s)}</expires>"
            f"<senderName>Test Weather Service</senderName>"
            f"<headline>{escape(event)}</headline><description>{escape(event)}."
            f"</description><parameter><valueName>awareness_level</valueName>"
            f"<value>2; yellow; Moderate</value></parameter><parameter><valueName>"
            f"awareness_type</valueName><value>1; Wind</value></parameter>{areas}</info>"
        )

    return (
        f'<?xml version="1.0" encoding="UTF-8"?><alert xmlns="{CAP12}">'
        f"<identifier>{warning.ident}</identifier><sender>cap@example.org</sender>"
        f"<sent>{iso(warning.onset_s - 3600)}</sent><status>Actual</status>"
        f"<msgType>Alert</msgType><scope>Public</scope>"
        + info("de-DE", "Windwarnung")
        + info("en-GB", warning.event)
        + "</alert>"
    )


@dataclass
class MeteoAlarmLayout:
    """MeteoAlarm's legacy Atom feeds and their CAP documents on `server`."""

    server: StandIn

    def cap_path(self, country: str, warning: Warning) -> str:
        return f"/api/v1/warnings/feeds-{country}/{warning.ident}"

    def set_country(self, country: str, warnings: list[Warning]) -> None:
        entries = []
        for warning in warnings:
            self.server.put(self.cap_path(country, warning), cap_document(warning).encode())
            for index, (name, code, _) in enumerate(warning.areas):
                link = (
                    f"{self.server.url}{self.cap_path(country, warning)}?index_info=1"
                    f"&amp;index_area={index}&amp;index_geocode=0"
                )
                entries.append(
                    f"<entry><cap:areaDesc>{escape(name)}</cap:areaDesc><cap:event>"
                    f"{escape(warning.event)}</cap:event><cap:severity>{warning.severity}"
                    f"</cap:severity><cap:onset>{iso(warning.onset_s)}</cap:onset>"
                    f"<cap:expires>{iso(warning.expires_s)}</cap:expires><cap:identifier>"
                    f"{warning.ident}</cap:identifier><cap:message_type>Alert"
                    f"</cap:message_type><cap:status>Actual</cap:status><cap:geocode>"
                    f"<valueName>EMMA_ID</valueName><value>{code}</value></cap:geocode>"
                    f'<id>{link}</id><link href="{link}" hreflang="en" title="{escape(name)}'
                    f'" type="application/cap+xml"/><author><name>meteoalarm</name></author>'
                    f"<title>Yellow Wind Warning issued for {country} - {escape(name)}</title>"
                    f"<updated>{iso(warning.onset_s - 3600)}</updated></entry>"
                )
        self.server.put(
            f"/feeds/meteoalarm-legacy-atom-{country}",
            (
                '<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
                f'xmlns:cap="{CAP12}"><id>https://feeds.meteoalarm.org/feeds/meteoalarm-legacy-'
                f"atom-{country}</id><title>MeteoAlarm {country}</title><updated>{iso(0)}</updated>"
                + "".join(entries)
                + "</feed>"
            ).encode(),
        )
