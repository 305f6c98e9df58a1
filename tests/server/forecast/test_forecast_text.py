"""Icons and summaries: conditions classified by the compiled kernel, Pirate Weather phrase
shapes, and their rendering in every language of pirateweather-translations."""

from __future__ import annotations

import numpy as np
import pytest

from server.forecast import facts, kernels, series, summary, text

COLUMNS = {name: i for i, name in enumerate(kernels.INPUTS)}
BASE = {
    "temperature_c": 20.0,
    "dewpoint_c": 10.0,
    "wind_u_ms": 3.0,
    "wind_v_ms": 4.0,
    "pressure_hpa": 1013.0,
    "cloud_cover_frac": 0.5,
    "precip_mmh": 0.0,
    "precip_probability_frac": 0.0,
    "snow_frac": 0.0,
    "sleet_frac": 0.0,
    "visibility_m": 16000.0,
    "gust_ms": 8.0,
    "cape_jkg": 0.0,
}


def classify(**changes) -> tuple[str, str]:
    """(English title, icon code) of one hour with BASE changed."""
    row = np.array([[{**BASE, **changes}[name] for name in kernels.INPUTS]])
    s = series.derive(row, series.input_columns(COLUMNS), 0.0)
    code = int(s.codes[0])
    return text.titles([code], "en")[0], text.ICON_CODES[int(s.icons[0])]


@pytest.mark.parametrize(
    "changes, title, icon",
    [
        ({}, "Partly Cloudy", "03"),
        ({"cloud_cover_frac": 0.05}, "Clear", "01"),
        ({"cloud_cover_frac": 0.2}, "Mostly Clear", "02"),
        ({"cloud_cover_frac": 0.8}, "Mostly Cloudy", "04"),
        ({"cloud_cover_frac": 1.0}, "Overcast", "04"),
        (
            {"precip_mmh": 1.0, "precip_probability_frac": 0.9, "cloud_cover_frac": 1.0},
            "Light Rain",
            "10",
        ),
        (
            {"precip_mmh": 0.2, "precip_probability_frac": 0.9, "cloud_cover_frac": 1.0},
            "Drizzle",
            "09",
        ),
        (
            {"precip_mmh": 1.0, "precip_probability_frac": 0.9, "cloud_cover_frac": 0.5},
            "Light Rain",
            "09",
        ),  # broken sky: showers
        ({"precip_mmh": 0.05, "precip_probability_frac": 0.9}, "Possible Drizzle", "03"),
        ({"precip_mmh": 3.0, "precip_probability_frac": 0.1}, "Possible Rain", "03"),
        (
            {"precip_mmh": 12.0, "precip_probability_frac": 1.0, "cape_jkg": 3000.0},
            "Thunderstorms and Heavy Rain",
            "11",
        ),
        (
            {
                "precip_mmh": 1.0,
                "precip_probability_frac": 1.0,
                "snow_frac": 1.0,
                "temperature_c": -2.0,
                "dewpoint_c": -3.0,
            },
            "Snow",
            "13",
        ),
        (
            {
                "precip_mmh": 1.0,
                "precip_probability_frac": 1.0,
                "sleet_frac": 1.0,
                "temperature_c": 0.0,
                "dewpoint_c": -1.0,
            },
            "Light Sleet",
            "13",
        ),
        (
            {"visibility_m": 500.0, "dewpoint_c": 19.0, "wind_u_ms": 0.0, "wind_v_ms": 1.0},
            "Foggy",
            "50",
        ),
        ({"visibility_m": 3000.0, "dewpoint_c": 5.0}, "Hazy", "50"),
        ({"wind_u_ms": 8.0, "wind_v_ms": 0.0, "cloud_cover_frac": 0.0}, "Breezy", "01"),
        ({"wind_u_ms": 12.0, "wind_v_ms": 0.0}, "Windy and Partly Cloudy", "03"),
        (
            {
                "precip_mmh": 1.0,
                "precip_probability_frac": 1.0,
                "wind_u_ms": 20.0,
                "cloud_cover_frac": 1.0,
            },
            "Light Rain and Dangerously Windy",
            "10",
        ),
        ({"dewpoint_c": -25.0, "cloud_cover_frac": 0.0}, "Dry and Clear", "01"),
        (
            {"temperature_c": 30.0, "dewpoint_c": 29.5, "cloud_cover_frac": 0.8},
            "Humid and Mostly Cloudy",
            "04",
        ),
        ({"cloud_cover_frac": np.nan, "visibility_m": np.nan, "cape_jkg": np.nan}, "Clear", "01"),
    ],
)
def test_conditions_titles_and_icons(changes, title, icon):
    assert classify(**changes) == (title, icon)


