"""GET /forecast/{lat},{lon} over a real build of known real-format inputs: 20 °C, dewpoint
10 °C, wind u=3 v=4 m/s, 50 % cloud, no rain, 1013.25 hPa, 20 km visibility, model surface at
400 m, on a global 5° GFS run from the last run time; the GeoNames fixture (Zürich at 429 m)
and NWS and CAP alerts. Every number asserted is computed by hand from those inputs."""

from __future__ import annotations

import calendar
import datetime as dt
import math
import shutil
import time
from zoneinfo import ZoneInfo

import ephem
import numpy as np
import pirateweather
import pytest

import contract
from server.forecast.data import load
from tests.support import forecast_inputs as fi
from tests.support.procs import ROOT, Server, get, run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

OCEAN = (40.0, -30.0)  # Atlantic: Etc/GMT+2, no country, no gazetteer place
ZURICH = (47.36667, 8.55)  # the fixture's Zürich, elevation 429 m (GeoNames dem)
HUMIDITY = 0.5254  # RH(20 °C, 10 °C), Magnus (Alduchov and Eskridge)
APPARENT = 20 + 0.33 * HUMIDITY * 6.105 * math.exp(17.27 * 20 / 257.7) - 0.70 * 5 - 4.00


CALM = (-60.0, 60.0)  # no wind in the cells around it


def _poles_and_calm(name: str, pole):
    """A known field whose poles' rows vary with longitude (as a model's pole row need not
    be constant) and whose wind is zero around CALM."""

    def value(t, la, lo):
        calm = (np.abs(la - CALM[0]) <= 5) & (np.abs(lo - CALM[1]) <= 5)
        inner = (
            np.where(calm, 0.0, fi.KNOWN[name])
            if name in ("u10", "v10")
            else np.full(la.shape, fi.KNOWN[name])
        )
        return np.where(np.abs(la) == 90, pole(np.radians(lo)), inner)

    return value


# At the poles: -20 °C + 10 °C * sin(lon); u = 2 + 3 cos(lon), v = 4 sin(lon).
POLES_AND_CALM = {
    "t2m": _poles_and_calm("t2m", lambda x: 253.15 + 10 * np.sin(x)),
    "u10": _poles_and_calm("u10", lambda x: 2 + 3 * np.cos(x)),
    "v10": _poles_and_calm("v10", lambda x: 4 * np.sin(x)),
}


@pytest.fixture(scope="module")
def forecast_server(module_tmp, keys_file):
    root = module_tmp("forecast")
    datasets = root / "datasets"
    shutil.copytree(ROOT / "tests" / "fixtures" / "geonames", datasets / "geonames")
    run = fi.last_run()
    lat, lon = fi.global_axes(5.0)
    steps = fi.gfs_steps(192)
    groups = {
        "heightAboveGround2": ("t2m", "d2m"),
        "heightAboveGround10": ("u10", "v10"),
        "meanSea": ("prmsl",),
        "atmosphere": ("tcc",),
        "surface": ("prate", "vis", "gust", "orog", "crain", "csnow", "cfrzr", "cicep"),
    }
    for suffix, names in groups.items():
        fi.write_step_file(
            datasets / "forecast" / f"gfs.{suffix}.nc",
            run,
            steps,
            lat,
            lon,
            {n: POLES_AND_CALM.get(n, fi.KNOWN[n]) for n in names},
        )
    now = time.time()
    iso = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat()  # noqa: E731
    around_zurich = [[8.0, 47.0], [9.0, 47.0], [9.0, 48.0], [8.0, 48.0], [8.0, 47.0]]
    fi.write_nws(
        datasets / "alerts" / "nws.geojson",
        [
            fi.nws_alert(
                "active", "Wind Advisory", around_zurich, iso(now - 3600), iso(now + 7200)
            ),
            fi.nws_alert("open", "Flood Watch", around_zurich, iso(now + 3600), None, "Moderate"),
            fi.nws_alert("expired", "Heat Advisory", around_zurich, iso(now - 7200), iso(now - 60)),
            fi.nws_alert(
                "elsewhere",
                "Gale Warning",
                [[-31, 39], [-29, 39], [-29, 41], [-31, 41], [-31, 39]],
                iso(now - 60),
                iso(now + 60000),
            ),
            fi.nws_alert(
                "dateline",
                "Storm Warning",  # crosses the antimeridian
                [[179, 51], [-179, 51], [-179, 53], [179, 53], [179, 51]],
                iso(now - 60),
                iso(now + 60000),
            ),
        ],
    )
    run_pipeline("build", "--datasets", str(datasets), "--out", str(root / "build"))
    with Server(root / "build", keys_file[0]) as server:
        server.wait_ready()
        server.key = keys_file[1]
        server.run = run
        server.build = root / "build"
        yield server


