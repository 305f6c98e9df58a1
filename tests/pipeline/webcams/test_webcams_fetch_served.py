"""End to end: `refresh --only webcams --sources webcams` against a Windy-like API and a camera,
with a server running: an owned camera's history grows by one snapshot per run and its images
come from our own host (/cdn); a provider's image links are refreshed before they expire (a
links-only refresh, the rest of the area linked), and the server never gives out a link that
expires within its answer's cache period."""

from __future__ import annotations

import csv
import time

import contract
from contract import Webcams as W
from tests.support.procs import Server, get, run_pipeline
from tests.support.upstreams.base import StandIn
from tests.support.upstreams.webcams import Cameras, WindyLayout, windy_webcams

KEY = "windy-e2e-key"


def refresh(datasets, out, upstream, **env):
    return run_pipeline(
        "refresh",
        "--datasets",
        str(datasets),
        "--out",
        str(out),
        "--only",
        "webcams",
        "--sources",
        "webcams",
        env={
            "WEATHERAPI_WINDY_API_KEY": KEY,
            "WEATHERAPI_WINDY_BASE_URL": upstream.url,
            "WEATHERAPI_CAMERA_TIMEOUT_S": "5",
            "WEATHERAPI_CAMERA_INTERVAL_S": "1",
            **env,
        },
    )


def wait_version(server: Server, before: str) -> str:
    """The webcams area's version once the server has loaded a new one."""
    deadline = time.monotonic() + 60
    while (version := server.wait_ready()["areas"]["webcams"]["version"]) == before:
        assert time.monotonic() < deadline, "the new version was not loaded"
        time.sleep(0.1)
    return version


def test_an_owned_camera_s_history_grows_and_is_served_from_our_host(tmp_path, keys_file):
    datasets, out = tmp_path / "d", tmp_path / "out"
    with StandIn() as upstream:
        url = Cameras(upstream).add("gate")
        (datasets / "webcams").mkdir(parents=True)
        (datasets / "webcams" / "webcams.csv").write_text(
            "public_id,name,latitude,longitude,country_code,views,timezone,snapshot_url\n"
            f"gate,Gate camera,47.37,8.54,CH,3,Europe/Zurich,{url}\n"
        )
        env = {"WEATHERAPI_WINDY_API_KEY": ""}  # owned cameras only
        refresh(datasets, out, upstream, **env)
        with Server(out, keys_file[0]) as server:
            key = {"X-API-Key": keys_file[1]}
            version = server.wait_ready(timeout=120)["areas"]["webcams"]["version"]
            counts = []
            for _ in range(2):
                history = get(f"{server.url}/webcams/gate/snapshots", key).json()
                counts.append(history["count"])
                time.sleep(1.1)  # the next image is named by the next second
                refresh(datasets, out, upstream, **env)
                version = wait_version(server, version)
            history = get(f"{server.url}/webcams/gate/snapshots", key).json()
            counts.append(history["count"])
            image = get(history["snapshots"][-1]["image_url"])
            detail = get(f"{server.url}/webcams/gate", key).json()
    assert counts == [1, 2, 3]
    assert history["snapshots"][-1]["image_url"].startswith(f"{server.url}/cdn/webcams/gate/")
    assert image.status == 200 and image.headers["Content-Type"] == "image/jpeg"
    assert image.body[:3] == b"\xff\xd8\xff" and b"gate frame 3" in image.body
    assert detail["image"]["current"] == history["snapshots"][-1]["image_url"]


def test_provider_links_are_refreshed_before_they_expire(tmp_path, keys_file):
    datasets, out = tmp_path / "d", tmp_path / "out"
    with StandIn() as upstream:
        WindyLayout(upstream, KEY, windy_webcams(60))
        first = refresh(datasets, out, upstream)
        assert "building webcams\n" in first.stderr or "building webcams " in first.stderr
        with Server(out, keys_file[0]) as server:
            key = {"X-API-Key": keys_file[1]}
            version = server.wait_ready(timeout=120)["areas"]["webcams"]["version"]
            before = get(f"{server.url}/webcams/windy-1000000001", key).json()
            assert get(before["image"]["current"]).status == 200  # the provider's link
            before_dir = contract.current_version_dir(out)
            time.sleep(1.1)  # a token of another second
            again = refresh(datasets, out, upstream)
            assert "building webcams (links only)" in again.stderr, again.stderr[-2000:]
            version = wait_version(server, version)
            after = get(f"{server.url}/webcams/windy-1000000001", key).json()
            after_dir = contract.current_version_dir(out)
            # Links that expire within the answer's cache period are never given out.
            links = datasets / "webcam-links" / "windy.csv"
            with links.open(newline="") as handle:
                records = list(csv.DictReader(handle))
            for record in records:
                record["expires_at"] = "2000-01-01T00:00:00Z"
            with links.open("w", newline="") as handle:
                writer = csv.DictWriter(handle, list(records[0]))
                writer.writeheader()
                writer.writerows(records)
            run_pipeline(
                "refresh",
                "--datasets",
                str(datasets),
                "--out",
                str(out),
                "--only",
                "webcams",
                "--no-fetch",
            )
            wait_version(server, version)
            expired = get(f"{server.url}/webcams/windy-1000000001", key).json()
            listed = get(f"{server.url}/webcams?country=AT&limit=200", key).json()
    assert after["image"]["current"] != before["image"]["current"]
    assert after["provider"] == {
        "name": "Windy.com",
        "attribution": "Webcams provided by windy.com",
        "url": "https://www.windy.com/webcams/1000000001",
    }
    assert after["player"]["embed"].endswith("/embed/player/1000000001/day")
    # only the links were rebuilt: the catalog's files are the previous version's
    for name in (W.CAMS_ARROW, W.CAM_JSON, W.CELLS):
        assert (after_dir / name).stat().st_ino == (before_dir / name).stat().st_ino
    assert expired["image"]["current"] is None
    assert all(item["image"]["current"] is None for item in listed["results"])
