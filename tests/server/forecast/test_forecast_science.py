"""The forecast's science, by tables of inputs and expected outputs: sun and moon (against the
PyEphem ephemeris), humidity and apparent temperature, wind, units, and the pipeline's time
series (interpolation, de-accumulation, unit spellings)."""

from __future__ import annotations

import calendar
import datetime as dt
import math
import random

import ephem
import numpy as np
import pytest

from pipeline.common import series
from pipeline.forecast import precipitation
from pipeline.forecast.units import canonical_unit, converter
from server.forecast.science import moon, sun, units, weather


def utc(*args) -> int:
    return calendar.timegm(dt.datetime(*args).timetuple())


def events(lat: float, lon: float, local_noon_s: float) -> tuple[float, float]:
    noon = sun.solar_noon(np.array([local_noon_s]), lon)
    rise, set_ = sun.rise_set(noon, lat, lon)
    return float(rise[0]), float(set_[0])


def ephemeris(lat: float, lon: float, noon_s: float) -> tuple[float, float]:
    """PyEphem's sunrise and sunset around a solar noon: the upper limb at -34' (refraction
    as NOAA's fixed 34', ephem's own switched off)."""
    observer = ephem.Observer()
    observer.lat, observer.lon = str(lat), str(lon)
    observer.pressure, observer.horizon = 0, "-0:34"
    observer.date = ephem.Date(
        dt.datetime.fromtimestamp(noon_s, dt.timezone.utc).replace(tzinfo=None)
    )
    rise = observer.previous_rising(ephem.Sun())
    set_ = observer.next_setting(ephem.Sun())
    return _unix(rise), _unix(set_)


def _unix(date) -> float:
    when = date.datetime()
    return calendar.timegm(when.timetuple()) + when.microsecond / 1e6


def test_zurich_check_value():
    # docs/api/forecast.md#sun-and-moon: Zürich, 2026-06-21, rises 03:29:03 UTC and sets 19:26:14
    # UTC.
    rise, set_ = events(47.3769, 8.5417, utc(2026, 6, 21, 11, 0))
    assert abs(rise - utc(2026, 6, 21, 3, 29, 3)) < 3
    assert abs(set_ - utc(2026, 6, 21, 19, 26, 14)) < 3


def test_sunrise_and_sunset_within_a_minute_of_the_ephemeris_up_to_65_degrees():
    rng = random.Random(3)
    worst = 0.0
    for _ in range(300):
        lat, lon = rng.uniform(-65, 65), rng.uniform(-180, 180)
        day = utc(2024, 1, 1) + rng.randrange(0, 3 * 365) * 86400
        noon_guess = day + 43200 - lon * 240
        rise, set_ = events(lat, lon, noon_guess)
        if math.isnan(rise):
            continue
        noon = float(sun.solar_noon(np.array([noon_guess]), lon)[0])
        e_rise, e_set = ephemeris(lat, lon, noon)
        worst = max(worst, abs(rise - e_rise), abs(set_ - e_set))
    assert worst < 60, worst  # the target
    assert worst < 10, worst  # what the iterated NOAA algorithm achieves


@pytest.mark.parametrize(
    "lat, date, kind",
    [
        (69.65, (2026, 6, 21), "midnight sun"),
        (69.65, (2026, 12, 21), "polar night"),
        (-77.85, (2026, 12, 21), "midnight sun"),
        (-77.85, (2026, 6, 21), "polar night"),
    ],
)
def test_polar_day_and_night_have_no_sunrise_or_sunset(lat, date, kind):
    rise, set_ = events(lat, 18.96, utc(*date, 12) - 18.96 * 240)
    assert math.isnan(rise) and math.isnan(set_)
    noon = sun.solar_noon(np.array([utc(*date, 12) - 18.96 * 240.0]), 18.96)
    lit = bool(sun.is_day(noon, lat, 18.96)[0])
    assert lit == (kind == "midnight sun")


def test_a_sunset_after_local_midnight_belongs_to_the_day_before():
    # Reykjavík (UTC+0, 22° west) sets after midnight around the June solstice; anchored on
    # that day's solar noon, June 21's sunset is on June 22 just after 00:00.
    lat, lon = 64.1466, -21.9426
    rise, set_ = events(lat, lon, utc(2026, 6, 21, 12))
    assert utc(2026, 6, 22) < set_ < utc(2026, 6, 22, 0, 30)
    assert utc(2026, 6, 21, 2, 50) < rise < utc(2026, 6, 21, 3, 10)
    noon = float(sun.solar_noon(np.array([utc(2026, 6, 21, 13)]), lon)[0])
    e_rise, e_set = ephemeris(lat, lon, noon)
    assert abs(set_ - e_set) < 30 and abs(rise - e_rise) < 30


