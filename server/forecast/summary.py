"""Block and day summaries as structured phrases (Pirate Weather's phrase shapes).

The next hour (minutely), the next 24 hours in periods (hourly block), a calendar day in
periods (daily entries) and the week (daily block). Periods are Pirate Weather's: morning
04-12, afternoon 12-17, evening 17-22, night 22-04 local time. The facts of a summary are
decided by compiled code (facts); here they become a phrase, and the phrase text in a
language, both cached: a response renders only what has not been seen before.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import orjson

from server.forecast import facts, kernels, text
from server.forecast.science.units import SYSTEMS

PERIODS = ("morning", "afternoon", "evening", "night")
NEXT_DAY_NAMES = tuple(f"{day}-{period}" for day in ("today", "tomorrow") for period in PERIODS)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
TRENDS = {
    facts.TREND_PEAKING: "temperatures-peaking",
    facts.TREND_RISING: "temperatures-rising",
    facts.TREND_FALLING: "temperatures-falling",
    facts.TREND_VALLEYING: "temperatures-valleying",
}
MINUTELY_SHAPES = {
    facts.WET_HOUR: "for-hour",
    facts.STOPPING: "stopping-in",
    facts.STOPPING_THEN_STARTING: "stopping-then-starting-later",
    facts.STARTING: "starting-in",
    facts.STARTING_THEN_STOPPING: "starting-then-stopping-later",
}
TEXT_CACHE = 65536  # rendered summaries kept per language


@dataclass
class Stats:
    """Statistics of consecutive spans of hours (one value per span, Python lists)."""

    total: list[float]  # mm
    peak: list[float]  # mm/h
    probability: list[float]  # highest
    by_kind: list[list[float]]  # mm of rain, snow, sleet
    thunder: list[int]  # highest level
    foggy: list[bool]  # fog or mist half the time or more
    cloud: list[int]  # level of the mean cover
    wind: list[int]  # highest level
    wet_hours: list[int]  # hours with precipitation
    known_hours: list[int] | None = None  # hours with data (None: every hour of each span)

    def matrix(self) -> np.ndarray:
        """One row per span, columns as kernels.STAT_COLUMNS."""
        known = self.known_hours or [1] * len(self.total)
        return np.array(
            [
                [t, p, q, *kinds, h, f, c, w, n, k]
                for t, p, q, kinds, h, f, c, w, n, k in zip(
                    self.total,
                    self.peak,
                    self.probability,
                    self.by_kind,
                    self.thunder,
                    self.foggy,
                    self.cloud,
                    self.wind,
                    self.wet_hours,
                    known,
                )
            ],
            dtype=np.float64,
        ).reshape(-1, len(kernels.STAT_COLUMNS))


_TEXTS: dict[str, dict[tuple, bytes]] = {}


def text_json(row: tuple[int, ...], lang: str) -> bytes:
    """The JSON string of a summary in a language, from its facts (facts rows)."""
    cache = _TEXTS.setdefault(lang, {})
    found = cache.get(row)
    if found is None:
        if len(cache) >= TEXT_CACHE:
            cache.clear()
        found = cache[row] = orjson.dumps(text.render(phrase_of(row), lang))
    return found


def phrase_of(row: tuple[int, ...]):
    """The structured phrase of a facts row."""
    shape = row[0]
    if shape == facts.PERIODS:
        return periods_phrase_of(row)
    if shape == facts.WEEK:
        return week_phrase_of(row)
    if shape == facts.MINUTELY:
        return minutely_phrase_of(row)
    if shape == facts.CODE_FOR_HOUR:
        return ("sentence", ("for-hour", text.phrase(row[facts.C_CODE])))
    if shape == facts.CODE_SENTENCE:
        return ("sentence", text.phrase(row[facts.C_CODE]))
    raise ValueError(f"unknown summary facts {facts!r}")


def and_chain(items: list):
    """("and", a, ("and", b, c)) for several items; the item itself for one."""
    return items[0] if len(items) == 1 else ("and", items[0], and_chain(items[1:]))


def time_phrase(condition, periods: tuple[int, ...], names: tuple[str, ...]):
    """A condition over some of the periods: for the day, during, until, starting, ..."""
    n, k = len(names), len(periods)
    if k == n > 1:
        return ("for-day", condition)
    if k == 1:
        return ("during", condition, names[periods[0]])
    first, last = periods[0], periods[-1]
    if last - first == k - 1:  # one unbroken stretch
        if first == 0:
            return ("until", condition, names[last + 1])
        if last == n - 1:
            return ("starting", condition, names[first])
        return ("starting-continuing-until", condition, names[first], names[last + 1])
    gap = next(i for i in range(1, k) if periods[i] != periods[i - 1] + 1)
    rest = periods[gap:]
    if first == 0 and rest[-1] - rest[0] == len(rest) - 1:
        return ("until-starting-again", condition, names[periods[gap - 1] + 1], names[rest[0]])
    return ("during", condition, and_chain([names[i] for i in periods]))


def _bits(mask: int, n: int) -> tuple[int, ...]:
    return tuple(i for i in range(n) if mask >> i & 1)


def periods_phrase_of(row: tuple[int, ...]):
    """One sentence for consecutive periods (facts.period_facts)."""
    n, wet, kind, level, possible, thunder, fog, names = row[facts.P_N : facts.P_NAMES + 1]
    if names:
        names = tuple(NEXT_DAY_NAMES[facts.name_index(j)] for j in _bits(names, 12))
    else:
        names = PERIODS[row[facts.P_FIRST] : row[facts.P_FIRST] + n]
    wet = _bits(wet, n)
    condition = _precipitation(kind, level, possible) if wet else None
    return _periods_phrase(
        wet,
        condition,
        bool(thunder),
        _bits(fog, n),
        row[facts.CLOUDS : facts.CLOUDS + n],
        row[facts.WINDS : facts.WINDS + n],
        names,
    )


@lru_cache(maxsize=16384)
def _periods_phrase(wet, condition, thunder, foggy, clouds, winds, names):
    if wet:
        if thunder:
            condition = ("and", "thunderstorm", condition)
        main = time_phrase(condition, wet, names)
    elif foggy:
        main = time_phrase("fog", foggy, names)
    else:
        top = max(clouds)
        main = time_phrase(
            text.SKIES[top], tuple(p for p, level in enumerate(clouds) if level == top), names
        )
    windy = tuple(p for p, level in enumerate(winds) if level > 0)
    if windy:
        main = ("and", main, time_phrase(text.WINDS[max(winds)], windy, names))
    return ("sentence", main)


def minutely_phrase(rate: np.ndarray, kind: np.ndarray, probability: np.ndarray, current_code: int):
    """The next hour: when precipitation starts or stops (in minutes), else the current
    conditions for the hour."""
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.minutely_facts(
        np.asarray(rate, dtype=np.float64),
        np.asarray(kind, dtype=np.int64),
        np.asarray(probability, dtype=np.float64),
        row,
    )
    if row[facts.M_CASE] == facts.DRY_HOUR:
        return ("sentence", ("for-hour", text.phrase(current_code)))
    return minutely_phrase_of(tuple(row.tolist()))


def minutely_phrase_of(row: tuple[int, ...]):
    """The next hour's sentence from facts.minutely_facts (not DRY_HOUR)."""
    case, kind, level, possible, a, b = row[facts.M_CASE : facts.M_B + 1]
    condition = _precipitation(kind, level, possible)
    shape = MINUTELY_SHAPES[case]
    if case == facts.WET_HOUR:
        return ("sentence", (shape, condition))
    if case in (facts.STOPPING, facts.STARTING):
        return ("sentence", (shape, condition, ("minutes", a)))
    return ("sentence", (shape, condition, ("minutes", a), ("minutes", b)))