NAMES = ("morning", "afternoon", "evening", "night")


@pytest.mark.parametrize(
    "periods, expected",
    [
        ((0, 1, 2, 3), "Rain throughout the day."),
        ((1,), "Rain in the afternoon."),
        ((3,), "Rain overnight."),
        ((0, 1), "Rain until evening."),
        ((2, 3), "Rain starting in the evening."),
        ((1, 2), "Rain from afternoon until night."),
        ((0, 3), "Rain until afternoon, returning overnight."),
        ((0, 2, 3), "Rain until afternoon, returning in the evening."),
        ((1, 3), "Rain in the afternoon and overnight."),
    ],
)
def test_time_phrases(periods, expected):
    rendered = text.render(("sentence", summary.time_phrase("medium-rain", periods, NAMES)), "en")
    assert rendered == expected


def minutes(wet: list[tuple[int, int]], rate: float = 1.0, kind: int = 1):
    r, kinds = np.zeros(61), np.zeros(61, dtype=np.int64)
    for a, b in wet:
        r[a:b], kinds[a:b] = rate, kind
    return r, kinds, np.ones(61)


@pytest.mark.parametrize(
    "wet, expected",
    [
        ([], "Partly cloudy for the hour."),
        ([(0, 61)], "Light rain for the hour."),
        ([(0, 20)], "Light rain ending in 20 min."),
        ([(12, 61)], "Light rain starting in 12 min."),
        ([(10, 25)], "Light rain starting in 10 min, ending 15 min later."),
        ([(0, 10), (30, 61)], "Light rain ending in 10 min, returning 20 min later."),
    ],
)
def test_minutely_summaries(wet, expected):
    code = int(
        series.derive(
            np.array([[BASE[n] for n in kernels.INPUTS]]), series.input_columns(COLUMNS), 0.0
        ).codes[0]
    )
    phrase = summary.minutely_phrase(*minutes(wet), code)
    assert text.render(phrase, "en") == expected


@pytest.mark.parametrize(
    "snow_from, expected",
    [
        (10, "Snow for the hour."),  # 51 of 61 minutes snow after rain: snow, by amount
        (55, "Light rain for the hour."),  # 6 of 61 minutes snow: rain
        (20, "Mixed precipitation for the hour."),  # 20 of 61 rain: a sizeable second kind
    ],
)
def test_the_hours_summary_names_the_main_kind_by_amount(snow_from, expected):
    rate, kinds, probability = minutes([(0, 61)])
    kinds[snow_from:] = 2
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.minutely_facts(rate, kinds, probability, row)
    assert text.render(summary.minutely_phrase_of(tuple(row.tolist())), "en") == expected
    icon = text.ICON_CODES[facts.summary_icon(row, 0)]
    assert icon == {"S": "13", "L": "10", "M": "13"}[expected[0]]


def week(totals, kinds=None, highs=(20, 21, 22, 25, 23, 21, 20)):
    kinds = kinds or [1] * 7
    by_kind = [
        [t if kernels == kk else 0.0 for kk in (1, 2, 3)] for t, kernels in zip(totals, kinds)
    ]
    return summary.Stats(
        total=list(totals),
        peak=[t / 4 for t in totals],
        probability=[1.0] * 7,
        by_kind=by_kind,
        thunder=[0] * 7,
        foggy=[False] * 7,
        cloud=[2] * 7,
        wind=[0] * 7,
        wet_hours=[4] * 7,
    ), list(map(float, highs))


DAYS = ["today", "tomorrow", "friday", "saturday", "sunday", "monday", "tuesday"]


@pytest.mark.parametrize(
    "totals, highs, expected",
    [
        (
            (0,) * 7,
            (20, 21, 22, 25, 23, 21, 20),
            "No precipitation throughout the week, with highs reaching 25°C on Saturday.",
        ),
        (
            (4, 4, 4, 0, 0, 0, 0),
            (20, 19, 18, 17, 16, 15, 14),
            "Light rain today through Friday, with highs falling to 14°C on Tuesday.",
        ),
        (
            (0, 0, 0, 4, 4, 0, 0),
            (14, 15, 16, 17, 18, 19, 20),
            "Light rain over the weekend, with highs climbing to 20°C on Tuesday.",
        ),
        (
            (0, 3, 0, 0, 0, 0, 6),
            (25, 21, 20, 19, 20, 22, 24),
            "Light rain tomorrow and Tuesday, with highs dipping to 19°C on Saturday.",
        ),
        ((2,) * 7, (20,) * 7, "Light rain throughout the week, with highs reaching 20°C today."),
    ],
)
def test_week_summaries(totals, highs, expected):
    st, highs = week(totals, highs=highs)
    assert text.render(summary.week_phrase(st, highs, DAYS, False), "en") == expected