def forecast(server, point=OCEAN, **params) -> dict:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    reply = get(f"{server.url}/forecast/{point[0]},{point[1]}?{query}", {"X-API-Key": server.key})
    assert reply.status == 200, reply.body[:500]
    assert reply.headers["Content-Type"].startswith("application/json")
    return reply.json()


@pytest.mark.parametrize(
    "units, temperature, wind, visibility, elevation",
    [
        ("si", 20.0, 5.0, 16.0, 400),
        ("us", 68.0, 11.18, 10.0, 1312),  # visibility capped at 16 km or 10 mi
        ("ca", 20.0, 18.0, 16.0, 400),
        ("uk", 20.0, 11.18, 10.0, 400),
    ],
)
def test_known_values_in_every_unit_system(
    forecast_server, units, temperature, wind, visibility, elevation
):
    body = forecast(forecast_server, units=units)
    assert body["flags"]["units"] == units and body["elevation"] == elevation
    f = (lambda c: c * 1.8 + 32) if units == "us" else (lambda c: c)
    for entry in [body["currently"]] + body["hourly"]["data"]:
        assert entry["temperature"] == pytest.approx(temperature, abs=0.01)
        assert entry["dewPoint"] == pytest.approx(f(10.0), abs=0.01)
        assert entry["humidity"] == 0.53
        assert entry["apparentTemperature"] == pytest.approx(f(APPARENT), abs=0.01)
        assert entry["windSpeed"] == pytest.approx(wind, abs=0.01)
        assert entry["windDirection"] == 217  # from the south-west: atan2(-3, -4)
        assert entry["windGust"] == pytest.approx(wind * 8 / 5, abs=0.02)
        assert entry["pressure"] == pytest.approx(1013.2, abs=0.051)
        assert entry["cloudCover"] == 0.5 and entry["visibility"] == visibility
        assert entry["precipitation"] == 0 and entry["precipitationType"] == "none"
        assert entry["precipitationProbability"] == 0
        assert entry["summary"] == "Partly Cloudy"
        assert entry["icon"] == "03" + ("d" if entry["is_day"] else "n")
    for day in body["daily"]["data"]:
        # The high (06-18 local) and low (18-06) of hours before the run are unknown: today's
        # high is null once the run begins after 18:00 local (docs/api/forecast.md#daily).
        for name, ends_h in (("temperatureHigh", 18), ("temperatureLow", 30)):
            known = day["time"] + ends_h * 3600 > forecast_server.run
            assert day[name] == (pytest.approx(temperature, abs=0.01) if known else None)
        assert day["windSpeed"] == pytest.approx(wind, abs=0.01) and day["windDirection"] == 217
        assert day["humidity"] == 0.53 and day["cloudCover"] == 0.5
        assert day["precipitation"] == 0 and day["icon"] == "03d"
        # A day is summarised over its periods with data: a run at 22:00 local has only the night.
        night_only = day["time"] + 22 * 3600 <= forecast_server.run
        assert day["summary"] == (
            "Partly cloudy overnight." if night_only else "Partly cloudy throughout the day."
        )
    assert body["daily"]["summary"].startswith("No precipitation throughout the week")
    assert body["minutely"]["summary"] == "Partly cloudy for the hour."


def test_elevation_from_the_gazetteer_adjusts_the_temperature(forecast_server):
    body = forecast(forecast_server, ZURICH, units="si")
    # 429 m (the nearest place's elevation) instead of the model's 400 m: 29 m higher is
    # 0.19 K colder at 6.5 K/km; the dewpoint moves with it (the humidity barely changes).
    assert body["elevation"] == 429
    assert body["currently"]["temperature"] == pytest.approx(20 - 0.029 * 6.5, abs=0.006)
    assert body["currently"]["dewPoint"] == pytest.approx(10 - 0.029 * 6.5, abs=0.006)
    assert body["currently"]["humidity"] == pytest.approx(HUMIDITY, abs=0.006)
    assert forecast(forecast_server, ZURICH, units="us")["elevation"] == round(429 * 3.2808399)


