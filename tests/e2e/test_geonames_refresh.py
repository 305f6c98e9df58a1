"""GeoNames end to end: `python -m pipeline refresh` fetches the real dumps and their daily
updates from a GeoNames stand-in (with faults), builds, and a real server answers from what the
updates say; a second refresh moves nothing but conditional checks, and a broken upstream file
leaves the published version serving."""

from __future__ import annotations

import datetime as dt
import urllib.parse

import pytest

import contract
from tests.support.procs import SHARED_GEONAMES, Server, get, run_pipeline
from tests.support.upstreams.base import Blob, Drop, StandIn, Status
from tests.support.upstreams.geonames import GeoNamesDumps

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (SHARED_GEONAMES / "cities15000.zip").is_file(),
        reason=f"real GeoNames dumps not present: {SHARED_GEONAMES}",
    ),
]

DAY = dt.timedelta(days=1)
ZURICH, SITTEN, WETZIKON, LONDON_CA = "2657896", "2658576", "2658010", "6058560"
WETZIKON_AT = (47.3264, 8.79779)
MOVED_TO = ("47.41", "8.6")


@pytest.fixture(scope="module")
def upstream():
    """Dumps written two days ago (the refresh's clock is the real one) and the days since the
    day before them: Zürich moves, Sitten is renamed Sion, Wetzikon is deleted."""
    today = dt.datetime.now(dt.timezone.utc).date()
    with StandIn() as server:
        geo = GeoNamesDumps(server, written=today - 2 * DAY)
        geo.add_day(today - 3 * DAY)
        geo.add_day(
            today - 2 * DAY, modified=[geo.row(ZURICH, latitude=MOVED_TO[0], longitude=MOVED_TO[1])]
        )
        geo.add_day(
            today - DAY,
            modified=[geo.row(SITTEN, name="Sion", asciiname="Sion")],
            deleted=[WETZIKON],
        )
        # Faults on the way: the dump's connection drops once, a day file is busy once.
        server.fault(geo.path("cities15000.zip"), Drop(after=200_000))
        server.fault(geo.day_paths(today - DAY)[1], Status(503, retry_after="1"))
        yield geo


@pytest.fixture(scope="module")
def refreshed(upstream, module_tmp):
    """Datasets and build after one refresh, and a server over the build."""
    root = module_tmp("geonames-refresh")
    datasets, out = root / "datasets", root / "build"
    result = refresh(upstream, datasets, out)
    assert result.returncode == 0, result.stderr
    with Server(out) as server:
        server.wait_ready(timeout=300)
        yield datasets, out, server


def refresh(geo: GeoNamesDumps, datasets, out, check: bool = True):
    return run_pipeline(
        "refresh",
        "--datasets",
        str(datasets),
        "--out",
        str(out),
        "--only",
        "geocoding",
        check=check,
        env={
            "WEATHERAPI_GEONAMES_BASE_URL": geo.url,
            "WEATHERAPI_GEONAMES_DUMP": "cities15000",
            "WEATHERAPI_OPERATOR_CONTACT": "ops@example.org",
        },
    )


def lookup(server: Server, **params: str):
    return get(f"{server.url}/geocoding/lookup?{urllib.parse.urlencode(params)}")


def reverse(server: Server, lat: float, lon: float, limit: int = 5) -> list[dict]:
    reply = get(f"{server.url}/geocoding/reverse?lat={lat}&lon={lon}&limit={limit}")
    assert reply.status == 200, reply.body
    return reply.json()["results"]


def test_a_deleted_place_is_gone_everywhere(refreshed):
    _, _, server = refreshed
    assert lookup(server, id=WETZIKON).status == 404
    found = lookup(server, q="Wetzikon", limit="50").json()["results"]
    assert WETZIKON not in [r["id"] for r in found]
    assert WETZIKON not in [r["id"] for r in reverse(server, *WETZIKON_AT)]


def test_a_modified_place_moves_and_a_renamed_one_is_found_by_its_new_name(refreshed):
    _, _, server = refreshed
    zurich = lookup(server, id=ZURICH).json()
    assert (zurich["lat"], zurich["lon"]) == (float(MOVED_TO[0]), float(MOVED_TO[1]))
    assert reverse(server, float(MOVED_TO[0]), float(MOVED_TO[1]), 1)[0]["id"] == ZURICH
    assert lookup(server, id=SITTEN).json()["name"] == "Sion"
    assert lookup(server, q="Sion").json()["results"][0]["id"] == SITTEN


def test_the_real_dumps_give_admin_seats_and_numbered_regions(refreshed):
    """Feature codes come from the dumps (the packaged default has none but PPLC), and a
    region's ISO code finds it where GeoNames numbers it (Ontario is CA.08)."""
    _, _, server = refreshed
    found = lookup(server, q="zurich switzerland", field="all").json()["results"]
    assert found[0]["id"] == ZURICH and found[0]["feature_code"] == "PPLA"
    bern = lookup(server, q="bern", field="all").json()["results"][0]
    assert (bern["name"], bern["feature_code"]) == ("Bern", "PPLC")
    london = lookup(server, q="london, on").json()["results"][0]
    assert london["id"] == LONDON_CA and london["admin1_name"] == "Ontario"
    seats = {
        r["feature_code"] for r in lookup(server, q="springfield", limit="10").json()["results"]
    }
    assert {"PPLA", "PPLA2"} <= seats


def test_a_second_refresh_moves_only_conditional_checks(upstream, refreshed):
    datasets, out, _ = refreshed
    before = contract.read_manifest(contract.current_version_dir(out))["build_id"]
    upstream.server.clear_hits()
    result = refresh(upstream, datasets, out)
    assert result.returncode == 0 and "nothing new: no version published" in result.stderr
    hits = upstream.server.hits()
    gets = [h for h in hits if h.method == "GET"]
    # The three small files revalidated (304, no body); no dump and no day file moved a byte
    # (yesterday's is held; today's is not asked for).
    assert sorted(h.path.rsplit("/", 1)[1] for h in gets) == [
        "admin1CodesASCII.txt",
        "admin2Codes.txt",
        "countryInfo.txt",
    ]
    assert {h.status for h in gets} == {304} and upstream.server.bytes_sent() == 0
    assert contract.read_manifest(contract.current_version_dir(out))["build_id"] == before


def test_a_broken_upstream_file_leaves_the_published_version_serving(upstream, refreshed):
    datasets, out, server = refreshed
    before = contract.read_manifest(contract.current_version_dir(out))["build_id"]
    held = (datasets / "geonames" / "admin2Codes.txt").read_bytes()
    # GeoNames' file changes, and what arrives is cut mid-line
    upstream.server.put(upstream.path("admin2Codes.txt"), Blob.of(held[:-5000]))
    result = refresh(upstream, datasets, out, check=False)
    assert result.returncode == 1 and "admin2Codes.txt" in result.stderr
    assert (datasets / "geonames" / "admin2Codes.txt").read_bytes() == held
    assert not list((datasets / "geonames").glob(".*.part"))
    assert contract.read_manifest(contract.current_version_dir(out))["build_id"] == before
    assert server.wait_ready()["state"] == "ready"
    assert lookup(server, id=ZURICH).status == 200