PHRASES = (
    [
        ("title", text.phrase(code))
        for code in sorted(
            {
                int(
                    series.derive(
                        np.array([[{**BASE, **c}[n] for n in kernels.INPUTS]]),
                        series.input_columns(COLUMNS),
                        0.0,
                    ).codes[0]
                )
                for c in (
                    {},
                    {"precip_mmh": 12.0, "precip_probability_frac": 1.0, "cape_jkg": 3000.0},
                    {"visibility_m": 3000.0, "dewpoint_c": 5.0},
                    {"wind_u_ms": 12.0},
                    {"precip_mmh": 0.05, "precip_probability_frac": 0.9},
                )
            }
        )
    ]
    + [
        ("sentence", summary.time_phrase("light-snow", p, NAMES))
        for p in ((0, 1, 2, 3), (1,), (0, 1), (2, 3), (1, 2), (0, 3), (1, 3))
    ]
    + [
        (
            "sentence",
            summary.time_phrase(
                "light-rain",
                (1,),
                ("today-morning", "today-afternoon", "today-evening", "today-night"),
            ),
        ),
        (
            "sentence",
            ("and", ("during", "medium-rain", "morning"), ("during", "light-wind", "night")),
        ),
        summary.minutely_phrase(*minutes([(10, 25)]), 0),
        summary.minutely_phrase(*minutes([(0, 10), (30, 61)]), 0),
        summary.week_phrase(
            *week((0, 3, 0, 0, 0, 0, 6), highs=(25, 21, 20, 19, 20, 22, 24)), DAYS, True
        ),
        summary.week_phrase(*week((4, 4, 4, 0, 0, 0, 0)), DAYS, False),
        summary.week_phrase(*week((0, 0, 0, 4, 4, 0, 0)), DAYS, False),
    ]
)


@pytest.mark.parametrize("lang", sorted(text.LANGUAGES))
def test_every_phrase_shape_renders_in_every_language(lang):
    english = [text.render(p, "en") for p in PHRASES]
    for phrase, in_english in zip(PHRASES, english):
        rendered = text._translation(lang).translate(text._as_list(phrase))
        assert rendered.strip()
        if lang not in ("en", "x-pig-latin"):
            assert rendered != in_english or phrase[0] == "title", (lang, rendered)


def test_languages_and_fallbacks():
    assert len(text.LANGUAGES - {"x-pig-latin"}) >= 55
    assert text.language(("pt-BR", "pt", "en")) == "pt"
    assert text.language(("zh-TW", "zh", "en")) == "zh-tw"
    assert text.language(("nb", "en")) == "no"
    assert text.language(("tlh", "en")) == "en"
    assert (
        text.render(("sentence", ("for-day", "medium-rain")), "de") == "Den ganzen Tag lang Regen."
    )
    assert text.render(("title", "light-clouds"), "fr") == "Faibles Passages Nuageux"


def test_dominant_icon_prefers_the_more_severe_on_ties():
    def dominant(indexes):
        counts = np.bincount(indexes, minlength=len(text.ICON_CODES)).astype(np.int64)
        return text.ICON_CODES[facts.dominant(counts)]

    assert dominant([3, 3, 5]) == "04"
    assert dominant([3, 5]) == "10"


def day_summary(cloud: list[int], known: list[int]) -> str:
    """A calendar day's summary from its four periods' statistics (server.forecast.facts.day_facts)."""
    st = summary.Stats(
        total=[0.0] * 4,
        peak=[0.0] * 4,
        probability=[0.0] * 4,
        by_kind=[[0.0] * 3] * 4,
        thunder=[0] * 4,
        foggy=[False] * 4,
        cloud=cloud,
        wind=[0] * 4,
        wet_hours=[0] * 4,
        known_hours=known,
    )
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.day_facts(st.matrix(), 0, row)
    return text.render(summary.periods_phrase_of(tuple(row.tolist())), "en")