@pytest.mark.parametrize(
    "point, expected",
    [
        (ZURICH, "si"),
        ((40.7128, -74.006), "us"),
        ((51.5074, -0.1278), "uk"),
        ((53.35, -6.26), "uk"),
        ((43.6532, -79.3832), "ca"),
        ((6.3, -10.8), "us"),
        ((16.8, 96.15), "us"),
        (OCEAN, "si"),
        ((-33.87, 151.21), "si"),
    ],
)
def test_units_auto_by_country(forecast_server, point, expected):
    body = forecast(forecast_server, point, units="auto")
    assert body["flags"]["units"] == expected


def test_envelope_timezone_offset_and_flags(forecast_server):
    body = forecast(forecast_server, ZURICH)
    assert list(body) == [
        "latitude",
        "longitude",
        "timezone",
        "offset",
        "elevation",
        "currently",
        "minutely",
        "hourly",
        "daily",
        "alerts",
        "flags",
    ]
    assert (body["latitude"], body["longitude"]) == ZURICH
    assert body["timezone"] == "Europe/Zurich"
    now = dt.datetime.now(ZoneInfo("Europe/Zurich"))
    assert body["offset"] == now.utcoffset().total_seconds() / 3600
    assert forecast(forecast_server, (19.07, 72.88))["offset"] == 5.5  # Mumbai
    run = dt.datetime.fromtimestamp(forecast_server.run, dt.timezone.utc)
    assert body["flags"]["sources"] == [
        {"name": "gfs", "run_time": run.strftime("%Y-%m-%dT%H:%M:%SZ")}
    ]
    assert body["flags"]["version"].startswith("forecast-")


def test_blocks_cover_the_right_times(forecast_server):
    before = int(time.time())
    body = forecast(forecast_server, ZURICH)
    currently, minutely = body["currently"], body["minutely"]["data"]
    assert before <= currently["time"] <= time.time() + 1
    assert len(minutely) == 61 and minutely[0]["time"] == currently["time"] // 60 * 60
    assert [m["time"] for m in minutely] == list(
        range(minutely[0]["time"], minutely[0]["time"] + 61 * 60, 60)
    )
    hourly = body["hourly"]["data"]
    assert len(hourly) == 48 and hourly[0]["time"] == currently["time"] // 3600 * 3600
    assert all(b["time"] - a["time"] == 3600 for a, b in zip(hourly, hourly[1:]))
    extended = forecast(forecast_server, ZURICH, extend="hourly")["hourly"]["data"]
    assert len(extended) == 168
    daily = body["daily"]["data"]
    zone = ZoneInfo("Europe/Zurich")
    today = dt.datetime.now(zone).date()
    assert [dt.datetime.fromtimestamp(d["time"], zone) for d in daily] == [
        dt.datetime.combine(today + dt.timedelta(days=i), dt.time(), zone) for i in range(7)
    ]


def test_sun_and_moon_of_each_day_match_the_ephemeris(forecast_server):
    lat, lon = ZURICH
    for day in forecast(forecast_server, ZURICH)["daily"]["data"]:
        observer = ephem.Observer()
        observer.lat, observer.lon, observer.pressure, observer.horizon = (
            str(lat),
            str(lon),
            0,
            "-0:34",
        )
        noon = day["time"] + 12 * 3600
        observer.date = ephem.Date(
            dt.datetime.fromtimestamp(noon, dt.timezone.utc).replace(tzinfo=None)
        )
        rise = observer.previous_rising(ephem.Sun()).datetime()
        set_ = observer.next_setting(ephem.Sun()).datetime()
        assert abs(day["sunriseTime"] - calendar.timegm(rise.timetuple())) <= 60
        assert abs(day["sunsetTime"] - calendar.timegm(set_.timetuple())) <= 60
        when = ephem.Date(dt.datetime.fromtimestamp(noon, dt.timezone.utc).replace(tzinfo=None))
        elongation = (
            float(ephem.Ecliptic(ephem.Moon(when)).lon - ephem.Ecliptic(ephem.Sun(when)).lon)
            / (2 * math.pi)
            % 1.0
        )
        # Within the README's 0.001 of PyEphem, then written with two decimals (Dark Sky's).
        assert abs((day["moonPhase"] - elongation + 0.5) % 1.0 - 0.5) <= 0.001 + 0.005
        assert day["is_day"] is True