def test_is_day_follows_the_sun():
    lat, lon = 47.3769, 8.5417
    rise, set_ = events(lat, lon, utc(2026, 6, 21, 11))
    times = np.array([rise - 120, rise + 120, set_ - 120, set_ + 120])
    assert sun.is_day(times, lat, lon).tolist() == [False, True, True, False]


def test_moon_phase_within_0_001_of_the_ephemeris():
    # README: "the moon phase (Meeus, within 0.001 of PyEphem)".
    worst = 0.0
    for day in range(0, 3 * 365, 5):
        t = utc(2024, 1, 1, 12) + day * 86400
        when = ephem.Date(dt.datetime.fromtimestamp(t, dt.timezone.utc).replace(tzinfo=None))
        elong = ephem.Ecliptic(ephem.Moon(when)).lon - ephem.Ecliptic(ephem.Sun(when)).lon
        expected = (float(elong) / (2 * math.pi)) % 1.0
        got = float(moon.phase(np.array([float(t)]))[0])
        worst = max(worst, abs((got - expected + 0.5) % 1.0 - 0.5))
    assert worst < 0.001, worst


@pytest.mark.parametrize(
    "when, expected",
    [
        ((2000, 1, 6, 18, 14), 0.0),  # new moon
        ((2024, 4, 8, 18, 21), 0.0),  # new moon (total solar eclipse)
        ((2025, 3, 14, 6, 55), 0.5),  # full moon (total lunar eclipse)
    ],
)
def test_moon_phase_at_known_phases(when, expected):
    # The instants are given to the minute, in which the phase moves by 0.00003.
    got = float(moon.phase(float(utc(*when))))
    assert abs((got - expected + 0.5) % 1.0 - 0.5) < 0.001


@pytest.mark.parametrize(
    "t, rh, wind, expected",
    [
        # the check values of docs/api/forecast.md#derived-quantities
        (30.0, 0.70, 2.0, 34.37),
        (10.0, 0.80, 10.0, 2.24),
    ],
)
def test_apparent_temperature(t, rh, wind, expected):
    assert weather.apparent_temperature_c(t, rh, wind) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(
    "t, td, expected",
    [(20.0, 10.0, 0.5254), (20.0, 20.0, 1.0), (-10.0, -20.0, 0.4386), (35.0, 5.0, 0.1551)],
)
def test_relative_humidity(t, td, expected):
    assert weather.relative_humidity(t, td) == pytest.approx(expected, abs=1e-4)


def test_dewpoint_from_humidity_is_the_inverse_of_humidity_from_dewpoint():
    t = np.linspace(-30, 40, 15)
    for rh in (5.0, 30.0, 75.0, 100.0):
        td = precipitation.dewpoint_c(t, np.full_like(t, rh))
        np.testing.assert_allclose(weather.relative_humidity(t, td) * 100, rh, rtol=1e-5)


@pytest.mark.parametrize(
    "u, v, speed, direction",
    [
        (3.0, 4.0, 5.0, 216.87),
        (0.0, -5.0, 5.0, 0.0),
        (-5.0, 0.0, 5.0, 90.0),
        (0.0, 5.0, 5.0, 180.0),
        (5.0, 0.0, 5.0, 270.0),
    ],
)
def test_wind_from_components(u, v, speed, direction):
    assert weather.wind_speed_ms(u, v) == pytest.approx(speed)
    assert weather.wind_direction_deg(u, v) == pytest.approx(direction, abs=0.01)


def test_unit_systems():
    assert units.SYSTEMS["us"].temperature(20.0) == pytest.approx(68.0)
    assert 5 * units.SYSTEMS["us"].speed == pytest.approx(11.1846815)
    assert 5 * units.SYSTEMS["ca"].speed == pytest.approx(18.0)
    assert units.SYSTEMS["uk"].visibility == units.KM_TO_MI and units.SYSTEMS["uk"].elevation == 1
    assert [
        units.for_country(c).name for c in ("US", "LR", "MM", "GB", "IE", "CA", "CH", None)
    ] == ["us", "us", "us", "uk", "uk", "ca", "si", "si"]


