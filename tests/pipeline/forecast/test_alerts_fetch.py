"""`python -m pipeline fetch alerts` against NWS and MeteoAlarm stand-ins on a local port."""

from __future__ import annotations

import asyncio
import http.client
import json
import time
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest

from pipeline.fetch.http import HttpConfig
from pipeline.fetch.source import FetchError, FetchOptions
from pipeline.forecast.sources import alerts as reader
from pipeline.forecast.sources.alerts_fetch import AlertsConfig, AlertsSource
from tests.support.upstreams.alerts import MeteoAlarmLayout, NwsLayout, Warning, nws_feature
from tests.support.upstreams.base import Corrupt, StandIn, Status

QUICK = HttpConfig(
    backoff_base_s=0.01, backoff_cap_s=0.05, read_timeout_s=5.0, attempts=3, progress=False
)
NOW = time.time()
KANSAS = [[-102.0, 39.0], [-101.0, 39.0], [-101.0, 40.0], [-102.0, 40.0], [-102.0, 39.0]]
OKLAHOMA = [[-99.0, 35.0], [-98.0, 35.0], [-98.0, 36.0], [-99.0, 36.0], [-99.0, 35.0]]
ZURICH = "47.0,8.0 47.0,9.0 48.0,9.0 48.0,8.0 47.0,8.0"


@pytest.fixture(autouse=True)
def operator_contact(monkeypatch):
    monkeypatch.setenv("WEATHERAPI_OPERATOR_CONTACT", "ops@example.org")
    monkeypatch.delenv("WEATHERAPI_METEOALARM_GEOCODES_URL", raising=False)


@pytest.fixture
def upstream():
    """One server with both layouts: an NWS alert with a polygon and one with zones only; a
    Swiss warning with a polygon and a German one by geocode only (two areas, one document)."""
    with StandIn() as server:
        nws = NwsLayout(server)
        nws.set_alerts(
            [
                nws_feature("a-1", "Tornado Warning", NOW, NOW + 7200, ring=KANSAS),
                nws_feature("a-2", "Flood Watch", NOW, NOW + 7200, zones=["OKZ001", "OKZ002"]),
            ]
        )
        nws.add_zone("forecast/OKZ001", OKLAHOMA)
        nws.add_zone("forecast/OKZ002", [[x + 1, y] for x, y in OKLAHOMA])
        meteo = MeteoAlarmLayout(server)
        meteo.set_country(
            "switzerland",
            [Warning("ch-1", "Wind warning", NOW, NOW + 7200, [("Zurich", "CH001", ZURICH)])],
        )
        meteo.set_country(
            "germany",
            [
                Warning(
                    "de-1",
                    "Thunderstorm warning",
                    NOW,
                    NOW + 7200,
                    [("Kreis A", "DE097", None), ("Kreis B", "DE098", None)],
                )
            ],
        )
        server.clear_hits()
        yield server, nws, meteo


def fetch(server, datasets, **config):
    config = AlertsConfig(countries=("switzerland", "germany"), http=QUICK, **config)
    return asyncio.run(
        AlertsSource(config).fetch(FetchOptions(datasets=datasets, base_url=server.url))
    )


def read(datasets):
    return reader.read(datasets / "alerts")


def test_both_upstreams_land_in_the_formats_the_build_reads(upstream, tmp_path):
    server, _, _ = upstream
    report = fetch(server, tmp_path)
    assert report.changed and report.files == 3  # nws, switzerland, germany
    found = read(tmp_path)
    assert sorted(a.id for a in found.alerts) == ["a-1", "a-2", "ch-1"]
    assert found.skipped == 1  # de-1: geocodes only, no outlines
    flood = next(a for a in found.alerts if a.id == "a-2")
    assert len(flood.polygons) == 2  # the outlines of its two zones
    swiss = next(a for a in found.alerts if a.id == "ch-1")
    assert swiss.title == "Wind warning"  # the English info
    # Every NWS request named the service and the contact; the German document, linked by
    # two entries, was fetched once.
    nws_hits = server.hits(prefix="/alerts") + server.hits(prefix="/zones")
    assert nws_hits and all("(+ops@example.org)" in h.headers["User-Agent"] for h in nws_hits)
    assert all(h.headers.get("Accept") == "application/geo+json" for h in nws_hits)
    assert len(server.hits("/api/v1/warnings/feeds-germany/de-1")) == 1


def test_a_second_fetch_asks_conditionally_and_moves_no_zone_or_document(upstream, tmp_path):
    server, _, _ = upstream
    fetch(server, tmp_path)
    server.clear_hits()
    report = fetch(server, tmp_path)
    assert not report.changed and report.files == 0
    hits = server.hits()
    assert sorted(h.path for h in hits) == [
        "/alerts/active",
        "/feeds/meteoalarm-legacy-atom-germany",
        "/feeds/meteoalarm-legacy-atom-switzerland",
    ]
    assert all(h.status == 304 for h in hits)


def test_a_new_alert_and_a_new_warning_arrive(upstream, tmp_path):
    server, nws, meteo = upstream
    fetch(server, tmp_path)
    nws.set_alerts([nws_feature("a-3", "Heat Advisory", NOW, NOW + 7200, zones=["OKZ001"])])
    meteo.set_country("germany", [])
    server.clear_hits()
    report = fetch(server, tmp_path)
    assert report.changed
    assert sorted(a.id for a in read(tmp_path).alerts) == ["a-3", "ch-1"]
    assert server.hits(prefix="/zones") == []  # OKZ001's outline is cached
    # the document no feed names any more is gone from the cache
    assert not any(
        "de-1" in p.read_text()
        for p in (tmp_path / "alerts-cache" / "meteoalarm" / "cap").iterdir()
    )