def test_alerts_contain_the_point_and_are_not_expired(forecast_server):
    alerts = forecast(forecast_server, ZURICH)["alerts"]
    assert [a["title"] for a in alerts] == ["Wind Advisory", "Flood Watch"]
    wind, flood = alerts
    assert wind["severity"] == "Severe" and flood["severity"] == "Moderate"
    assert flood["expires"] is None and wind["expires"] > time.time()
    assert wind["regions"] == ["Test County", "Other County"]
    assert wind["uri"] == "https://api.weather.gov/alerts/active"
    assert wind["description"] == "Wind Advisory description.\n\nTake care."
    assert set(wind) == {"title", "description", "time", "expires", "severity", "regions", "uri"}
    assert [a["title"] for a in forecast(forecast_server, OCEAN)["alerts"]] == ["Gale Warning"]
    assert forecast(forecast_server, (10.0, 10.0))["alerts"] == []


@pytest.mark.parametrize(
    "point, inside",
    [((52, 179.5), True), ((52, -179.5), True), ((52, 178.5), False), ((52, 0), False)],
)
def test_alerts_across_the_antimeridian(forecast_server, point, inside):
    titles = [a["title"] for a in forecast(forecast_server, point)["alerts"]]
    assert titles == (["Storm Warning"] if inside else [])


def test_exclude_leaves_blocks_out(forecast_server):
    body = forecast(forecast_server, exclude="minutely,hourly")
    assert "minutely" not in body and "hourly" not in body
    assert {"currently", "daily", "alerts", "flags"} <= set(body)
    reply = get(
        f"{forecast_server.url}/forecast/1,1?exclude=minutely&exclude=hourly,daily",
        {"X-API-Key": forecast_server.key},
    )
    assert {"currently", "alerts", "flags"} <= set(reply.json())
    assert not {"minutely", "hourly", "daily"} & set(reply.json())
    assert {"currently", "minutely", "hourly", "daily", "alerts"} <= set(
        forecast(forecast_server, exclude="")
    )  # form style's empty list
    body = forecast(forecast_server, exclude="currently,minutely,hourly,daily,alerts")
    assert list(body) == ["latitude", "longitude", "timezone", "offset", "elevation", "flags"]


@pytest.mark.parametrize(
    "lang, expected",
    [
        ("de", "In der kommenden Stunde leicht bewölkt"),
        ("fr", "Faibles passages nuageux"),
        ("pt-BR", None),
        ("zh-TW", None),
        ("xx", "Partly cloudy"),
        ("EN", "Partly cloudy"),
        # Well-formed BCP 47 (docs/api/forecast.md#summaries): extensions and private use are ignored,
        # or all there is.
        ("de-CH-u-ca-gregory", "In der kommenden Stunde leicht bewölkt"),
        ("en-US-x-twain", "Partly cloudy"),
        ("x-pig-latin", "Artlypay"),
        ("sr-Latn", None),
    ],
)
def test_summaries_in_the_requested_language(forecast_server, lang, expected):
    body = forecast(forecast_server, lang=lang)
    summary = body["minutely"]["summary"]
    if expected:
        assert summary.startswith(expected)
    assert summary != forecast(forecast_server)["minutely"]["summary"] or lang in (
        "xx",
        "EN",
        "en-US-x-twain",
    )


