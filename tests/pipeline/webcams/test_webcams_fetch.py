"""`python -m pipeline fetch webcams` against a Windy-like API and cameras on local ports."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.fetch.http import HttpConfig
from pipeline.fetch.pacing import RateLimit
from pipeline.fetch.source import FetchError, FetchOptions
from pipeline.webcams.fetch import history
from pipeline.webcams.fetch.owned import OwnedConfig
from pipeline.webcams.fetch.provider import ProviderConfig
from pipeline.webcams.fetch.source import WebcamsSource
from tests.support.jpeg import jpeg
from tests.support.upstreams.base import Stall, StandIn, Status
from tests.support.upstreams.webcams import PATH, Cameras, WindyLayout, windy_webcams

QUICK = HttpConfig(
    backoff_base_s=0.01, backoff_cap_s=0.05, read_timeout_s=5.0, attempts=3, progress=False
)
PROVIDER = ProviderConfig(http=QUICK, rate=RateLimit(per_minute=60000, burst=100))
OWNED = OwnedConfig(timeout_s=1.0, concurrency=8, interval_s=1)
KEY = "windy-test-key-0123456789"


@pytest.fixture(autouse=True)
def windy_key(monkeypatch):
    monkeypatch.setenv("WEATHERAPI_WINDY_API_KEY", KEY)


@pytest.fixture
def no_provider(monkeypatch):
    monkeypatch.delenv("WEATHERAPI_WINDY_API_KEY")


def fetch(server, datasets, provider=PROVIDER, owned=OWNED):
    return asyncio.run(
        WebcamsSource(provider, owned).fetch(FetchOptions(datasets=datasets, base_url=server.url))
    )


def rows(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def catalog(datasets: Path, cameras: dict[str, str]) -> None:
    """webcams.csv with the owned cameras (name -> snapshot URL) and one without a URL."""
    lines = ["public_id,name,latitude,longitude,country_code,views,timezone,snapshot_url"]
    lines += [
        f"{name},Camera {name},47.37,8.54,CH,1,Europe/Zurich,{url}" for name, url in cameras.items()
    ]
    lines.append("plain,A camera without a URL,46.0,7.0,CH,1,,")
    (datasets / "webcams").mkdir(parents=True, exist_ok=True)
    (datasets / "webcams" / "webcams.csv").write_text("\n".join(lines) + "\n")


def test_the_provider_s_catalog_paged_within_the_plan(tmp_path):
    with StandIn() as server:
        WindyLayout(server, KEY, windy_webcams(120))
        report = fetch(server, tmp_path)
        hits = server.hits(PATH)
    assert report.changed
    assert len(hits) == 3 and all(h.headers["x-windy-api-key"] == KEY for h in hits)
    webcams = rows(tmp_path / "webcams" / "provider" / "windy.csv")
    links = rows(tmp_path / "webcam-links" / "windy.csv")
    assert len(webcams) == len(links) == 120
    assert webcams[0]["public_id"] == "windy-1000000000" and webcams[0]["status"] == "inactive"
    first = links[1]
    assert "/img/1000000001/preview.jpg?token=" in first["image_url"]
    assert first["player_url"].endswith("/player/1000000001/day")
    assert first["page_url"] == "https://www.windy.com/webcams/1000000001"
    expires = dt.datetime.fromisoformat(first["expires_at"].replace("Z", "+00:00"))
    assert 590 <= (expires - dt.datetime.now(dt.timezone.utc)).total_seconds() <= 600


def test_the_offset_limit_is_respected_and_countries_reach_the_rest(tmp_path):
    with StandIn() as server:
        WindyLayout(server, KEY, windy_webcams(200), max_offset=100)
        capped = ProviderConfig(max_offset=100, http=QUICK, rate=PROVIDER.rate)
        report = fetch(server, tmp_path / "a", capped)
        assert all(h.status == 200 for h in server.hits(PATH))  # no offset above 100
        assert len(rows(tmp_path / "a" / "webcams" / "provider" / "windy.csv")) == 150
        assert any("50 webcams lie beyond the plan's offset limit" in n for n in report.notes)
        by_country = ProviderConfig(
            max_offset=100,
            http=QUICK,
            rate=PROVIDER.rate,
            countries=("CH", "AT", "DE", "FR", "IT", "US", "NO", "ES"),
        )
        fetch(server, tmp_path / "b", by_country)
    assert len(rows(tmp_path / "b" / "webcams" / "provider" / "windy.csv")) == 200


def test_a_wrong_key_fails_at_once_and_writes_nothing(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("WEATHERAPI_WINDY_API_KEY", "not-the-key")
    with StandIn() as server:
        WindyLayout(server, KEY, windy_webcams(120))
        with pytest.raises(FetchError) as failure:
            fetch(server, tmp_path)
        assert len(server.hits(PATH)) == 1  # not retried
    assert not failure.value.retry_later and "refused the key" in str(failure.value)
    assert "not-the-key" not in str(failure.value) + caplog.text
    assert not (tmp_path / "webcam-links").exists()


def test_429_waits_as_asked_and_a_failed_listing_writes_nothing(tmp_path):
    with StandIn() as server:
        WindyLayout(server, KEY, windy_webcams(120))
        server.fault(PATH, Status(429, retry_after="1"))
        fetch(server, tmp_path)
        hits = server.hits(PATH)
        assert hits[0].status == 429 and len(hits) == 4
        assert hits[1].t - hits[0].t >= 0.95  # Retry-After: 1
        before = (tmp_path / "webcam-links" / "windy.csv").read_bytes()
        server.fault(PATH, Status(503), always=True)
        with pytest.raises(FetchError) as failure:
            fetch(server, tmp_path)
    assert failure.value.retry_later
    assert (tmp_path / "webcam-links" / "windy.csv").read_bytes() == before


def test_owned_cameras_add_one_image_each_run_and_failing_ones_are_marked(tmp_path, no_provider):
    with StandIn() as server:
        cams = Cameras(server)
        catalog(
            tmp_path,
            {
                "good": cams.add("good"),
                "dead": cams.add("dead", status=503),
                "slow": cams.add("slow"),
            },
        )
        server.fault("/cams/slow.jpg", Stall(30), always=True)
        fetch(server, tmp_path)
        fetch(server, tmp_path)
    snapshots = rows(tmp_path / "webcams" / "owned" / "snapshots.csv")
    assert [s["public_id"] for s in snapshots] == ["good", "good"]
    images = [tmp_path / "webcams" / "images" / s["image"] for s in snapshots]
    assert images[0].read_bytes() != images[1].read_bytes()
    assert all(p.read_bytes()[:3] == b"\xff\xd8\xff" for p in images)
    state = {r["public_id"]: r for r in rows(tmp_path / "webcams" / "owned" / "cameras.csv")}
    assert state["good"]["status"] == "ok" and state["good"]["failures"] == "0"
    assert state["dead"]["status"] == "failing" and "503" in state["dead"]["last_error"]
    assert state["slow"]["status"] == "failing" and state["slow"]["failures"] == "2"
    assert "plain" not in state
    if shutil.which("djpeg"):  # libjpeg's decoder reads them whole
        assert subprocess.run(["djpeg", str(images[0])], capture_output=True).returncode == 0


def test_a_camera_over_the_size_limit_or_not_an_image_is_refused(tmp_path, no_provider):
    with StandIn() as server:
        server.put("/big.jpg", jpeg(width=512, height=512))
        server.put("/page.jpg", b"<html>login</html>")
        catalog(tmp_path, {"big": server.url + "/big.jpg", "page": server.url + "/page.jpg"})
        fetch(server, tmp_path, owned=OwnedConfig(timeout_s=1.0, max_bytes=1000, interval_s=1))
    state = {r["public_id"]: r for r in rows(tmp_path / "webcams" / "owned" / "cameras.csv")}
    assert "over the limit" in state["big"]["last_error"]
    assert "not a JPEG" in state["page"]["last_error"]
    assert not list((tmp_path / "webcams" / "images").rglob("*.jpg"))


def test_a_camera_is_asked_at_most_every_interval(tmp_path, no_provider):
    with StandIn() as server:
        cams = Cameras(server)
        catalog(tmp_path, {"good": cams.add("good")})
        every_ten_minutes = OwnedConfig(timeout_s=1.0, interval_s=600)
        fetch(server, tmp_path, owned=every_ten_minutes)
        report = fetch(server, tmp_path, owned=every_ten_minutes)  # at once: not due
        assert len(server.hits("/cams/good.jpg")) == 1
    assert any("1 asked less than 600 s ago" in note for note in report.notes)


def test_the_history_window_keeps_a_day_and_a_noon_a_day(tmp_path):
    zone = "Europe/Zurich"
    now = int(dt.datetime(2026, 6, 15, 10, 0, tzinfo=dt.timezone.utc).timestamp())
    every = list(range(now - 40 * 86400, now + 1, 600))  # 40 days every 10 minutes
    kept = history.kept(every, zone, now)
    recent = [t for t in every if t >= now - history.KEEP_ALL_S]
    older = sorted(kept - set(recent))
    assert set(recent) <= kept and len(older) == history.KEEP_DAYS
    # each day's local noon (CEST: 10:00 UTC), the one the 30-day history shows; the last
    # day's part before the 25 hours ends at 08:50 UTC, its image closest to noon
    times = [dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%H:%M") for t in older]
    assert set(times[:-1]) == {"10:00"} and times[-1] == "08:50"


def test_pruning_deletes_the_images_the_window_drops(tmp_path, no_provider):
    with StandIn() as server:
        cams = Cameras(server)
        catalog(tmp_path, {"good": cams.add("good")})
        folder = tmp_path / "webcams" / "images" / "owned" / "good"
        folder.mkdir(parents=True)
        old = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3)
        for hour in (6, 10, 11, 15):  # Zurich noon is 10 or 11 UTC
            stamp = old.replace(hour=hour, minute=0, second=0).strftime("%Y%m%dT%H%M%SZ")
            (folder / f"{stamp}.jpg").write_bytes(jpeg())
        (tmp_path / "webcams" / "images" / "owned" / "gone").mkdir()
        fetch(server, tmp_path)
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 2  # the old day's noon, and today's image
    assert not (tmp_path / "webcams" / "images" / "owned" / "gone").exists()
