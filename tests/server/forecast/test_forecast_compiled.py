"""The forecast's compiled code against what it replaces: numbers written as orjson writes the
rounded floats, numpy.interp step for step, and the shared grid's bilinear read."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest
from numba import njit

from pipeline.common import grid as writer
from server.artifacts.grid import PointGrid
from server.forecast import jsonbytes, kernels, render


@njit(cache=True)
def _write_all(values, decimals, out):
    ends = np.empty(len(values), dtype=np.int64)
    n = 0
    for i in range(len(values)):
        n = jsonbytes.put_rounded(out, n, values[i], decimals)
        ends[i] = n
    return ends


def _out(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.zeros(size, dtype=np.uint8),
        np.zeros((8, jsonbytes.HOLE_WIDTH), dtype=np.int64),
        np.zeros(8),
    )


@pytest.mark.parametrize(
    "decimals, low, high",
    [(0, -5000, 5000), (1, -20000, 20000), (2, -200000, 200000), (4, -300000, 300000)],
)
def test_numbers_are_what_orjson_writes(decimals, low, high):
    ks = np.concatenate(
        [
            np.arange(low, high, dtype=np.float64),
            [
                -0.0,
                0.0,
                np.nan,
                np.inf,
                -np.inf,
                999999999999999.0,
                -123456789012345.0,
                100000000000000.0,
            ],
        ]
    )
    out = _out(len(ks) * 24)
    ends = _write_all(ks, decimals, out)
    text = out[0][: ends[-1]].tobytes()
    starts = np.concatenate([[0], ends[:-1]])
    written = [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())]
    expected = [orjson.dumps(kernels / 10.0**decimals) for kernels in ks.tolist()]
    assert written == expected


def test_numbers_beyond_the_exact_range_are_left_to_orjson():
    out = _out(64)
    ends = _write_all(np.array([1.5e17, -2e15]), 2, out)
    holes, numbers = out[1], out[2]
    assert ends.tolist() == [0, 0] and holes[0, 0] == 2
    assert holes[1, :3].tolist() == [0, jsonbytes.HOLE_NUMBER, 1] and numbers[1] == 1.5e15
    assert holes[2, 2] == 2 and numbers[2] == -2e13


def test_interp_is_numpys():
    rng = np.random.default_rng(5)
    fp = rng.standard_normal(40)
    fp[[3, 4, 17, 30]] = np.nan
    fp[20:23] = np.inf
    xs = np.concatenate([rng.uniform(-2, 42, 2000), np.arange(-1, 41, 0.5), [np.nan]])
    expected = np.interp(xs, np.arange(40, dtype=np.float64), fp)
    got = np.array([render.interp(x, fp, 40) for x in xs])
    np.testing.assert_array_equal(got, expected)


def test_bilinear_reads_as_the_shared_grid(tmp_path):
    rng = np.random.default_rng(3)
    values = (rng.standard_normal((5, 6, 9, 3)) * 10).astype(np.float32)
    values[rng.random(values.shape) < 0.3] = np.nan
    spec = writer.spec("g.npy", np.arange(5.0), np.arange(6.0), 0, 3600, 9, ["a", "b", "c"])
    writer.write(tmp_path, spec, lambda a, b: values.transpose(3, 2, 0, 1)[:, :, a:b])
    grid = PointGrid(tmp_path, spec)
    for _ in range(300):
        lat, lon = rng.uniform(-0.5, 4.5), rng.uniform(-0.5, 5.5)
        c = grid.corners(lat, lon)
        block = grid.block(c.i0, c.i1, c.j0, c.j1)  # as ForecastData.point
        start = rng.uniform(-3, 6) if rng.random() < 0.5 else float(rng.integers(-3, 6))
        out = np.empty((5, 3))
        kernels.window(block, np.array([0, 1, 0, 1, *c.weights]), start, out)
        # the shared grid, padded with NaN and interpolated in time
        i0, frac = math.floor(start), start - math.floor(start)
        padded = np.full((6, 3), np.nan)
        lo, hi = max(i0, 0), min(i0 + 6, 9)
        if lo < hi:
            padded[lo - i0 : hi - i0] = grid.series(lat, lon, lo, hi)
        expected = padded[:5] if frac < 1e-9 else padded[:5] * (1 - frac) + padded[1:] * frac
        # the same read in space (server.kernels.bilinear), the same arithmetic in time
        np.testing.assert_array_equal(out[:4], expected[:4])


def _daily(rain_hours: dict[int, float], snow_hours: set[int]) -> list[dict]:
    """The daily block at 0°, 0° (UTC) over a 2 x 2 grid from the epoch: 10 °C, cloudy, rain
    (mm/h) in the given hours (snow in snow_hours)."""
    return _body(rain_hours, snow_hours)["daily"]["data"]


def _body(
    rain_hours: dict[int, float],
    snow_hours: set[int],
    blocks: frozenset[str] = frozenset({"daily"}),
    wind_ms: float = 0.0,
) -> dict:
    """The response at 0°, 0° (UTC) at 12:00 on the epoch's day over a 2 x 2 grid: 10 °C,
    cloudy, an east wind of wind_ms, rain (mm/h) in the given hours from the epoch (snow in
    snow_hours)."""
    from server.forecast import blocks as forecast_blocks
    from server.forecast.place import Place, zone
    from server.forecast.science.units import SYSTEMS
    from server.kernels import warmup

    data = warmup.SyntheticData()
    values = np.zeros((2, 2, warmup.HOURS, len(kernels.INPUTS)), dtype=np.float32)
    base = {
        "temperature_c": 10.0,
        "dewpoint_c": 5.0,
        "pressure_hpa": 1013.0,
        "cloud_cover_frac": 0.9,
        "visibility_m": 20000.0,
        "gust_ms": 1.0,
    }
    for name, value in {**base, "wind_u_ms": -wind_ms}.items():
        values[..., kernels.INPUTS.index(name)] = value
    for hour, rate in rain_hours.items():
        values[:, :, hour, kernels.INPUTS.index("precip_mmh")] = rate
        values[:, :, hour, kernels.INPUTS.index("precip_probability_frac")] = 1.0
        values[:, :, hour, kernels.INPUTS.index("snow_frac")] = 1.0 if hour in snow_hours else 0.0
    data.grid = warmup._Grid(values)
    request = forecast_blocks.Request(
        lat=0.0, lon=0.0, units="si", lang="en", hours=48, blocks=blocks
    )
    place = Place(timezone="UTC", zone=zone("UTC"), country=None, elevation_m=None)
    return orjson.loads(forecast_blocks.respond(data, place, request, SYSTEMS["si"], 12 * 3600.0))


def test_a_days_summary_covers_its_calendar_day_like_its_icon_and_total():
    # rain at 01-04 of the second day only: the first day's summary does not call it its
    # night; the second day's summary, icon and total all have it
    days = _daily({25: 2.0, 26: 2.0, 27: 2.0}, set())
    assert days[0]["precipitation"] == 0 and "rain" not in days[0]["summary"].lower()
    assert days[0]["icon"][:2] not in ("09", "10")
    assert days[1]["precipitation"] == 6.0 and days[1]["precipitationType"] == "rain"
    # the icon is the rain the summary names ("Light rain": 10, as each of its hours)
    assert "rain in the morning" in days[1]["summary"].lower() and days[1]["icon"] == "10d"


def test_mixed_precipitation_is_said_when_a_second_kind_is_sizeable():
    days = _daily(
        {25: 2.0, 26: 2.0, 37: 2.0, 38: 2.0, 49: 3.0, 50: 3.0, 51: 3.0, 52: 0.5}, {37, 38, 52}
    )
    assert days[1]["summary"].startswith("Mixed precipitation"), days[1]["summary"]
    assert "mixed" not in days[2]["summary"].lower()  # 0.5 of 9.5 mm snow: rain


def test_a_day_of_drizzle_has_the_showers_icon_its_summary_and_hours_have():
    # 2.4 mm over eight hours of 0.3 mm/h (drizzle: below 0.4 mm/h): 09, as each hour; eight
    # hours of 0.5 mm/h (light rain) are rain, 10
    drizzle = {h: 0.3 for h in range(32, 40)}
    rain = {h: 0.5 for h in range(56, 64)}
    body = _body({**drizzle, **rain}, set(), frozenset({"daily", "hourly"}))
    days = body["daily"]["data"]
    assert days[1]["precipitation"] == 2.4 and days[1]["precipitationType"] == "rain"
    assert days[1]["icon"] == "09d" and "drizzle" in days[1]["summary"].lower()
    assert {h["icon"][:2] for h in body["hourly"]["data"] if h["time"] // 3600 in drizzle} == {"09"}
    assert days[2]["icon"] == "10d" and "light rain" in days[2]["summary"].lower()


def test_a_trace_below_what_the_summaries_call_wet_has_no_type():
    # Day 1: 0.03 mm/h of snow for six morning hours (0.18 mm, each hour typed snow): the
    # summaries call the day dry, so its type is none. Day 2: ten such hours (0.3 mm) make
    # its morning wet: snow, in the day's summary and in the week's.
    trace = {h: 0.03 for h in range(26, 32)}
    some = {h: 0.03 for h in range(50, 60)}
    body = _body({**trace, **some}, set(trace) | set(some))
    days = body["daily"]["data"]
    assert days[1]["precipitation"] == 0.18 and days[1]["precipitationType"] == "none"
    assert "snow" not in days[1]["summary"].lower()
    assert days[2]["precipitation"] == 0.3 and days[2]["precipitationType"] == "snow"
    assert days[2]["summary"] == "Possible flurries in the morning."  # very light snow
    # 1970-01-01 was a Thursday: day 2 is Saturday
    assert body["daily"]["summary"].startswith("Possible flurries on Saturday"), body["daily"][
        "summary"
    ]
    dry = _body(trace, set(trace))
    assert dry["daily"]["summary"].startswith("No precipitation throughout the week")


def test_the_hourly_icon_covers_the_hours_its_summary_does():
    # From 12:00: 24 dry cloudy hours, then 24 of rain. The summary covers the next 24 hours
    # (periods of today and tomorrow), and so does the icon: overcast, not rain.
    body = _body({h: 3.0 for h in range(36, 60)}, set(), frozenset({"hourly"}))
    hourly = body["hourly"]
    assert len(hourly["data"]) == 48 and hourly["data"][24]["precipitationType"] == "rain"
    assert "rain" not in hourly["summary"].lower() and hourly["icon"][:2] == "04"
    # 18 of the 24 hours rainy: rain in both, although most of the 48 hours are dry
    body = _body({h: 3.0 for h in range(12, 30)}, set(), frozenset({"hourly"}))
    assert "rain" in body["hourly"]["summary"].lower() and body["hourly"]["icon"][:2] == "10"


@pytest.mark.parametrize("wind, direction", [(0.0, None), (0.004, None), (0.006, 90)])
def test_a_calm_has_no_wind_direction(wind, direction):
    # windSpeed is written to 2 decimals: 0.004 m/s is written 0.0, a calm, with no direction
    body = _body({}, set(), frozenset({"currently", "hourly", "daily"}), wind_ms=wind)
    entries = [body["currently"], *body["hourly"]["data"], *body["daily"]["data"]]
    assert {e["windSpeed"] for e in entries} == {round(wind, 2)}
    assert {e["windDirection"] for e in entries} == {direction}


@pytest.mark.parametrize("now", ["2026-10-03T03:00:00", "2027-04-03T03:00:00"])
def test_hours_stay_local_hours_across_a_30_minute_dst_change(now):
    # Lord Howe moves its clocks by 30 minutes (+10:30 <-> +11:00): after the change every
    # hourly entry still starts at a local whole hour and holds that moment's values.
    import calendar
    from datetime import datetime

    from server.forecast import blocks as forecast_blocks
    from server.forecast.place import Place, zone
    from server.forecast.science.units import SYSTEMS
    from server.kernels import warmup

    now_s = calendar.timegm(datetime.fromisoformat(now).timetuple())
    data = warmup.SyntheticData()
    data.first_s = now_s - 86400 * 2
    data.last_s = data.first_s + (warmup.HOURS - 1) * 3600
    data.sun_t0, data.suns = render.sun_table(data.first_s, data.last_s)
    values = np.zeros((2, 2, warmup.HOURS, len(kernels.INPUTS)), dtype=np.float32)
    values[..., kernels.INPUTS.index("temperature_c")] = (
        np.arange(warmup.HOURS) * 0.1
    )  # hours since
    data.grid = warmup._Grid(values)
    tz = "Australia/Lord_Howe"
    request = forecast_blocks.Request(
        lat=-31.55,
        lon=159.08,
        units="si",
        lang="en",
        hours=168,
        blocks=frozenset({"currently", "minutely", "hourly", "daily"}),
    )
    place = Place(timezone=tz, zone=zone(tz), country=None, elevation_m=None)
    body = orjson.loads(forecast_blocks.respond(data, place, request, SYSTEMS["si"], float(now_s)))
    hours = body["hourly"]["data"]
    offsets = {datetime.fromtimestamp(h["time"], zone(tz)).utcoffset() for h in hours}
    assert len(offsets) == 2  # the change is in the block
    for h in hours:
        assert datetime.fromtimestamp(h["time"], zone(tz)).minute == 0
        assert h["temperature"] == pytest.approx((h["time"] - data.first_s) / 3600 * 0.1, abs=0.006)
    assert hours[0]["time"] <= now_s < hours[1]["time"]
    assert body["currently"]["temperature"] == pytest.approx(
        (now_s - data.first_s) / 3600 * 0.1, abs=0.006
    )
    for day in body["daily"]["data"]:
        local = datetime.fromtimestamp(day["time"], zone(tz))
        assert (local.hour, local.minute) == (0, 0)


def test_hours_past_the_end_of_the_data_are_left_out_after_a_30_minute_change():
    # After Lord Howe's April change (+11 -> +10:30) local hours start at :30 UTC; data that
    # ends on a whole UTC hour leaves the last such hour without values: it is not shown,
    # rather than shown with nulls.
    import calendar
    from datetime import datetime

    from server.forecast import blocks as forecast_blocks
    from server.forecast.place import Place, zone
    from server.forecast.science.units import SYSTEMS
    from server.kernels import warmup

    now_s = calendar.timegm(datetime.fromisoformat("2027-04-03T03:00:00").timetuple())
    data = warmup.SyntheticData()
    data.first_s = now_s - 86400 * 2
    data.last_s = now_s + 72 * 3600
    data.sun_t0, data.suns = render.sun_table(data.first_s, data.last_s)
    values = np.zeros((2, 2, warmup.HOURS, len(kernels.INPUTS)), dtype=np.float32)
    values[..., kernels.INPUTS.index("temperature_c")] = 10.0
    data.grid = warmup._Grid(values)
    tz = "Australia/Lord_Howe"
    request = forecast_blocks.Request(
        lat=-31.55,
        lon=159.08,
        units="si",
        lang="en",
        hours=168,
        blocks=frozenset({"currently", "hourly"}),
    )
    place = Place(timezone=tz, zone=zone(tz), country=None, elevation_m=None)
    hours = orjson.loads(
        forecast_blocks.respond(data, place, request, SYSTEMS["si"], float(now_s))
    )["hourly"]["data"]
    assert hours[-1]["time"] <= data.last_s
    assert data.last_s - hours[-1]["time"] < 3600
    assert all(h["temperature"] == 10.0 for h in hours)


@pytest.mark.parametrize(
    "phase, written",
    [(0.994, 0.99), (0.995, 0.0), (0.9999, 0.0), (0.0, 0.0), (0.504, 0.5), (0.25, 0.25)],
)
def test_a_moon_phase_is_below_one(phase, written):
    # A lunation fraction lies in [0, 1): near the new moon it rounds to 0, never to 1.0.
    out = _out(256)
    n = render._day_tail(out, 0, 1.0, 2.0, phase)
    entry = orjson.loads(b"{" + bytes(out[0][1:n]))
    assert entry == {"sunriseTime": 1, "sunsetTime": 2, "moonPhase": written}


@pytest.mark.parametrize(
    "rise, set_, keys",
    [
        (math.nan, math.nan, ["moonPhase"]),  # polar night or midnight sun
        (1.0, math.nan, ["sunriseTime", "moonPhase"]),  # the sun rises, sets the day after
        (math.nan, 2.0, ["sunsetTime", "moonPhase"]),
    ],
)
def test_a_day_without_sunrise_or_sunset_leaves_the_key_out(rise, set_, keys):
    out = _out(256)
    n = render._day_tail(out, 0, rise, set_, 0.5)
    entry = orjson.loads(b"{" + bytes(out[0][1:n]))
    assert list(entry) == keys