def test_region_outlines_from_a_geocodes_file(upstream, tmp_path, monkeypatch):
    server, _, _ = upstream
    square = [[10.0, 50.0], [11.0, 50.0], [11.0, 51.0], [10.0, 51.0], [10.0, 50.0]]
    server.put(
        "/geocodes.json",
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [
                    {
                        "type": "Feature",
                        "properties": {"code": "DE097", "type": "EMMA_ID"},
                        "geometry": {"type": "Polygon", "coordinates": [square]},
                    }
                ],
            }
        ).encode(),
    )
    monkeypatch.setenv("WEATHERAPI_METEOALARM_GEOCODES_URL", server.url + "/geocodes.json")
    fetch(server, tmp_path)
    found = read(tmp_path)
    german = next(a for a in found.alerts if a.id == "de-1")
    assert found.skipped == 0 and len(german.polygons) == 1
    lat_lon = german.polygons[0][0]
    assert lat_lon[:, 0].min() == 50.0 and lat_lon[:, 1].max() == 11.0


def test_nws_refuses_a_request_without_a_user_agent(upstream):
    server, _, _ = upstream
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.putrequest("GET", "/alerts/active", skip_accept_encoding=True)
    connection.endheaders()  # no User-Agent at all
    reply = connection.getresponse()
    assert reply.status == 403 and b"User-Agent" in reply.read()


def test_nws_needs_the_operator_contact(upstream, tmp_path, monkeypatch):
    server, _, _ = upstream
    monkeypatch.delenv("WEATHERAPI_OPERATOR_CONTACT")
    with pytest.raises(FetchError) as failure:
        fetch(server, tmp_path)
    assert "WEATHERAPI_OPERATOR_CONTACT" in str(failure.value)
    assert not failure.value.retry_later
    # MeteoAlarm, which asks for nothing of the kind, still landed
    assert sorted(a.id for a in read(tmp_path).alerts) == ["ch-1"]
    assert server.hits(prefix="/alerts") == []


def test_nothing_partial_becomes_an_input(upstream, tmp_path):
    server, nws, meteo = upstream
    fetch(server, tmp_path)
    before = {p: p.read_bytes() for p in (tmp_path / "alerts").rglob("*") if p.is_file()}
    nws.set_alerts([nws_feature("a-9", "Blizzard Warning", NOW, NOW + 7200, ring=KANSAS)])
    server.fault("/alerts/active", Corrupt(), always=True)  # never valid JSON
    meteo.set_country(
        "germany", [Warning("de-2", "Rain warning", NOW, NOW + 7200, [("Kreis C", "DE099", None)])]
    )
    server.fault("/api/v1/warnings/feeds-germany/de-2", Status(503), always=True)
    with pytest.raises(FetchError) as failure:
        fetch(server, tmp_path)
    assert "nws" in str(failure.value) and "germany" in str(failure.value)
    after = {p: p.read_bytes() for p in (tmp_path / "alerts").rglob("*") if p.is_file()}
    assert after == before  # each kept its last whole file
    assert not any(p.name.endswith(".part") for p in tmp_path.rglob("*"))


def test_the_country_file_is_cap_alerts(upstream, tmp_path):
    server, _, _ = upstream
    fetch(server, tmp_path)
    root = ET.parse(tmp_path / "alerts" / "meteoalarm" / "germany.xml").getroot()
    assert root.tag == "alerts"
    assert [child.tag for child in root] == ["{urn:oasis:names:tc:emergency:cap:1.2}alert"]


def test_cli_dry_run_and_fetch(upstream, tmp_path, pipeline_cli):
    server, _, _ = upstream
    env = {
        "WEATHERAPI_OPERATOR_CONTACT": "ops@example.org",
        "WEATHERAPI_METEOALARM_COUNTRIES": "CH, germany",
    }
    dry = pipeline_cli(
        "fetch", "alerts", "--datasets", tmp_path, "--base-url", server.url, "--dry-run", **env
    )
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        f"{server.url}/alerts/active",
        f"{server.url}/feeds/meteoalarm-legacy-atom-switzerland",
        f"{server.url}/feeds/meteoalarm-legacy-atom-germany",
    ]
    done = pipeline_cli("fetch", "alerts", "--datasets", tmp_path, "--base-url", server.url, **env)
    assert done.returncode == 0, done.stderr
    assert "alerts: fetched 3 file(s)" in done.stderr
    bad = pipeline_cli(
        "fetch",
        "alerts",
        "--datasets",
        tmp_path,
        "--base-url",
        server.url,
        **{**env, "WEATHERAPI_METEOALARM_COUNTRIES": "Atlantis"},
    )
    assert bad.returncode == 1 and "not a MeteoAlarm member" in bad.stderr


def test_unavailable_region_outlines_do_not_stop_the_warnings(upstream, tmp_path, monkeypatch):
    server, _, _ = upstream
    monkeypatch.setenv("WEATHERAPI_METEOALARM_GEOCODES_URL", server.url + "/missing.json")
    report = fetch(server, tmp_path)
    assert any("region outlines unavailable" in note for note in report.notes)
    assert sorted(a.id for a in read(tmp_path).alerts) == ["a-1", "a-2", "ch-1"]
