"""Both AQIs against the official tables (docs/api/air-quality.md#indices): breakpoints,
boundaries, truncation, the O3 and SO2 rules, the published check values, and one rounding rule
(half up)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.air_quality import aqi

US = {t.variable: t for t in aqi.US_AQI}
EU = {t.variable: t for t in aqi.EUROPEAN_AQI}
# Sub-index inputs in the EPA table's own units (µg/m³, ppm or ppb).
PM25, PM10, O3_8H, O3_1H = "pm25_24h_ugm3", "pm10_24h_ugm3", "o3_8h_ugm3", "o3_ugm3"
CO_8H, SO2_1H, SO2_24H, NO2 = "co_8h_ugm3", "so2_ugm3", "so2_24h_ugm3", "no2_ugm3"


def us_sub(variable: str, value_in_table_units: float) -> float:
    """The rounded US sub-index of one input given in the table's unit."""
    table = US[variable]
    ugm3 = np.array([value_in_table_units / table.scale])
    return float(aqi.round_half_up(aqi.sub_index(table, ugm3))[0])


def eu_sub(variable: str, ugm3: float) -> float:
    return float(aqi.sub_index(EU[variable], np.array([ugm3]))[0])


# (input, table value, expected sub-index): every breakpoint of docs/api/air-quality.md#us-aqi,
# both ends.
US_BREAKPOINTS = [
    (
        PM25,
        [
            (0.0, 0),
            (9.0, 50),
            (9.1, 51),
            (35.4, 100),
            (35.5, 101),
            (55.4, 150),
            (55.5, 151),
            (125.4, 200),
            (125.5, 201),
            (225.4, 300),
            (225.5, 301),
            (325.4, 500),
        ],
    ),
    (
        PM10,
        [
            (0, 0),
            (54, 50),
            (55, 51),
            (154, 100),
            (155, 101),
            (254, 150),
            (255, 151),
            (354, 200),
            (355, 201),
            (424, 300),
            (425, 301),
            (504, 400),
            (505, 401),
            (604, 500),
        ],
    ),
    (
        O3_8H,
        [
            (0.000, 0),
            (0.054, 50),
            (0.055, 51),
            (0.070, 100),
            (0.071, 101),
            (0.085, 150),
            (0.086, 151),
            (0.105, 200),
            (0.106, 201),
            (0.200, 300),
        ],
    ),
    (
        O3_1H,
        [
            (0.125, 101),
            (0.164, 150),
            (0.165, 151),
            (0.204, 200),
            (0.205, 201),
            (0.404, 300),
            (0.405, 301),
            (0.504, 400),
            (0.505, 401),
            (0.604, 500),
        ],
    ),
    (
        CO_8H,
        [
            (0.0, 0),
            (4.4, 50),
            (4.5, 51),
            (9.4, 100),
            (9.5, 101),
            (12.4, 150),
            (12.5, 151),
            (15.4, 200),
            (15.5, 201),
            (30.4, 300),
            (30.5, 301),
            (40.4, 400),
            (40.5, 401),
            (50.4, 500),
        ],
    ),
    (
        SO2_1H,
        [(0, 0), (35, 50), (36, 51), (75, 100), (76, 101), (185, 150), (186, 151), (304, 200)],
    ),
    (SO2_24H, [(305, 201), (604, 300), (605, 301), (804, 400), (805, 401), (1004, 500)]),
    (
        NO2,
        [
            (0, 0),
            (53, 50),
            (54, 51),
            (100, 100),
            (101, 101),
            (360, 150),
            (361, 151),
            (649, 200),
            (650, 201),
            (1249, 300),
            (1250, 301),
            (1649, 400),
            (1650, 401),
            (2049, 500),
        ],
    ),
]


@pytest.mark.parametrize("variable, rows", US_BREAKPOINTS, ids=[v for v, _ in US_BREAKPOINTS])
def test_us_breakpoints(variable, rows):
    for value, expected in rows:
        assert us_sub(variable, value) == expected, (variable, value)


@pytest.mark.parametrize(
    "variable, value, expected",
    [
        (PM25, 5.0, 28),
        (PM25, 35.9, 102),
        (PM10, 155.9, 101),
        (O3_8H, 0.060, 67),
        (CO_8H, 8.47, 90),
        (NO2, 120, 105),
    ],
)
def test_us_public_check_values(variable, value, expected):
    assert us_sub(variable, value) == expected