@pytest.mark.parametrize(
    "path, parameter",
    [
        ("/forecast/91,0", "lat"),
        ("/forecast/0,181", "lon"),
        ("/forecast/nan,0", "lat"),
        ("/forecast/1e999,0", "lat"),
        ("/forecast/47.3", "coordinates"),
        ("/forecast/47.3,8.5,1", "coordinates"),
        ("/forecast/47.3,8.5?units=metric", "units"),
        ("/forecast/47.3,8.5?exclude=flags", "exclude"),
        ("/forecast/47.3,8.5?extend=daily", "extend"),
        ("/forecast/47.3,8.5?lang=%21%21", "lang"),
        ("/forecast/47.3,8.5?units=SI", "units"),
        ("/forecast/47.3,8.5?exclude=hourly,,daily", "exclude"),
        ("/forecast/47.3,8.5?exclude=hourly,", "exclude"),
        ("/forecast/47.3,8.5?exclude=hourly&exclude=flags", "exclude"),
        ("/forecast/47." + "0" * 70 + ",8.5", "lat"),
        # read once, whatever the order (the second value would go unchecked)
        ("/forecast/47.3,8.5?units=si&units=xx", "units"),
        ("/forecast/47.3,8.5?units=xx&units=si", "units"),
        ("/forecast/47.3,8.5?units=si&units=si", "units"),
        ("/forecast/47.3,8.5?lang=de&lang=!!", "lang"),
        ("/forecast/47.3,8.5?extend=hourly&extend=x", "extend"),
        # taken as sent: no whitespace or control characters around a value
        ("/forecast/47.3,8.5?units=%20si", "units"),
        ("/forecast/47.3,8.5?lang=%20de", "lang"),
        ("/forecast/47.3,8.5?lang=de%0A", "lang"),
        ("/forecast/47.3,8.5?exclude=hourly,%20daily", "exclude"),
        ("/forecast/47.3,8.5?exclude=%20", "exclude"),
        ("/forecast/47.3,8.5?exclude=hourly%09", "exclude"),
        ("/forecast/47.37%0A,8.54", "lat"),
        ("/forecast/%2047.37,8.54", "lat"),
        ("/forecast/47.37,8.54%20", "lon"),
        ("/forecast/47.37,8.54%00", "lon"),
    ],
)
def test_bad_parameters_are_400(forecast_server, path, parameter):
    reply = get(forecast_server.url + path, {"X-API-Key": forecast_server.key})
    assert reply.status == 400, reply.body
    body = reply.json()
    assert reply.headers["Content-Type"].startswith("application/problem+json")
    assert parameter in [e["parameter"] for e in body["errors"]]


def test_long_numbers_are_numbers(forecast_server):
    body = forecast(forecast_server, ("47.3769000000000000000000000000000001", "8.5"))
    assert body["latitude"] == 47.3769
    reply = get(
        f"{forecast_server.url}/forecast/47.{'0' * 70},8.5", {"X-API-Key": forecast_server.key}
    )
    assert "at most 64 characters" in reply.json()["detail"]


def test_a_key_is_required(forecast_server):
    assert get(f"{forecast_server.url}/forecast/47.3,8.5").status == 403
    assert get(f"{forecast_server.url}/forecast/47.3,8.5?api_key=nope").status == 403


def test_caching_headers(forecast_server):
    url = f"{forecast_server.url}/forecast/47.3,8.5?api_key={forecast_server.key}"
    entry = contract.read_manifest(contract.current_version_dir(forecast_server.build))
    next_version = entry["areas"]["forecast"]["next_version_expected_s"]
    for _ in range(3):  # a pair of requests within one minute (the ETag's)
        before = time.time()
        reply = get(url)
        again = get(url, {"If-None-Match": reply.headers["ETag"]})
        after = time.time()
        if before // 60 == after // 60:
            break
    max_age = int(reply.headers["Cache-Control"].removeprefix("public, max-age="))
    # to the end of the minute, or to the next version when that comes first
    assert 1 <= max_age <= min(60 - before % 60, max(next_version - before, 60)) + 1
    assert max_age >= min(60 - after % 60, max(next_version - after, 60)) - 1
    assert reply.headers["X-Data-Version"].startswith("forecast-")
    assert "X-API-Key" in reply.headers["Vary"]
    assert again.status == 304


def test_max_age_ends_with_the_minute_or_the_next_version():
    from types import SimpleNamespace

    from server.forecast.handlers import max_age

    soon, overdue = SimpleNamespace(next_version_s=1_000), SimpleNamespace(next_version_s=500)
    assert max_age(soon, 900.5) == 60 - 0 and max_age(soon, 930.2) == 30  # 900 = 15 min
    assert max_age(soon, 970.5) == 29 and max_age(soon, 999.9) == 21  # due: to the minute
    assert max_age(overdue, 970.5) == 50 and max_age(overdue, 959.999) == 1


