"""GET /air-quality/{lat},{lon} through the real pipeline and a real server: known values from
small real-format CAMS files (tests/support/cams.py), inside and outside Europe, across the
0/360 seam and the antimeridian, at the domain's edges; stitching and windows; errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pipeline.air_quality import aqi
from tests.support import cams as known
from tests.support.procs import Server, get, run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

POLLUTANT_KEYS = {
    "pm25": "pm25_ugm3",
    "pm10": "pm10_ugm3",
    "ozone": "o3_ugm3",
    "nitrogenDioxide": "no2_ugm3",
    "sulphurDioxide": "so2_ugm3",
    "carbonMonoxide": "co_ugm3",
}
POLLEN_KEYS = {
    "pollenBirch": "birch_pollen_grains_m3",
    "pollenGrass": "grass_pollen_grains_m3",
    "pollenOlive": "olive_pollen_grains_m3",
    "pollenRagweed": "ragweed_pollen_grains_m3",
    "pollenAlder": "alder_pollen_grains_m3",
    "pollenMugwort": "mugwort_pollen_grains_m3",
}
RECORD_KEYS = ["time", "europeanAqi", "usAqi", *POLLUTANT_KEYS]
EUROPE_KEYS = RECORD_KEYS + ["dustAod", *POLLEN_KEYS]


@pytest.fixture(scope="module")
def aq(module_tmp, keys_file):
    """A server over an air-quality build of the known-value inputs (today's and yesterday's
    runs, relative to now)."""
    root = module_tmp("aq")
    today = known.today_s(time.time())
    datasets = known.write_known(root / "datasets", today)
    run_pipeline(
        "build", "--datasets", str(datasets), "--out", str(root / "build"), "--only", "air_quality"
    )
    with Server(root / "build", keys_file[0]) as srv:
        srv.wait_ready()
        srv.key, srv.tiny_key, srv.today = keys_file[1], keys_file[2], today
        yield srv


def fetch(srv, coordinates: str, **headers) -> dict:
    before = int(time.time() // 3600 * 3600)
    reply = get(f"{srv.url}/air-quality/{coordinates}", {"X-API-Key": srv.key, **headers})
    after = int(time.time() // 3600 * 3600)
    assert reply.status == 200, reply.body[:300]
    body = reply.json()
    assert body["current"]["time"] in (before, after)
    assert body["current"] == body["hourly"]["data"][0]
    times = [r["time"] for r in body["hourly"]["data"]]
    assert times == list(range(times[0], times[0] + 3600 * len(times), 3600))
    return body


def expected_aqis(hourly: dict, windows: dict | None = None) -> tuple[int, int]:
    """(europeanAqi, usAqi) by the science module from µg/m³ values (constant in time)."""
    columns = {k: np.array([v]) for k, v in hourly.items()}
    means = {
        "pm25_24h_ugm3": "pm25_ugm3",
        "pm10_24h_ugm3": "pm10_ugm3",
        "o3_8h_ugm3": "o3_ugm3",
        "co_8h_ugm3": "co_ugm3",
        "so2_24h_ugm3": "so2_ugm3",
    }
    columns |= {w: columns[h] for w, h in means.items()}
    columns |= {k: np.array([v]) for k, v in (windows or {}).items()}
    return int(aqi.european_aqi(columns)[0]), int(aqi.us_aqi(columns)[0])


def test_west_europe_values_pollen_and_dust(aq):
    body = fetch(aq, "47.5,0.5")
    assert body["latitude"] == 47.5 and body["longitude"] == 0.5
    assert body["timezone"] == "Europe/Paris"
    assert len(body["hourly"]["data"]) == 97 - (body["current"]["time"] - aq.today) // 3600
    for record in body["hourly"]["data"]:
        assert list(record) == EUROPE_KEYS
        for key, name in POLLUTANT_KEYS.items():
            assert record[key] == round(known.WEST[name], 1)
        assert record["pollenBirch"] == 120.5 and record["pollenGrass"] == 3.2
        assert record["pollenRagweed"] == 0.0 and record["pollenAlder"] == 7.5
        assert record["pollenOlive"] is None and record["pollenMugwort"] is None
        assert record["dustAod"] == round(known.dust_aod(47.5), 3)
        assert record["europeanAqi"] == 43  # PM2.5 20 µg/m³: 40 + 5/35 x 20 = 42.86


def test_stitched_history_feeds_the_24_hour_means(aq):
    """Today's run answers every hour; yesterday's (PM2.5 50) fills the windows before it."""
    for record in fetch(aq, "45,5")["hourly"]["data"]:
        k = (record["time"] - aq.today) // 3600
        old_hours = max(0, 23 - k)
        pm25_24h = (old_hours * known.WEST_PM25_YESTERDAY + (24 - old_hours) * 20.0) / 24
        eu, us = expected_aqis(
            {n: known.WEST[n] for n in POLLUTANT_KEYS.values()}, {"pm25_24h_ugm3": pm25_24h}
        )
        assert record["pm25"] == 20.0
        assert (record["europeanAqi"], record["usAqi"]) == (eu, us), k
        if old_hours == 0:
            assert us == 71  # PM2.5 20.0: 49/26.3 x 10.9 + 51 = 71.3


def test_east_europe_known_indices(aq):
    body = fetch(aq, "50,20")
    record = body["current"]
    assert record["nitrogenDioxide"] == round(known.NO2_EAST_UGM3, 1)
    # NO2 121.5 ppb truncates to 121: 49/259 x 20 + 101 = 104.8 -> 105; EU: 100 + 78.6 x 0.4
    assert record["usAqi"] == 105 and record["europeanAqi"] == 131
    assert (record["europeanAqi"], record["usAqi"]) == expected_aqis(
        {n: known.EAST[n] for n in POLLUTANT_KEYS.values()}
    )
    assert all(record[k] is None for k in POLLEN_KEYS)  # known to be missing: null


@pytest.mark.parametrize(
    "coordinates, region",
    [
        ("30,0", known.WEST),
        ("72,20", known.EAST),
        ("50,-25", known.WEST),
        ("50,45", known.EAST),
        ("30,-25", known.WEST),
        ("72,45", known.EAST),
    ],
)
def test_domain_edges_are_inside_europe(aq, coordinates, region):
    record = fetch(aq, coordinates)["current"]
    assert list(record) == EUROPE_KEYS
    assert record["pm25"] == region["pm25_ugm3"] and record["ozone"] == region["o3_ugm3"]
    # Dust AOD is regridded onto the European cells: within half a cell (here 0.5°) of the
    # domain's edge a point takes the edge cells' value.
    lat = min(max(float(coordinates.split(",")[0]), 30.5), 71.5)
    assert record["dustAod"] == pytest.approx(known.dust_aod(lat), abs=6e-4)


@pytest.mark.parametrize("coordinates", ["47.25,3.3", "35.1,-20.7", "63.93,40.05"])
def test_dust_between_cells_of_both_grids(aq, coordinates):
    """Bilinear on the global cells, then between the European cells: exact for the known
    field, which is linear in latitude."""
    lat = float(coordinates.split(",")[0])
    for record in fetch(aq, coordinates)["hourly"]["data"]:
        assert record["dustAod"] == round(known.dust_aod(lat), 3)


@pytest.mark.parametrize(
    "coordinates, lon",
    [
        ("29.99,0", 0.0),
        ("50,45.01", 45.01),
        ("72.01,20", 20.0),
        ("50,-25.01", -25.01),
    ],
)
def test_just_outside_europe_the_global_model_answers_without_european_fields(aq, coordinates, lon):
    record = fetch(aq, coordinates)["current"]
    assert list(record) == RECORD_KEYS
    assert record["pm25"] == round(float(known.global_pm25(lon)), 1)
    assert record["ozone"] == known.GLOBAL_CONSTANT["o3_ugm3"]


@pytest.mark.parametrize(
    "coordinates, lon",
    [
        ("10,-1", -1.0),
        ("10,1", 1.0),
        ("10,0", 0.0),
        ("10,-3.6", -3.6),
        ("-30,2.5", 2.5),
        ("-20,179.9", 179.9),
        ("-20,-179.9", -179.9),
        ("-20,180", 180.0),
        ("0,-180", -180.0),
    ],
)
def test_global_values_across_the_seam_and_the_antimeridian(aq, coordinates, lon):
    record = fetch(aq, coordinates)["current"]
    assert list(record) == RECORD_KEYS
    assert record["pm25"] == round(float(known.global_pm25(lon)), 1)
    k = (record["time"] - aq.today) // 3600
    hourly = {
        "pm25_ugm3": float(known.global_pm25(lon)),
        "pm10_ugm3": global_pm10(k),
        "no2_ugm3": global_at(known.global_no2, k),
        **known.GLOBAL_CONSTANT,
    }
    pm10_24h = float(np.mean([global_pm10(j) for j in range(k - 23, k + 1)]))
    assert (record["europeanAqi"], record["usAqi"]) == expected_aqis(
        hourly, {"pm10_24h_ugm3": pm10_24h}
    )


def global_at(field, k: int) -> float:
    """A global field at hour k of today: from today's run, before it from yesterday's."""
    return float(field(k if k >= 0 else k + 24))


def global_pm10(k: int) -> float:
    return global_at(known.global_pm10, k)


def test_global_hourly_surface_and_three_hourly_model_level_steps_become_hours(aq):
    """As the ADS serves CAMS global: PM10 (surface) hourly, NO2 (model level) 3-hourly."""
    body = fetch(aq, "10,100")
    data = body["hourly"]["data"]
    assert len(data) == 121 - (data[0]["time"] - aq.today) // 3600
    for record in data:
        k = (record["time"] - aq.today) // 3600
        assert record["pm10"] == round(float(known.global_pm10(k)), 1), k
        assert record["nitrogenDioxide"] == round(float(known.global_no2(k)), 1), k
    assert body["timezone"] == "Asia/Bangkok"


def test_caching_headers_follow_the_hour(aq):
    """Cacheable until the hour ends; the ETag names the hour (and the data version)."""
    url = f"{aq.url}/air-quality/47.5,0.5"
    hour = int(time.time() // 3600)
    reply = get(url, {"X-API-Key": aq.key})
    max_age = int(reply.headers["Cache-Control"].removeprefix("public, max-age="))
    assert 0 < max_age <= 3600 - int(time.time()) % 3600 + 1
    assert reply.headers["X-Data-Version"].startswith("air_quality-")
    again = get(url, {"X-API-Key": aq.key, "If-None-Match": reply.headers["ETag"]})
    if int(time.time() // 3600) == hour:
        assert again.status == 304 and again.headers["ETag"] == reply.headers["ETag"]
    other = get(
        f"{aq.url}/air-quality/47.5,0.6",
        {"X-API-Key": aq.key, "If-None-Match": reply.headers["ETag"]},
    )
    assert other.status == 200


@pytest.mark.parametrize("lat", [90, -90])
def test_a_pole_has_one_answer_whatever_the_longitude(aq, lat):
    # The known global PM2.5 varies with longitude, on the poles' rows too: a pole is read at
    # longitude 0, and its timezone taken there; only the echoed longitude differs.
    longitudes = (0, 90, -135, 180)
    for _ in range(3):  # the answers name the hour: the same hour for all
        bodies = [fetch(aq, f"{lat},{lon}") for lon in longitudes]
        if len({b["current"]["time"] for b in bodies}) == 1:
            break
    for lon, body in zip(longitudes, bodies):
        assert body.pop("longitude") == lon
        assert body["current"]["pm25"] == round(float(known.global_pm25(0.0)), 1)
    assert all(body == bodies[0] for body in bodies[1:])


def test_longitude_180_and_minus_180_are_one_place(aq):
    for _ in range(3):  # the answers name the hour: the same hour for both
        east, west = fetch(aq, "-40,180"), fetch(aq, "-40,-180")
        if east["current"]["time"] == west["current"]["time"]:
            break
    assert (east.pop("longitude"), west.pop("longitude")) == (180, -180)
    assert east["timezone"] == "Etc/GMT-12" and east == west


@pytest.mark.parametrize("lat", [89.999, -89.999])
@pytest.mark.parametrize("lon", [60, -135, 180])
def test_points_next_to_a_pole_converge_to_its_answer(aq, lat, lon):
    # The model's pole row varies along longitude (PM2.5 50 µg/m³ at 60°E, 20 at 0°); the
    # pipeline writes a pole as one point, its longitude-0 value, so the answer is continuous.
    assert fetch(aq, f"{lat},{lon}")["current"]["pm25"] == round(float(known.global_pm25(0.0)), 1)
    # Half way between the last row but one (85°, 50 µg/m³ at 60°E) and the pole (20).
    halfway = fetch(aq, f"{87.5 if lat > 0 else -87.5},60")["current"]["pm25"]
    assert halfway == round((float(known.global_pm25(60.0)) + float(known.global_pm25(0.0))) / 2, 1)


@pytest.mark.parametrize("coordinates", ["-0,-0", "-0.0,-0.000001", "0,0"])
def test_a_negative_zero_coordinate_is_echoed_as_zero(aq, coordinates):
    reply = get(f"{aq.url}/air-quality/{coordinates}", {"X-API-Key": aq.key})
    assert reply.status == 200
    assert reply.body.startswith(b'{"latitude":0.0,"longitude":0.0,"timezone":')


@pytest.mark.parametrize(
    "coordinates",
    [
        "47.3",
        "47.3,8.5,1",
        "nan,8",
        "8,nan",
        "inf,8",
        "1e999,8",
        "91,0",
        "-90.0001,0",
        "0,181",
        "0,-180.5",
        "abc,def",
        ",",
        "47.3,",
        ",8.5",
        "0x10,5",
        "1_0,5",
        "47.3;8.5",
        "47.37%0A,8.54",
        "%2047.37,8.54",
        "47.37,%208.54",
        "47.37,8.54%09",
        "47.37%00,8.54",
    ],
)
def test_malformed_coordinates_are_400(aq, coordinates):
    reply = get(f"{aq.url}/air-quality/{coordinates}", {"X-API-Key": aq.key})
    assert reply.status == 400, coordinates
    body = reply.json()
    assert body["status"] == 400 and body["errors"]
    assert reply.headers["Content-Type"].startswith("application/problem+json")


def test_key_is_required_and_rate_limited(aq):
    url = f"{aq.url}/air-quality/47.5,0.5"
    assert get(url).status == 403
    assert get(url, {"X-API-Key": "not-a-key"}).status == 403
    assert get(f"{url}?api_key={aq.key}").status == 200
    statuses = [get(url, {"X-API-Key": aq.tiny_key}).status for _ in range(5)]
    assert statuses[0] == 200 and statuses[-1] == 429


def test_stale_data_is_503(tmp_path, keys_file):
    """Runs from ten days ago do not cover the current hour: 503, never old values."""
    datasets = known.write_known(tmp_path / "datasets", known.today_s(time.time()) - 10 * 86400)
    run_pipeline(
        "build",
        "--datasets",
        str(datasets),
        "--out",
        str(tmp_path / "build"),
        "--only",
        "air_quality",
    )
    with Server(tmp_path / "build", keys_file[0]) as srv:
        ready = srv.wait_ready()
        assert ready["areas"]["air_quality"]["state"] == "stale"
        for coordinates in ("47.5,0.5", "10,100"):
            reply = get(f"{srv.url}/air-quality/{coordinates}", {"X-API-Key": keys_file[1]})
            assert reply.status == 503 and int(reply.headers["Retry-After"]) > 0
            assert "stale" in reply.json()["detail"]