@pytest.mark.parametrize(
    "raw, quantity, factor, offset",
    [
        ("K", "temperature_c", 1, -273.15),
        ("m s**-1", "speed_ms", 1, 0),
        ("m/s", "speed_ms", 1, 0),
        ("kg m**-2 s**-1", "rate_mmh", 3600, 0),
        ("kg/m^2/s", "rate_mmh", 3600, 0),
        ("kg m-2 s-1", "rate_mmh", 3600, 0),
        ("kg m**-2", "amount_mm", 1, 0),
        ("m", "amount_mm", 1000, 0),
        ("%", "fraction", 0.01, 0),
        ("(0 - 1)", "fraction", 1, 0),
        ("Pa", "pressure_hpa", 0.01, 0),
        ("m**2 s**-2", "length_m", 1 / 9.80665, 0),
        ("Code table 4.222", "category", 1, 0),
        ("-", "category", 1, 0),
        ("non-dim", "category", 1, 0),
        # UDUNITS / CF spellings
        ("degree_Celsius", "temperature_c", 1, 0),
        ("deg_C", "temperature_c", 1, 0),
        ("degC", "temperature_c", 1, 0),
        ("degree_C", "temperature_c", 1, 0),
        ("degK", "temperature_c", 1, -273.15),
        ("hPa", "pressure_hpa", 1, 0),
        ("mbar", "pressure_hpa", 1, 0),
        ("millibar", "pressure_hpa", 1, 0),
        ("mm/hr", "rate_mmh", 1, 0),
        ("mm h-1", "rate_mmh", 1, 0),
        ("km/hr", "speed_ms", 1 / 3.6, 0),
    ],
)
def test_unit_spellings(raw, quantity, factor, offset):
    assert converter(quantity, raw) == pytest.approx((factor, offset))


def test_unknown_units_are_refused():
    assert converter("speed_ms", "furlongs per fortnight") is None
    assert canonical_unit("m.s-1") == "m s-1"
    assert converter("fraction", "") is None  # 50 % or 0.5? refused, not guessed


def test_linear_interpolation_and_holding_at_the_ends():
    times = np.array([0, 3 * 3600, 6 * 3600])
    values = np.array([0.0, 3.0, 9.0], dtype=np.float32)[:, None]
    out = series.interpolate(times, values, series.hours(0, 6 * 3600 + 7 * 3600))[:, 0]
    assert out[:7].tolist() == [0, 1, 2, 3, 5, 7, 9]
    assert out[12] == 9 and np.isnan(out[13])  # held six hours, then unknown


def test_a_time_on_a_step_keeps_its_value_next_to_an_unknown_step():
    # NaN * 0 is NaN: a blend with weight 0 on the unknown step would blank hours 0 and 6.
    times = np.array([0, 3 * 3600, 6 * 3600, 9 * 3600])
    values = np.array([1.0, np.nan, 4.0, np.nan], dtype=np.float32)[:, None]
    out = series.interpolate(times, values, series.hours(0, 9 * 3600))[:, 0]
    assert out[0] == 1.0 and out[6] == 4.0
    assert np.isnan(out[1:6]).all() and np.isnan(out[7:]).all()


def test_deaccumulation_with_and_without_buckets():
    acc = np.array([0, 1, 3, 1, 4, 4], dtype=np.float32)[:, None]
    resets = series.reset_steps(acc[:, 0])
    assert resets.tolist() == [False, False, False, True, False, False]
    assert series.deaccumulate(acc, resets)[:, 0].tolist() == [1, 2, 1, 3, 0]
    times = np.arange(0, 7 * 3600, 3600)
    detected = np.array([False, False, False, False, False, False, False, True])
    # a fall seen after the step at 6 h marks 6-hour buckets everywhere, at 12 h, 18 h, ...
    times = np.arange(0, 8 * 3600, 3600)
    assert series.bucket_resets(times, 0, detected).tolist() == [
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        True,
    ]
    rates = series.interval_rates(
        np.array([0, 3600, 4 * 3600]),
        np.array([2, 6], dtype=np.float32)[:, None],
        series.hours(0, 4 * 3600),
    )[:, 0]
    assert rates.tolist() == [2, 2, 2, 2, 2]


def test_phase_shares_and_probability():
    snow, sleet = precipitation.shares_from_ptype(np.array([0, 1, 3, 5, 7, 8, 99.0]))
    assert np.isnan(snow[0]) and snow[1:].tolist()[:5] == [0, 0, 1, 0.5, 0]
    assert sleet[1:6].tolist() == [0, 1, 0, 0, 1] and np.isnan(snow[-1])
    filled, _ = precipitation.fill_shares_by_temperature(snow, sleet, np.full(7, -5.0))
    assert filled[0] == 1.0 and filled[-1] == 1.0
    rate = np.zeros((3, 5, 5), dtype=np.float32)
    rate[1, 2, 2] = 1.0
    p = precipitation.probability(rate, 1, wraps=False)
    assert p[1, 2, 2] == pytest.approx(1 / 27) and p[0, 1, 1] == pytest.approx(1 / 27)
    assert p[1, 0, 0] == 0.0