@pytest.mark.parametrize(
    "variable, value, expected",
    [
        (PM25, 9.09, 50),  # truncated to 9.0, never rounded up to 9.1
        (PM25, 35.49, 100),
        (PM10, 54.99, 50),
        (O3_8H, 0.0549, 50),
        (CO_8H, 4.49, 50),
        (SO2_1H, 35.9, 50),
        (NO2, 100.99, 100),
    ],
)
def test_us_truncates_before_the_formula(variable, value, expected):
    assert us_sub(variable, value) == expected


def test_us_rounding_is_half_up():
    # (150 - 101) / (0.085 - 0.071) * (0.076 - 0.071) + 101 = 118.5 exactly: rounds up.
    assert us_sub(O3_8H, 0.076) == 119
    assert aqi.round_half_up(np.array([0.5, 1.5, 2.4999, 118.49999999999999])).tolist() == [
        1,
        2,
        2,
        119,
    ]


def test_us_pm25_top_segment_and_caps():
    # 225.5-325.4 maps to 301-500 as one segment.
    assert us_sub(PM25, 275.5) == round(301 + 199 / 99.9 * 50.0)
    assert us_sub(PM25, 500.0) == 500 and us_sub(PM10, 900) == 500 and us_sub(NO2, 5000) == 500
    assert us_sub(CO_8H, 60.0) == 500 and us_sub(SO2_24H, 2000) == 500


def test_us_ozone_8h_stops_at_300_and_1h_applies_from_0125():
    assert us_sub(O3_8H, 0.250) == 300  # no 8-hour AQI above 300
    assert np.isnan(us_sub(O3_1H, 0.124))  # no 1-hour AQI below 101
    assert us_sub(O3_1H, 0.300) == round((300 - 201) / (0.404 - 0.205) * (0.300 - 0.205) + 201)


def test_us_sulphur_dioxide_1h_stops_at_200_and_24h_applies_from_305():
    assert us_sub(SO2_1H, 500) == 200
    assert np.isnan(us_sub(SO2_24H, 304))


def ppm(gas: str, value: float) -> float:
    """µg/m³ of `value` ppm of a gas at 25 °C."""
    return value * 1000 / aqi.ppb_per_ugm3(gas)


def ppb(gas: str, value: float) -> float:
    return value / aqi.ppb_per_ugm3(gas)


def us_columns(**overrides) -> dict:
    base = {
        PM25: 5.0,
        PM10: 20.0,
        O3_8H: ppm("o3", 0.030),
        O3_1H: ppm("o3", 0.030),
        CO_8H: ppm("co", 0.5),
        SO2_1H: ppb("so2", 2),
        SO2_24H: ppb("so2", 2),
        NO2: ppb("no2", 10),
    }
    return {k: np.array([v]) for k, v in {**base, **overrides}.items()}


def test_us_index_is_the_largest_sub_index():
    assert aqi.us_aqi(us_columns())[0] == 28  # PM2.5 5.0 -> 28
    assert aqi.us_aqi(us_columns(**{NO2: ppb("no2", 120)}))[0] == 105
    # O3: the larger of 8-hour and 1-hour
    assert aqi.us_aqi(us_columns(**{O3_8H: ppm("o3", 0.060), O3_1H: ppm("o3", 0.130)}))[
        0
    ] == us_sub(O3_1H, 0.130)


# (1-hour SO2 ppb, 24-hour mean ppb, US AQI): the 1-hour sub-index below 305 ppb (truncated),
# whatever the 24-hour mean; from 305 ppb the 24-hour mean's, at least 200.
SO2_RULE = [
    (100, 700, round(49 / 109 * (100 - 76) + 101)),  # 24 h in its table, 1 h below 305: 1 h
    (304, 700, 200),
    (304.9, 1000, 200),  # 304.9 truncates to 304
    (305, 700, round(99 / 199 * (700 - 605) + 301)),  # from 305 ppb the 24-hour mean
    (305, 305, 201),
    (305, 304, 200),
    (305, np.nan, 200),  # 24 h below its table: 200
    (1500, 604, 300),
    (1500, 1004, 500),
    (1500, 5000, 500),
    (35, 0, 50),
    (36, np.nan, 51),
]


