"""The forecast response builder at fixed instants, over a real build of a known GFS-format run
from 2026-03-27 12:00 UTC (global 10° grid, 288 hours): daily blocks across DST changes (23 h
days in Zürich and Beirut, 25 h days in Sydney and Santiago), and block icons that are the
condition their summaries name. The response is built by the server's own code (server.forecast.data.load,
server.forecast.place.locate, server.forecast.blocks.respond) at a chosen `now`; only HTTP is left out.

Known fields: temperature rises 0.1 °C an hour from 10 °C at the run in the northern
hemisphere and falls as fast in the southern one, so every hour has its own value and a day's
high and low name the hours they were taken from; 50 % cloud; rain of 2 mm/h from 14 to 17 UTC
on the 27th; on the 30th rain of 1 mm/h at 10 UTC, then snow of 3 mm/h at 11 and 12 UTC.
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections import Counter
from zoneinfo import ZoneInfo

import ephem
import numpy as np
import orjson
import pytest

import contract
from server.forecast import blocks as forecast_blocks
from server.forecast import data as forecast_data
from server.forecast.blocks import BLOCKS, Request
from server.forecast.place import locate
from server.forecast.science.units import SYSTEMS
from tests.support import forecast_inputs as fi
from tests.support.procs import run_pipeline

pytestmark = pytest.mark.slow  # a build of their own, and servers

HOUR = 3600
RUN = calendar.timegm((2026, 3, 27, 12, 0, 0))
HORIZON_H = 288
RAIN = {calendar.timegm((2026, 3, 27, h, 0, 0)): (2.0, "crain") for h in (14, 15, 16)}
RAIN_THEN_SNOW = {
    calendar.timegm((2026, 3, 30, 10, 0, 0)): (1.0, "crain"),
    calendar.timegm((2026, 3, 30, 11, 0, 0)): (3.0, "csnow"),
    calendar.timegm((2026, 3, 30, 12, 0, 0)): (3.0, "csnow"),
}
ZURICH, SYDNEY, SANTIAGO, BEIRUT = (47.37, 8.54), (-33.87, 151.21), (-33.45, -70.67), (33.89, 35.5)


def temperature_c(t: float, lat: float) -> float:
    """The known temperature at a time (a whole hour) and latitude."""
    return 10.0 + (0.1 if lat > 0 else -0.1) * (t - RUN) / HOUR


def _ramp(t, la, lo):
    return 283.15 + np.where(la > 0, 0.1, -0.1) * (t - RUN) / HOUR


def _precipitation(name):
    """prate (kg m-2 s-1) or a categorical flag at a valid time, the same everywhere."""

    def value(t, la, lo):
        rate, flag = {**RAIN, **RAIN_THEN_SNOW}.get(t, (0.0, None))
        level = rate / 3600.0 if name == "prate" else float(flag == name)
        return np.full(la.shape, level)

    return value


@pytest.fixture(scope="module")
def data(module_tmp):
    root = module_tmp("forecast-fixed")
    fields = {
        **fi.KNOWN,
        "t2m": _ramp,
        "d2m": lambda t, la, lo: _ramp(t, la, lo) - 10.0,
        **{name: _precipitation(name) for name in ("prate", "crain", "csnow")},
    }
    fi.write_gfs_run(root / "datasets" / "forecast", RUN, HORIZON_H, fields)
    run_pipeline(
        "build",
        "--datasets",
        str(root / "datasets"),
        "--out",
        str(root / "build"),
        "--only",
        "forecast",
    )
    version = contract.current_version_dir(root / "build")
    return forecast_data.load(version, contract.read_manifest(version)["areas"]["forecast"])


def answer(data, point, now: str, hours: int = 48, blocks=BLOCKS) -> dict:
    """The response body at a point at an instant (ISO 8601, UTC), in si units."""
    now_s = calendar.timegm(dt.datetime.fromisoformat(now).timetuple())
    request = Request(
        lat=point[0], lon=point[1], units="si", lang="en", hours=hours, blocks=frozenset(blocks)
    )
    body = forecast_blocks.respond(data, locate(*point, None), request, SYSTEMS["si"], now_s)
    return orjson.loads(body)


def local_s(zone: ZoneInfo, day: dt.date, hour: int) -> int:
    """A local wall-clock hour of a day as a Unix time."""
    return int(dt.datetime(day.year, day.month, day.day, hour, tzinfo=zone).timestamp())


@pytest.mark.parametrize(
    "point, timezone, now, changed, length_h",
    [
        (ZURICH, "Europe/Zurich", "2026-03-28T09:00:00", dt.date(2026, 3, 29), 23),
        (SYDNEY, "Australia/Sydney", "2026-04-01T00:00:00", dt.date(2026, 4, 5), 25),
        # Chile turns its clocks back at midnight: 23:00 comes twice on the 4th
        (SANTIAGO, "America/Santiago", "2026-04-01T15:00:00", dt.date(2026, 4, 4), 25),
        # Lebanon turns them forward at midnight: the 29th begins at 01:00
        (BEIRUT, "Asia/Beirut", "2026-03-28T10:00:00", dt.date(2026, 3, 29), 23),
    ],
)
def test_daily_days_are_local_calendar_days_across_a_dst_change(
    data, point, timezone, now, changed, length_h
):
    body = answer(data, point, now)
    assert body["timezone"] == timezone
    zone = ZoneInfo(timezone)
    today = dt.datetime.fromisoformat(now + "+00:00").astimezone(zone).date()
    days = body["daily"]["data"]
    lengths = {}
    for d, entry in enumerate(days):
        day = today + dt.timedelta(days=d)
        following = day + dt.timedelta(days=1)
        assert entry["time"] == local_s(zone, day, 0), day
        lengths[day] = (local_s(zone, following, 0) - entry["time"]) // HOUR
        # High: the hours from 06:00 to 18:00 local; low: from 18:00 to 06:00 the next morning.
        high = max(
            temperature_c(t, point[0])
            for t in range(local_s(zone, day, 6), local_s(zone, day, 18), HOUR)
        )
        low = min(
            temperature_c(t, point[0])
            for t in range(local_s(zone, day, 18), local_s(zone, following, 6), HOUR)
        )
        assert entry["temperatureHigh"] == pytest.approx(high, abs=0.006), day
        assert entry["temperatureLow"] == pytest.approx(low, abs=0.006), day
        _assert_sun_as_the_ephemeris(entry, point, zone, day)
    assert lengths[changed] == length_h
    assert {h for day, h in lengths.items() if day != changed} == {24}


def _assert_sun_as_the_ephemeris(entry: dict, point, zone: ZoneInfo, day: dt.date) -> None:
    """Sunrise and sunset within a minute of PyEphem's around the day's local noon, and
    within the local day."""
    observer = ephem.Observer()
    observer.lat, observer.lon, observer.pressure, observer.horizon = (
        str(point[0]),
        str(point[1]),
        0,
        "-0:34",
    )
    noon = dt.datetime.fromtimestamp(local_s(zone, day, 12), dt.timezone.utc)
    observer.date = ephem.Date(noon.replace(tzinfo=None))
    rise = observer.previous_rising(ephem.Sun()).datetime()
    set_ = observer.next_setting(ephem.Sun()).datetime()
    assert abs(entry["sunriseTime"] - calendar.timegm(rise.timetuple())) <= 60, day
    assert abs(entry["sunsetTime"] - calendar.timegm(set_.timetuple())) <= 60, day
    midnight, next_midnight = local_s(zone, day, 0), local_s(zone, day + dt.timedelta(1), 0)
    assert midnight < entry["sunriseTime"] < entry["sunsetTime"] < next_midnight, day


@pytest.mark.parametrize(
    "point, now", [(ZURICH, "2026-03-28T09:00:00"), (SYDNEY, "2026-04-01T00:00:00")]
)
def test_hourly_entries_are_local_hours_across_a_dst_change(data, point, now):
    body = answer(data, point, now, hours=168)
    hours = body["hourly"]["data"]
    zone = ZoneInfo(body["timezone"])
    assert len({dt.datetime.fromtimestamp(h["time"], zone).utcoffset() for h in hours}) == 2
    assert [b["time"] - a["time"] for a, b in zip(hours, hours[1:])] == [HOUR] * 167
    for h in hours:
        assert dt.datetime.fromtimestamp(h["time"], zone).minute == 0
        assert h["temperature"] == pytest.approx(temperature_c(h["time"], point[0]), abs=0.006)


def test_a_few_wet_hours_summarised_as_rain_give_the_rain_icon(data):
    # From 11:00 in Zürich: three hours of light rain (each hour's icon 09, showers under a
    # broken sky) among 24 partly cloudy ones (03). The summary says light rain, so the icon
    # is rain (10), not the most frequent hour's cloud.
    hourly = answer(data, ZURICH, "2026-03-27T10:00:00")["hourly"]
    hours = hourly["data"][:24]
    assert [h["icon"] for h in hours if h["precipitationType"] == "rain"] == ["09d"] * 3
    assert Counter(h["icon"][:2] for h in hours).most_common(1)[0][0] == "03"
    assert hourly["summary"] == "Light rain from this afternoon until tonight."
    assert hourly["icon"] == "10d"


def test_the_daily_block_icon_is_the_precipitation_its_summary_names(data):
    # Two wet days of seven (rain today, Friday; rain then snow on Monday: a mix), five partly
    # cloudy ones: the week's summary names mixed precipitation, so its icon is 13 (snow or
    # sleet), not the most frequent day's.
    daily = answer(data, ZURICH, "2026-03-27T10:00:00")["daily"]
    icons = [day["icon"] for day in daily["data"]]
    assert icons.count("03d") == 5
    assert daily["summary"].startswith("Mixed precipitation today and Monday,")
    assert daily["icon"] == "13d"


def test_the_minutely_icon_is_the_precipitation_its_summary_names(data):
    # Rain at 10:00 UTC, snow at 11:00: between them the interpolated shares are mostly
    # rain until 10:30, then mostly snow. From 10:05, 26 minutes of rain, then 35 of snow:
    # rain is nearly a third of the amount, so the next hour's summary says mixed, as a
    # period's would, and its icon is the mix's (13).
    minutely = answer(data, ZURICH, "2026-03-30T10:05:00")["minutely"]
    kinds = [m["precipitationType"] for m in minutely["data"]]
    assert kinds == ["rain"] * 26 + ["snow"] * 35
    assert minutely["summary"] == "Mixed precipitation for the hour."
    assert minutely["icon"] == "13d"


def test_days_past_the_end_of_the_data_are_left_out(data):
    # The run ends on 2026-04-08 at 12:00 UTC (14:00 in Zürich): from the 6th, the 9th to the
    # 12th have no hour of data. They are left out, as hours past the end are, instead of
    # being summarised as clear and dry ('01d') beside null numbers.
    daily = answer(data, ZURICH, "2026-04-06T12:00:00")["daily"]
    zone = ZoneInfo("Europe/Zurich")
    assert [dt.datetime.fromtimestamp(d["time"], zone).date() for d in daily["data"]] == [
        dt.date(2026, 4, 6),
        dt.date(2026, 4, 7),
        dt.date(2026, 4, 8),
    ]
    assert all(d["humidity"] is not None and d["icon"] == "03d" for d in daily["data"])
    assert daily["icon"] == "03d"
    # Within the data all seven days are there.
    assert len(answer(data, ZURICH, "2026-04-01T12:00:00")["daily"]["data"]) == 7


def test_minutes_past_the_end_of_the_data_have_no_type(data):
    # 61 minutes always (docs/api/forecast.md#minutely); those after 12:00 UTC, the run's last hour,
    # are unknown: their precipitation and its type are null, not "none" beside a null amount.
    minutes = answer(data, ZURICH, "2026-04-08T11:30:00", blocks=("minutely",))["minutely"]
    last = calendar.timegm((2026, 4, 8, 12, 0, 0))
    known = [m for m in minutes["data"] if m["time"] <= last]
    unknown = [m for m in minutes["data"] if m["time"] > last]
    assert (len(minutes["data"]), len(known)) == (61, 31)
    assert all(m["precipitation"] == 0.0 and m["precipitationType"] == "none" for m in known)
    assert all(
        m["precipitation"] is None
        and m["precipitationProbability"] is None
        and m["precipitationType"] is None
        for m in unknown
    )


@pytest.mark.parametrize(
    "point",
    [(28.61, 77.21), (-34.93, 138.6), (47.56, -52.71)],
    ids=["Delhi +5:30", "Adelaide +10:30", "St Johns -2:30"],
)
def test_the_present_and_the_minutes_lie_between_the_models_hours(data, point):
    # Rain of 2 mm/h from 14 UTC after none at 13: at 13:45 the present has 1.5 mm/h and the
    # minutes from 14:00 have 2. In a zone whose hours fall between the model's (local hours
    # at :30 UTC, themselves halfway between two of them) reading between two local hours
    # would give 1.25 and 1.5 there: interpolated twice.
    body = answer(data, point, "2026-03-27T13:45:00")
    assert body["currently"]["precipitation"] == 1.5
    minutes = {m["time"]: m["precipitation"] for m in body["minutely"]["data"]}
    at = calendar.timegm((2026, 3, 27, 13, 45, 0))
    assert minutes[at] == 1.5 and minutes[at + 5 * 60] == pytest.approx(5 / 3, abs=1e-4)
    assert all(minutes[at + 60 * i] == 2.0 for i in range(15, 61))


@pytest.mark.parametrize(
    "now", [f"2026-03-30T{h:02d}:{m:02d}:00" for h in (9, 10, 11, 12) for m in (0, 15, 30, 45)]
)
def test_a_zone_between_the_models_hours_has_the_present_and_minutes_of_one_on_them(data, now):
    # The fields are the same everywhere (rain, then snow, on the 30th): Delhi (+5:30) must
    # have Accra's (+0) present and minutes, amounts and types alike.
    delhi, accra = (
        answer(data, point, now, blocks=("currently", "minutely"))
        for point in ((28.61, 77.21), (5.6, -0.2))
    )
    fields = ("precipitation", "precipitationProbability", "precipitationType")
    assert {f: delhi["currently"][f] for f in fields} == {f: accra["currently"][f] for f in fields}
    assert delhi["minutely"] == accra["minutely"]