def test_a_dark_sky_client_reads_the_response(forecast_server):
    url = (
        f"{forecast_server.url}/forecast/{ZURICH[0]},{ZURICH[1]}?api_key={forecast_server.key}"
        "&units=si"
    )
    result = pirateweather.manual(url)
    assert result.currently().temperature == pytest.approx(19.81, abs=0.01)
    assert result.currently().summary == "Partly Cloudy"
    hourly, daily, minutely = result.hourly(), result.daily(), result.minutely()
    assert len(hourly.data) == 48 and hourly.data[0].windSpeed == 5.0
    assert len(daily.data) == 7 and daily.data[0].sunriseTime is not None
    assert len(minutely.data) == 61 and minutely.summary
    assert [a.title for a in result.alerts()] == ["Wind Advisory", "Flood Watch"]
    assert result.flags().units == "si" and result.offset() in (1.0, 2.0)


def test_a_dark_sky_client_reads_a_polar_day(forecast_server):
    # Near a pole the sun neither rises nor sets on most days of the year: the daily entries
    # leave sunriseTime and sunsetTime out (as Dark Sky did; a null crashed this client). One
    # of the two poles is in polar day or night on any date but the few around an equinox.
    polar = []
    for lat in (89.9, -89.9):
        url = (
            f"{forecast_server.url}/forecast/{lat},0?api_key={forecast_server.key}"
            "&units=si&exclude=minutely,hourly"
        )
        raw = forecast(forecast_server, (lat, 0), units="si", exclude="minutely,hourly")
        days = pirateweather.manual(url).daily().data
        assert len(days) == len(raw["daily"]["data"]) == 7
        for day, entry in zip(days, raw["daily"]["data"]):
            assert ("sunriseTime" in entry) == (day.sunriseTime is not None)
            assert ("sunsetTime" in entry) == (day.sunsetTime is not None)
            assert None not in (entry.get("sunriseTime", 0), entry.get("sunsetTime", 0))
            polar += [entry] if "sunriseTime" not in entry else []
    equinoxes = [(3, 20), (9, 22)]
    today = dt.datetime.now(dt.timezone.utc)
    near_equinox = any(
        abs((today - dt.datetime(today.year, m, d, tzinfo=dt.timezone.utc)).days) < 10
        for m, d in equinoxes
    )
    assert polar or near_equinox


def test_cloud_cover_for_the_webcam_images(forecast_server):
    version = contract.current_version_dir(forecast_server.build)
    data = load(version, contract.read_manifest(version)["areas"]["forecast"])
    now = int(time.time())
    assert data.cloud_cover(47.37, 8.54, now) == pytest.approx(0.5)
    assert data.cloud_cover(-89.9, 179.9, now + 86400) == pytest.approx(0.5)
    assert data.cloud_cover(47.37, 8.54, now + 400 * 86400) is None
    assert data.cloud_cover(47.37, 8.54, forecast_server.run - 1) is None


def test_stale_data_is_503(tmp_path, keys_file):
    old = fi.last_run(time.time() - 30 * 86400)
    lat, lon = fi.global_axes(30.0)
    fi.write_step_file(
        tmp_path / "d" / "forecast" / "old.nc",
        old,
        range(0, 25),
        lat,
        lon,
        {n: fi.KNOWN[n] for n in ("t2m", "d2m", "u10", "v10", "prmsl", "tcc", "prate")},
    )
    run_pipeline(
        "build",
        "--datasets",
        str(tmp_path / "d"),
        "--out",
        str(tmp_path / "b"),
        "--only",
        "forecast",
    )
    with Server(tmp_path / "b", keys_file[0]) as server:
        server.wait_ready()
        reply = get(f"{server.url}/forecast/47,8", {"X-API-Key": keys_file[1]})
        assert reply.status == 503 and int(reply.headers["Retry-After"]) > 0
        assert "stale" in reply.json()["detail"]
        assert server.wait_ready()["areas"]["forecast"]["state"] == "stale"


RAIN_MMH = 0.123457