def _precipitation(kind: int, level: int, possible: int) -> str:
    """The precipitation of a facts row: 'light-rain', ..., or mixed (facts.MIXED)."""
    if kind == facts.MIXED:
        return "mixed-precipitation"
    return text.precipitation_phrase(kind, level, bool(possible))


def _days_phrase(days: list[int], names: list[str]):
    """Days as 'today through Wednesday', 'on Monday and Thursday', ..."""
    runs, run = [], [days[0]]
    for day in days[1:]:
        if day == run[-1] + 1:
            run.append(day)
        else:
            runs.append(run)
            run = [day]
    runs.append(run)
    parts = []
    for r in runs:
        if len(r) >= 3:
            parts.append(("through", names[r[0]], names[r[-1]]))
        else:
            parts.extend(names[d] for d in r)
    return and_chain(parts)


@lru_cache(maxsize=7)
def week_names(weekday: int) -> tuple[str, ...]:
    """today, tomorrow, then the weekdays of a week starting on `weekday` (0 Monday)."""
    return ("today", "tomorrow") + tuple(WEEKDAYS[(weekday + d) % 7] for d in range(2, 7))


def week_phrase(st: Stats, highs_c: list[float], names: list[str], fahrenheit: bool):
    """The week (`st` holds one span per day): which days it rains or snows, and where the
    highs (°C; named in °F when `fahrenheit`) go."""
    weekday = (WEEKDAYS.index(names[2]) - 2) % 7
    assert tuple(names) == week_names(weekday), names
    row = np.empty(facts.FACTS, dtype=np.int64)
    matrix = st.matrix()
    # each day taken as one period: wet from PERIOD_MM, as facts.day_kind
    wet_days = (matrix[:, facts.S_TOTAL] >= facts.PERIOD_MM).astype(np.int64)
    celsius = np.asarray(highs_c, dtype=np.float64)
    served = np.round(SYSTEMS["us" if fahrenheit else "si"].temperature(celsius), 2)
    facts.week_facts(matrix, celsius, served, wet_days, weekday, int(fahrenheit), row)
    return week_phrase_of(tuple(row.tolist()))


def week_phrase_of(row: tuple[int, ...]):
    """The week's sentence from facts.week_facts."""
    wet, kind, level, possible, weekday, fahrenheit, trend, day, high = row[
        facts.W_WET : facts.W_HIGH + 1
    ]
    names = week_names(weekday)
    wet = list(_bits(wet, len(names)))
    if not wet:
        precipitation = ("for-week", "no-precipitation")
    else:
        condition = _precipitation(kind, level, possible)
        weekend = [d for d, name in enumerate(names) if name in ("saturday", "sunday")]
        if len(wet) == len(names):
            precipitation = ("for-week", condition)
        elif len(weekend) == 2 and wet == weekend:
            precipitation = ("over-weekend", condition)
        else:
            precipitation = ("during", condition, _days_phrase(wet, names))
    if trend == facts.TREND_NONE:
        return ("sentence", precipitation)
    unit = "fahrenheit" if fahrenheit else "celsius"
    return ("sentence", ("with", precipitation, (TRENDS[trend], (unit, high), names[day])))
