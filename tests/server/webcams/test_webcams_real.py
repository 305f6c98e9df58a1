"""Webcams from a real-format catalog (tests/support/webcam_inputs.py) through the pipeline and a
real server: copied images, object keys, configured link bases, snapshot windows across DST
changes and far timezones, several workers sharing the signing secrets, and the 503s."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import subprocess
import sys
import time
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

import contract
from server.webcams.data import load
from tests.support import webcam_inputs as inputs
from tests.support.procs import ROOT, Server, add_key, get, run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

NOW = int(time.time())
UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def built(module_tmp):
    root = module_tmp("webcams-real-server")
    inputs.write_inputs(root / "datasets", NOW)
    run_pipeline(
        "build",
        "--datasets",
        str(root / "datasets"),
        "--out",
        str(root / "build"),
        "--only",
        "geocoding",
        "webcams",
    )
    keys = root / "keys.json"
    return root, keys, add_key(keys, "tests")


@pytest.fixture(scope="module")
def server(built):
    root, keys, key = built
    with Server(root / "build", keys) as srv:
        srv.wait_ready()
        srv.key = key
        yield srv


def api(server, path: str, status: int = 200) -> dict:
    reply = get(server.url + path, {"X-API-Key": server.key})
    assert reply.status == status, (path, reply.body[:300])
    return reply.json()


def test_copied_images_are_served_as_supplied(server, built):
    root = built[0]
    detail = api(server, "/webcams/live")
    reply = get(detail["image"]["current"])
    assert reply.status == 200 and reply.headers["Content-Type"] == "image/png"
    assert reply.body == (root / "datasets" / "webcams" / "images" / "live.png").read_bytes()
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    assert reply.headers["Cache-Control"].endswith(", immutable")  # a file never changes


def test_object_keys_link_to_the_cdn(server):
    current = api(server, "/webcams/wdh")["image"]["current"]
    parts = urlsplit(current)
    assert parts.path == "/cdn/keys/wdh.jpg"
    query = parse_qs(parts.query)
    assert query["webcam"] == ["wdh"] and {"expires", "kid", "sig"} <= set(query)
    assert get(current).status == 404  # the built-in host has no such object


def test_a_cdn_verifies_object_links_with_the_image_key_alone(server, built):
    """The documented CDN check: HMAC-SHA256(image key of kid, "image\\0{webcam}\\0{expires}
    \\0{object key}"), base64url; the key comes from `python -m server secrets image-keys`."""
    root, keys, _ = built
    result = subprocess.run(
        [sys.executable, "-m", "server", "secrets", "image-keys", "--keys-file", str(keys)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    image_keys = {kid: _unb64(k) for kid, k in json.loads(result.stdout).items()}
    secrets_file = json.loads((keys.parent / "signing-secrets.json").read_text())
    masters = {v.encode() for v in secrets_file["secrets"].values()}
    assert image_keys and not masters & set(image_keys.values())
    current = urlsplit(api(server, "/webcams/wdh")["image"]["current"])
    query = {k: v[0] for k, v in parse_qs(current.query).items()}
    object_key = current.path.removeprefix("/cdn/")

    def sig(key: str) -> str:
        message = f"image\0{query['webcam']}\0{query['expires']}\0{key}".encode()
        mac = hmac.new(image_keys[query["kid"]], message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    assert sig(object_key) == query["sig"]
    assert sig("keys/other.jpg") != query["sig"]  # a rewritten link does not verify


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_filters_on_a_small_catalog(server):
    ids = lambda body: [c["public_id"] for c in body["results"]]  # noqa: E731
    assert ids(api(server, "/webcams?country=ch")) == ["mhorn", "zrh-1", "zrh-2"]
    # Valid whether or not the catalog has webcams there; the list is fixed (ISO 3166-1).
    assert api(server, "/webcams?country=DE") == {"results": [], "count": 0, "total": 0}
    assert api(server, "/webcams?country=EU", 400)["errors"][0]["parameter"] == "country"
    # Zürich is the small dump's nearest place to the Matterhorn camera, but 170 km away:
    # beyond the 50 km link reach, so that camera has no location.
    assert ids(api(server, "/webcams?location=2657896&sort=views_asc")) == ["zrh-1", "zrh-2"]
    assert api(server, "/webcams/old-cam", 404)["status"] == 404  # inactive
    everything = api(server, "/webcams?limit=200")
    assert everything["total"] == len(inputs.SERVED)
    wdh = next(c for c in everything["results"] if c["public_id"] == "wdh")
    assert wdh["name"] == 'Windhoek <Main> & "Co"'


def test_a_box_of_the_shown_position_finds_the_webcam(server):
    # The input has 7 decimals; a bbox of just the shown point, and clusters of it, find it.
    detail = api(server, "/webcams/mhorn")
    lat, lon = detail["latitude"], detail["longitude"]
    assert (lat, lon) == (45.97654, 7.65877)
    box = f"{lat},{lon},{lat},{lon}"
    assert [c["public_id"] for c in api(server, f"/webcams?bbox={box}")["results"]] == ["mhorn"]
    clusters = api(server, f"/webcams/clusters?bbox={box}&zoom=18")["clusters"]
    assert [c["count"] for c in clusters] == [1]
    assert clusters[0]["webcam"]["public_id"] == "mhorn"
    near = api(server, f"/webcams?nearby={lat},{lon},0.001")["results"]
    assert [c["public_id"] for c in near] == ["mhorn"]


def test_live_webcam_history(server):
    expected = [t for t, _ in inputs.expected_snapshots(NOW)["live"]]
    before = int(time.time())
    body = api(server, "/webcams/live/snapshots")
    after = int(time.time())
    got = [
        int(dt.datetime.fromisoformat(s["captured_at"].replace("Z", "+00:00")).timestamp())
        for s in body["snapshots"]
    ]
    assert any(
        got == [t for t in expected if now - 86_400 <= t <= now] for now in range(before, after + 1)
    )
    assert all(get(s["image_url"]).status == 200 for s in body["snapshots"][-3:])
    # Its 30d history by the server's clock (Europe/Amsterdam; snapshots up to 12 h ahead of
    # it): today's noon only once passed, whatever the hour of the run.
    times = [t for t, _ in inputs.expected_snapshots(NOW)["live"]]
    before = int(time.time())
    month = api(server, "/webcams/live/snapshots?range=30d")
    after = int(time.time())
    got = [s["captured_at"] for s in month["snapshots"]]
    assert any(
        got == [_stamp(t) for t in inputs.brute_30d(times, "Europe/Amsterdam", now)]
        for now in range(before, after + 1)
    )
    # The other webcams' snapshots are from 2024: nothing in the last 30 days.
    assert api(server, "/webcams/zrh-1/snapshots?range=30d") == {"snapshots": [], "count": 0}


def _stamp(unix_s: int) -> str:
    return dt.datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_embed_page_escapes_names(server):
    embed = api(server, "/webcams/wdh")["player"]["embed"]
    page = get(embed).body.decode()
    assert "<title>Windhoek &lt;Main&gt; &amp; &quot;Co&quot; – webcam</title>" in page
    assert "<Main>" not in page  # not even inside the JSON data


def _window(built, public_id: str, range_: str, now: str) -> list[str]:
    version = contract.current_version_dir(built[0] / "build")
    data = load(version, contract.read_manifest(version)["areas"]["webcams"])
    row = data.catalog.row_of[public_id]
    unix = int(dt.datetime.fromisoformat(now).replace(tzinfo=UTC).timestamp())
    indices, times = data.snapshots.window(row, range_, unix, data.catalog.timezones[row])
    assert data.snapshots.times.take(indices).tolist() == times.tolist()
    return [dt.datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M") for t in times]


@pytest.mark.parametrize(
    "public_id, now, expected",
    [
        # Zurich, spring forward on 31 March: local noon is 11:00Z, then 10:00Z.
        (
            "zrh-1",
            "2024-04-02T00:00:00",
            ["2024-03-30T11:00", "2024-03-31T10:00", "2024-04-01T10:00"],
        ),
        # A pick captured after now is never shown (a feed's clock ahead of the server's).
        ("zrh-1", "2024-04-01T09:00:00", ["2024-03-30T11:00", "2024-03-31T10:00"]),
        # Zurich, fall back on 27 October: 10:00Z, then 11:00Z.
        (
            "zrh-2",
            "2024-10-30T00:00:00",
            ["2024-10-26T10:00", "2024-10-27T11:00", "2024-10-28T11:00"],
        ),
        # Kiritimati (UTC+14): local noon is 22:00Z of the day before; snapshots every 3 h.
        (
            "kiri",
            "2024-06-05T00:00:00",
            ["2024-06-01T00:00", "2024-06-01T21:00", "2024-06-02T21:00", "2024-06-03T21:00"],
        ),
        # Pago Pago (UTC-11): local noon is 23:00Z; snapshots every 2 h from 00:00Z, so 11:00
        # and 13:00 local tie and the earlier wins.
        (
            "pago",
            "2024-06-05T00:00:00",
            ["2024-06-01T00:00", "2024-06-01T22:00", "2024-06-02T22:00", "2024-06-03T22:00"],
        ),
        # Lord Howe: DST ends 7 April at 02:00 (+11 -> +10:30): noon 01:00Z, then 01:30Z (the
        # series starts at 23:00 local on 5 April).
        (
            "lhi",
            "2024-04-09T00:00:00",
            ["2024-04-05T12:00", "2024-04-06T01:00", "2024-04-07T01:30", "2024-04-08T01:30"],
        ),
        # The last 30 days with a final pick: without one today, 31 March to 29 April...
        ("zrh-1", "2024-04-30T12:00:00", ["2024-03-31T10:00", "2024-04-01T10:00"]),
        # ... and a day later only the last day is still inside the window.
        ("zrh-1", "2024-05-01T12:00:00", ["2024-04-01T10:00"]),
        # Today is shown only once its pick is final. Kiritimati on 3 June (noon 22:00Z on the
        # 2nd): at 11:30 local the 11:00 snapshot is left out (a later one could be closer)...
        ("kiri", "2024-06-02T21:30:00", ["2024-06-01T00:00", "2024-06-01T21:00"]),
        # ... at 13:00 local too: nothing captured since noon yet...
        ("kiri", "2024-06-02T23:00:00", ["2024-06-01T00:00", "2024-06-01T21:00"]),
        # ... at 14:00 local the 14:00 snapshot exists: 11:00 is final and shown.
        (
            "kiri",
            "2024-06-03T00:00:00",
            ["2024-06-01T00:00", "2024-06-01T21:00", "2024-06-02T21:00"],
        ),
        # The data stops at 11:00 local on 4 June (an artifact built in the morning): not that
        # day's noon even at 23:00 local.
        (
            "kiri",
            "2024-06-04T09:00:00",
            ["2024-06-01T00:00", "2024-06-01T21:00", "2024-06-02T21:00"],
        ),
        # Pago Pago on 1 June (noon 23:00Z): 11:30 and 12:30 local leave the 11:00 snapshot out,
        # at 13:00 local the tie with 13:00 is settled for 11:00.
        ("pago", "2024-06-01T22:30:00", ["2024-06-01T00:00"]),
        ("pago", "2024-06-01T23:30:00", ["2024-06-01T00:00"]),
        ("pago", "2024-06-02T00:00:00", ["2024-06-01T00:00", "2024-06-01T22:00"]),
    ],
)
def test_30d_picks_the_snapshot_closest_to_local_noon(built, public_id, now, expected):
    assert _window(built, public_id, "30d", now) == expected


@pytest.mark.parametrize("public_id", ["kiri", "pago", "lhi", "zrh-1", "zrh-2", "wdh", "live"])
def test_30d_matches_brute_force_at_every_hour(built, public_id):
    times = [t for t, _ in inputs.expected_snapshots(NOW)[public_id]]
    version = contract.current_version_dir(built[0] / "build")
    data = load(version, contract.read_manifest(version)["areas"]["webcams"])
    row = data.catalog.row_of[public_id]
    zone = data.catalog.timezones[row]
    # Every 20 minutes over the series and a day either side: before and after each local noon.
    for now in range(times[0] - 86_400, times[-1] + 86_400, 1200):
        _, got = data.snapshots.window(row, "30d", now, zone)
        assert got.tolist() == inputs.brute_30d(times, zone, now), (public_id, now)


def test_24h_window_bounds(built):
    got = _window(built, "zrh-1", "24h", "2024-03-31T12:00:00")
    assert got[0] == "2024-03-30T12:00" and got[-1] == "2024-03-31T12:00" and len(got) == 25


def test_configured_link_bases(built):
    root, keys, key = built
    with Server(
        root / "build",
        keys,
        WEATHERAPI_CDN_URL="https://cdn.example.org/media/",
        WEATHERAPI_EMBED_BASE_URL="https://player.example.org",
    ) as srv:
        srv.wait_ready()
        reply = get(f"{srv.url}/webcams/zrh-1", {"X-API-Key": key})
        detail = reply.json()
    assert "Host" not in reply.headers["Vary"]  # links no longer depend on Host
    assert detail["image"]["current"].startswith("https://cdn.example.org/media/")
    assert detail["player"]["embed"].startswith("https://player.example.org/webcams/embed/zrh-1?")


def test_a_base_url_is_used_whatever_the_host_header(built):
    root, keys, key = built
    with Server(root / "build", keys, WEATHERAPI_BASE_URL="https://api.example.org/") as srv:
        srv.wait_ready()
        replies = [
            get(f"{srv.url}/webcams/zrh-1", {"X-API-Key": key, "Host": host})
            for host in ("evil.example", "bad host!")
        ]
    for reply in replies:
        detail = reply.json()
        assert reply.status == 200 and "Host" not in reply.headers["Vary"]
        assert detail["image"]["current"].startswith("https://api.example.org/cdn/webcams/")
        assert detail["player"]["embed"].startswith("https://api.example.org/webcams/embed/")


def test_the_players_range_links_keep_the_base_urls_path(built):
    # Behind a proxy that serves the API under /weather, a link to /webcams/... is a 404.
    root, keys, key = built
    with Server(root / "build", keys, WEATHERAPI_BASE_URL="https://api.example.org/weather") as srv:
        srv.wait_ready()
        embed = get(f"{srv.url}/webcams/zrh-1", {"X-API-Key": key}).json()["player"]["embed"]
        assert embed.startswith("https://api.example.org/weather/webcams/embed/zrh-1?token=")
        page = get(embed.replace("https://api.example.org/weather", srv.url)).body.decode()
    token = embed.split("token=")[1]
    assert f'<a href="{embed}" aria-current=page>24h</a>' in page
    assert f'<a href="{embed}&amp;range=30d">30d</a>' in page
    assert token and 'href="/webcams' not in page


def test_workers_share_the_signing_secrets(built):
    root, keys, key = built
    with Server(root / "build", keys, "--workers", "2") as srv:
        srv.wait_ready()
        links = [
            get(f"{srv.url}/webcams/mhorn", {"X-API-Key": key}).json()["player"]["embed"]
            for _ in range(8)
        ]
        # Links made by either worker open on either worker.
        assert all(get(link).status == 200 for link in links for _ in range(3))
    with Server(root / "build", keys) as srv:  # and after a restart
        srv.wait_ready()
        assert get(links[0].replace(links[0].split("/webcams")[0], srv.url)).status == 200


def test_webcams_absent_is_503_while_geocoding_works(tmp_path, built):
    keys, key = built[1], built[2]
    datasets = tmp_path / "datasets"
    inputs.write_inputs(datasets, NOW)
    run_pipeline(
        "build",
        "--datasets",
        str(datasets),
        "--out",
        str(tmp_path / "build"),
        "--only",
        "geocoding",
    )
    with Server(tmp_path / "build", keys) as srv:
        srv.wait_ready()
        for path in (
            "/webcams",
            "/webcams/zrh-1",
            "/webcams/zrh-1/snapshots",
            "/webcams/clusters?bbox=0,0,1,1&zoom=3",
        ):
            reply = get(srv.url + path, {"X-API-Key": key})
            assert reply.status == 503 and reply.headers["Retry-After"], path
            assert "webcams data is not in the published build" in reply.json()["detail"]
        assert get(f"{srv.url}/webcams/token", {"X-API-Key": key}, method="POST").status == 503
        assert get(f"{srv.url}/webcams/token").status == 405  # whatever the data
        assert get(f"{srv.url}/webcams", {}).status == 403  # the key comes first
        assert get(f"{srv.url}/geocoding/lookup?q=zurich").status == 200


def test_sparse_search_is_searchsorted(built):
    version = contract.current_version_dir(built[0] / "build")
    snaps = load(version, contract.read_manifest(version)["areas"]["webcams"]).snapshots
    rng = __import__("random").Random(3)
    everything = snaps.times.read(0, snaps.times.size)
    for _ in range(400):
        row = rng.randrange(len(snaps.offsets) - 1)
        a, b = int(snaps.offsets[row]), int(snaps.offsets[row + 1])
        times = everything[a:b]
        value = int(rng.choice(times.tolist())) + rng.choice([-1, 0, 0, 1]) if len(times) else 0
        for side in ("left", "right"):
            assert snaps.search(a, b, value, side) == a + int(
                np.searchsorted(times, value, side=side)
            )


def test_clusters_tokens_outlive_a_rotation(server, built):
    keys, key = built[1], built[2]
    url = f"{server.url}/webcams/clusters?bbox=-90,-180,90,180&zoom=1"

    def mint() -> str:
        reply = get(f"{server.url}/webcams/token", {"X-API-Key": key}, method="POST")
        assert reply.status == 200, reply.body
        return reply.json()["token"]

    before = mint()
    rotated = subprocess.run(
        [sys.executable, "-m", "server", "secrets", "rotate", "--keys-file", str(keys)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rotated.returncode == 0, rotated.stderr
    deadline = time.monotonic() + 30
    while (after := mint()).split(".")[1] == before.split(".")[1]:  # until the server follows
        assert time.monotonic() < deadline, "the rotated secrets were not picked up"
        time.sleep(0.05)
    # Each token's subject is keyed by the secret that signed it: both name the key.
    assert get(f"{url}&token={before}").status == 200
    assert get(f"{url}&token={after}").status == 200