def test_points_outside_a_regional_model_are_400(tmp_path, keys_file):
    lat, lon = np.arange(30.0, 61.0, 10.0), np.arange(-10.0, 31.0, 10.0)  # Europe
    fi.write_step_file(
        tmp_path / "d" / "forecast" / "eu.nc",
        fi.last_run(),
        fi.gfs_steps(192),
        lat,
        lon,
        {
            **{n: fi.KNOWN[n] for n in ("t2m", "d2m", "u10", "v10", "prmsl", "tcc")},
            "prate": RAIN_MMH / 3600,
        },
    )
    run_pipeline(
        "build",
        "--datasets",
        str(tmp_path / "d"),
        "--out",
        str(tmp_path / "b"),
        "--only",
        "forecast",
    )
    with Server(tmp_path / "b", keys_file[0]) as server:
        server.wait_ready()
        for point in ("45,10", "60,30", "32,-14"):  # inside, or within half a cell
            reply = get(f"{server.url}/forecast/{point}?units=si", {"X-API-Key": keys_file[1]})
            assert reply.status == 200 and reply.json()["currently"]["temperature"] == 20.0
        for point in ("0,10", "45,60", "45,-40", "-45,10", "66,10"):
            reply = get(f"{server.url}/forecast/{point}", {"X-API-Key": keys_file[1]})
            assert reply.status == 400, (point, reply.body[:300])
            body = reply.json()
            assert "outside the forecast model's domain" in body["detail"]
            assert "latitude 30 to 60, longitude -10 to 30" in body["detail"]
            assert [e["parameter"] for e in body["errors"]] == ["coordinates"]
        # Rain rates keep 4 decimals, a day's total 2 (0.01 mm or in).
        for units, factor in (("si", 1.0), ("us", 0.0393701)):
            body = get(
                f"{server.url}/forecast/45,10?units={units}", {"X-API-Key": keys_file[1]}
            ).json()
            assert body["hourly"]["data"][0]["precipitation"] == round(RAIN_MMH * factor, 4)
            assert body["daily"]["data"][1]["precipitation"] == round(24 * RAIN_MMH * factor, 2)


def test_the_generated_default(server, default_build):
    version = contract.current_version_dir(default_build)
    manifest = contract.read_manifest(version)
    entry = manifest["areas"]["forecast"]
    assert entry["source"]["kind"] == "generated" and entry["source"]["generated"] is True
    assert entry["alerts"]["kind"] == "generated"
    newest = calendar.timegm(time.strptime(entry["run_times"][-1], "%Y-%m-%dT%H:%M:%SZ"))
    # The last 00/06/12/18 UTC run time when the build ran (README), whatever the time now:
    # the build began at its id's second and had ended when its manifest was written.
    began = calendar.timegm(time.strptime(manifest["build_id"][:16], "%Y%m%dT%H%M%SZ"))
    ended = int((version / contract.MANIFEST).stat().st_mtime)
    cycle = 6 * 3600
    assert newest % cycle == 0
    assert began // cycle * cycle <= newest <= ended // cycle * cycle, (began, newest, ended)
    hourly = entry["grids"]["hourly"]
    assert hourly["time0"] + (hourly["ntime"] - 1) * 3600 >= newest + 8 * 86400
    for point in ((47.37, 8.54), (-33.87, 151.21), (64.15, -21.94), (0.0, 0.0), (-89, 0)):
        reply = get(
            f"{server.url}/forecast/{point[0]},{point[1]}?units=auto&lang=de",
            {"X-API-Key": server.key},
        )
        assert reply.status == 200, reply.body[:300]
        body = reply.json()
        assert body["flags"]["sources"][0]["name"] == "generated"
        temperatures = [h["temperature"] for h in body["hourly"]["data"]]
        assert all(-90 < t < 60 for t in temperatures) and len(set(temperatures)) > 1
        assert len(body["daily"]["data"]) == 7
    np.testing.assert_equal(len(entry["tables"]), 1)


@pytest.mark.parametrize(
    "params",
    [{}, {"units": "us", "extend": "hourly"}, {"exclude": "minutely,hourly", "lang": "ja"}],
)
def test_responses_match_the_openapi_schema(forecast_server, params):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    from server.openapi import document as openapi

    registry = Registry().with_resource(
        "urn:openapi", Resource.from_contents(openapi.document(), default_specification=DRAFT202012)
    )
    validator = Draft202012Validator(
        {"$ref": "urn:openapi#/components/schemas/Forecast"}, registry=registry
    )
    for point in (ZURICH, OCEAN, (-89.9, 179.9)):
        body = forecast(forecast_server, point, **params)
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(body)]
        assert not errors, errors[:5]