@pytest.mark.parametrize("hour_ppb, day_ppb, expected", SO2_RULE)
def test_us_sulphur_dioxide_24h_mean_only_where_1h_reaches_305_ppb(hour_ppb, day_ppb, expected):
    """1-hour SO2 defines no AQI from 200 up; the 24-hour mean is used there
    (docs/api/air-quality.md#us-aqi)."""
    columns = us_columns(**{PM25: 0.0, SO2_1H: ppb("so2", hour_ppb), SO2_24H: ppb("so2", day_ppb)})
    assert aqi.us_aqi(columns)[0] == expected


def test_us_index_is_unknown_when_a_pollutant_is_unknown():
    assert np.isnan(aqi.us_aqi(us_columns(**{PM10: np.nan}))[0])
    # the optional inputs (1-hour O3, 24-hour SO2) only add, never make it unknown
    assert aqi.us_aqi(us_columns(**{SO2_24H: np.nan}))[0] == 28


def test_gas_conversion_factors():
    # µg/m³ per ppb at 25 °C (docs/api/air-quality.md#us-aqi)
    for gas, factor in (("o3", 1.9631), ("no2", 1.8816), ("so2", 2.6203), ("co", 1.1456)):
        assert 1 / aqi.ppb_per_ugm3(gas) == pytest.approx(factor, abs=5e-5)


@pytest.mark.parametrize("variable, limits", list(aqi.EEA_LIMITS_UGM3.items()))
def test_eu_band_limits_are_multiples_of_20(variable, limits):
    assert eu_sub(variable, 0.0) == 0.0
    for band, limit in enumerate(limits, start=1):
        # on a limit: the start of the higher band (the same number on the continuous scale)
        assert eu_sub(variable, limit) == pytest.approx(20.0 * band)
        below = limits[band - 2] if band > 1 else 0.0
        middle = (below + limit) / 2
        assert eu_sub(variable, middle) == pytest.approx(20.0 * band - 10.0)


@pytest.mark.parametrize(
    "variable, ugm3, expected",
    [
        ("pm25_ugm3", 12, 34),
        ("pm10_ugm3", 50, 41.33),
        ("no2_ugm3", 40, 48.57),
        ("o3_ugm3", 150, 75),
        ("pm25_ugm3", 200, 124),
    ],
)
def test_eu_public_check_values(variable, ugm3, expected):
    assert eu_sub(variable, ugm3) == pytest.approx(expected, abs=0.005)


def test_eu_extrapolates_with_the_very_poor_slope_and_caps_at_500():
    # PM10 very poor band: 195-270 -> 80-100, slope 20/75 per µg/m³
    assert eu_sub("pm10_ugm3", 345) == pytest.approx(100 + 75 * 20 / 75)
    assert eu_sub("pm25_ugm3", 1140) == pytest.approx(500)
    assert eu_sub("o3_ugm3", 10_000) == 500


def test_eu_index_is_the_largest_rounded_half_up():
    columns = {
        "pm25_ugm3": [12.0, 3.0, 1.0],
        "pm10_ugm3": [50.0, 10.0, 1.0],
        "no2_ugm3": [40.0, 5.0, 1.0],
        "o3_ugm3": [30.0, 150.0, 1.0],
        "so2_ugm3": [5.0, 5.0, np.nan],
    }
    result = aqi.european_aqi({k: np.array(v) for k, v in columns.items()})
    assert result[0] == 49 and result[1] == 75 and np.isnan(result[2])


def test_published_tables_are_the_evaluated_ones():
    tables = aqi.manifest_tables()
    assert [t["variable"] for t in tables["us"]] == [t.variable for t in aqi.US_AQI]
    assert tables["eu"][0] == {
        "variable": "pm25_ugm3",
        "scale": 1.0,
        "decimals": None,
        "x": [0.0, 5.0, 15.0, 50.0, 90.0, 140.0, 1140.0],
        "y": [0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 500.0],
        "below": 0.0,
        "above": 500.0,
        "required": True,
        "only_above": None,
    }


def test_known_is_where_the_index_is_known():
    rng = np.random.default_rng(3)
    columns = {k: v.repeat(200) for k, v in us_columns().items()}
    for name in columns:
        columns[name][rng.random(200) < 0.1] = np.nan
    assert np.array_equal(aqi.known(aqi.US_AQI, columns), ~np.isnan(aqi.us_aqi(columns)))