def test_a_day_is_summarised_over_the_periods_it_has_data_for():
    # Today, from a run that begins in the afternoon: the morning is unknown, not clear.
    assert day_summary([0, 2, 2, 2], [0, 2, 5, 6]) == "Partly cloudy throughout the day."
    assert day_summary([0, 2, 2, 2], [8, 5, 5, 6]) == "Partly cloudy starting in the afternoon."
    assert day_summary([0, 0, 2, 0], [0, 5, 5, 0]) == "Partly cloudy in the evening."
    assert day_summary([2, 2, 0, 0], [5, 5, 0, 0]) == "Partly cloudy throughout the day."
    assert day_summary([0, 0, 0, 2], [0, 0, 0, 2]) == "Partly cloudy overnight."
    assert day_summary([0, 0, 0, 0], [0, 0, 0, 0]) == "Clear throughout the day."


def test_a_day_without_daytime_data_takes_its_icon_from_the_hours_it_has():
    dry = np.zeros(facts.FACTS, dtype=np.int64)
    partly = text.ICON_CODES.index("03")
    assert facts.day_icon(dry, np.nan, 0.5) == partly  # daytime unknown: the day's cloud
    assert facts.day_icon(dry, 0.5, 0.0) == partly
    assert facts.day_icon(dry, 0.0, 0.5) == text.ICON_CODES.index("01")


@pytest.mark.parametrize(
    "rain_mm, peak_mmh, icon, words",
    [
        (0.5, 0.5, "10", "light rain"),  # under the 1 mm that once decided a day's icon
        (0.3, 0.05, "09", "drizzle"),
        (6.0, 3.0, "10", "rain"),
    ],
)
def test_a_days_icon_is_the_precipitation_its_summary_names(rain_mm, peak_mmh, icon, words):
    st = summary.Stats(
        total=[0.0, rain_mm, 0.0, 0.0],
        peak=[0.0, peak_mmh, 0.0, 0.0],
        probability=[0.0, 0.8, 0.0, 0.0],
        by_kind=[[0.0] * 3, [rain_mm, 0.0, 0.0], [0.0] * 3, [0.0] * 3],
        thunder=[0] * 4,
        foggy=[False] * 4,
        cloud=[1] * 4,
        wind=[0] * 4,
        wet_hours=[0, 2, 0, 0],
        known_hours=[6] * 4,
    )
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.day_facts(st.matrix(), 0, row)
    sentence = text.render(summary.periods_phrase_of(tuple(row.tolist())), "en").lower()
    assert words in sentence
    assert text.ICON_CODES[facts.day_icon(row, 0.1, 0.1)] == icon


def test_a_foggy_morning_is_a_fog_day():
    st = summary.Stats(
        total=[0.0] * 4,
        peak=[0.0] * 4,
        probability=[0.0] * 4,
        by_kind=[[0.0] * 3] * 4,
        thunder=[0] * 4,
        foggy=[True, False, False, False],
        cloud=[0] * 4,
        wind=[0] * 4,
        wet_hours=[0] * 4,
        known_hours=[6] * 4,
    )
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.day_facts(st.matrix(), 0, row)
    assert "fog" in text.render(summary.periods_phrase_of(tuple(row.tolist())), "en").lower()
    assert text.ICON_CODES[facts.day_icon(row, 0.0, 0.0)] == "50"


@pytest.mark.parametrize(
    "celsius, in_c, in_f",
    [
        # 31.71 to 31.02 °C are 89.08 to 87.84 °F: within 1 °C, no fall in either unit (a 1 °F
        # step called the °F week falling and the °C one peaking today).
        (
            (31.71, 31.5, 31.4, 31.3, 31.2, 31.1, 31.02),
            "reaching 32°C today",
            "reaching 89°F today",
        ),
        # 31 to 30 °C, 87.8 to 86 °F: a fall of 1 °C in both.
        (
            (31.0, 30.8, 30.6, 30.5, 30.4, 30.2, 30.0),
            "falling to 30°C on Tuesday",
            "falling to 86°F on Tuesday",
        ),
    ],
)
def test_the_weeks_trend_does_not_depend_on_the_unit_system(celsius, in_c, in_f):
    st, celsius = week((0,) * 7, highs=celsius)
    said = "No precipitation throughout the week, with highs {}."
    assert text.render(summary.week_phrase(st, celsius, DAYS, False), "en") == said.format(in_c)
    assert text.render(summary.week_phrase(st, celsius, DAYS, True), "en") == said.format(in_f)