@pytest.mark.parametrize(
    "point", [(90, 180), (-90, -180), (0, 0), (89.99, -179.99), (-0.0, 180), (71.2, -156.8)]
)
def test_edges_of_the_globe_answer(forecast_server, point):
    body = forecast(forecast_server, point, units="auto", extend="hourly")
    assert body["currently"]["temperature"] is not None
    assert len(body["daily"]["data"]) == 7
    for day in body["daily"]["data"]:
        assert ("sunriseTime" in day) == ("sunsetTime" in day)
        assert day.get("sunriseTime", 0) is not None and day.get("sunsetTime", 0) is not None


@pytest.mark.parametrize("lat, timezone", [(90, "Etc/GMT"), (-90, "Antarctica/McMurdo")])
def test_a_pole_has_one_answer_whatever_the_longitude(forecast_server, lat, timezone):
    # The poles' rows vary with longitude in the input: a pole is read at longitude 0
    # (-20 °C), and located there (its timezone); only the echoed longitude differs.
    longitudes = (0, 90, -135, 180)
    for _ in range(3):  # the answers name the minute: the same minute for all
        bodies = [
            forecast(forecast_server, (lat, lon), units="si", extend="hourly") for lon in longitudes
        ]
        if len({b["currently"]["time"] for b in bodies}) == 1:
            break
    for lon, body in zip(longitudes, bodies):
        assert body.pop("longitude") == lon
        assert body["timezone"] == timezone
        assert body["currently"]["temperature"] == -20.0
    assert all(body == bodies[0] for body in bodies[1:])


@pytest.mark.parametrize(
    "lat, timezone", [(0, "Etc/GMT-12"), (-40, "Etc/GMT-12"), (52, "America/Adak")]
)  # Aleutian waters
def test_longitude_180_and_minus_180_are_one_place(forecast_server, lat, timezone):
    # The nautical zones either side of the date line (Etc/GMT-12, Etc/GMT+12) are a day
    # apart: one meridian gets one timezone, offset and weekday names (those of 180).
    for _ in range(3):  # the answers name the minute: the same minute for both
        east, west = (forecast(forecast_server, (lat, lon), units="si") for lon in (180, -180))
        if east["currently"]["time"] == west["currently"]["time"]:
            break
    assert (east.pop("longitude"), west.pop("longitude")) == (180, -180)
    assert east["timezone"] == timezone and east == west


@pytest.mark.parametrize("lat", [89.999, -89.999])
def test_points_near_a_pole_answer_as_the_pole(forecast_server, lat):
    # The input's pole rows vary with longitude; the pipeline keeps each as one point (its
    # values at longitude 0, where the server reads a pole), so a point just off the pole
    # reads what the pole does (less 0.02 % of the next row), whatever its longitude.
    pole = forecast(forecast_server, (math.copysign(90, lat), 0), units="si")["currently"]
    assert (pole["temperature"], pole["windSpeed"], pole["windDirection"]) == (-20.0, 5.0, 270)
    for lon in (0, 90, -135, 180):
        here = forecast(forecast_server, (lat, lon), units="si")["currently"]
        for name in ("temperature", "dewPoint", "windSpeed", "windGust", "pressure"):
            assert here[name] == pytest.approx(pole[name], abs=0.02), (lon, name)
        assert here["windDirection"] == pole["windDirection"], lon


def test_a_calm_has_no_wind_direction(forecast_server):
    body = forecast(forecast_server, CALM, units="si")
    entries = [body["currently"], *body["hourly"]["data"], *body["daily"]["data"]]
    assert {e["windSpeed"] for e in entries} == {0.0}
    assert {e["windDirection"] for e in entries} == {None}


@pytest.mark.parametrize("coordinates", ["-0,-0", "-0.0,-0.000001", "0,0"])
def test_a_negative_zero_coordinate_is_echoed_as_zero(forecast_server, coordinates):
    reply = get(
        f"{forecast_server.url}/forecast/{coordinates}?exclude=minutely,hourly",
        {"X-API-Key": forecast_server.key},
    )
    assert reply.status == 200
    assert reply.body.startswith(b'{"latitude":0.0,"longitude":0.0,"timezone":')
