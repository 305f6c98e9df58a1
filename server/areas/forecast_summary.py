"""Block and day summaries as structured phrases (Pirate Weather's phrase shapes).

The next hour (minutely), the next 24 hours in periods (hourly block), a calendar day in
periods (daily entries) and the week (daily block). Periods are Pirate Weather's: morning
04-12, afternoon 12-17, evening 17-22, night 22-04 local time. Period statistics come from one
compiled reduction; the phrase of a combination of statistics is cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from server.areas import forecast_kernels as kernels
from server.areas import forecast_text as text

PERIODS = ("morning", "afternoon", "evening", "night")
PERIOD_MM = 0.2                # a period mentions precipitation from this total
DAY_MM = 1.0                   # a day of the week counts as wet from this total
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass
class Stats:
    """Statistics of consecutive spans of hours (one value per span, Python lists)."""

    total: list[float]         # mm
    peak: list[float]          # mm/h
    probability: list[float]   # highest
    by_kind: list[list[float]]  # mm of rain, snow, sleet
    thunder: list[int]         # highest level
    foggy: list[bool]          # fog or mist half the time or more
    cloud: list[int]           # level of the mean cover
    wind: list[int]            # highest level
    wet_hours: list[int]       # hours with precipitation


class Reducer:
    """Statistics of spans of a point's hours (forecast_kernels.span_stats)."""

    def __init__(self, series):
        self.series = series

    def stats(self, starts, stop: int) -> Stats:
        """Statistics of the spans [starts[i], starts[i + 1]) and [starts[-1], stop)."""
        starts = np.asarray(starts, dtype=np.int64)
        out = np.empty((len(starts), len(kernels.STAT_COLUMNS)))
        kernels.span_stats(starts, int(stop), self.series.rows, self.series.parts, out)
        total, peak, probability = out[:, :3].T.tolist()
        thunder, foggy, cloud, wind, wet = out[:, 6:].astype(np.int64).T.tolist()
        return Stats(total=total, peak=peak, probability=probability,
                     by_kind=out[:, 3:6].tolist(), thunder=thunder,
                     foggy=[bool(f) for f in foggy], cloud=cloud, wind=wind, wet_hours=wet)


def and_chain(items: list):
    """("and", a, ("and", b, c)) for several items; the item itself for one."""
    return items[0] if len(items) == 1 else ("and", items[0], and_chain(items[1:]))


def time_phrase(condition, periods: tuple[int, ...], names: tuple[str, ...]):
    """A condition over some of the periods: for the day, during, until, starting, ..."""
    n, k = len(names), len(periods)
    if k == n:
        return ("for-day", condition)
    if k == 1:
        return ("during", condition, names[periods[0]])
    first, last = periods[0], periods[-1]
    if last - first == k - 1:   # one unbroken stretch
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


def precipitation_condition(by_kind: list[list[float]], peak: float, probability: float):
    """The main kind (by amount) at the strongest rate; "possible" when light or unlikely."""
    amounts = [sum(column) for column in zip(*by_kind)]
    kind = amounts.index(max(amounts)) + 1
    possible = peak < text.SURE_MMH or (probability == probability
                                        and probability < text.SURE_PROBABILITY)
    return text.precipitation_phrase(kind, text.precipitation_level(peak, kind), possible)


def periods_phrase(st: Stats, first: int, names: tuple[str, ...]):
    """One sentence for the len(names) periods of `st` from index `first`."""
    last = first + len(names)
    totals = st.total[first:last]
    wet = tuple(p for p, total in enumerate(totals) if total >= PERIOD_MM)
    condition, thunder = None, False
    if wet:
        chosen = [first + p for p in wet]
        condition = precipitation_condition([st.by_kind[p] for p in chosen],
                                            max(st.peak[p] for p in chosen),
                                            max(st.probability[p] for p in chosen))
        thunder = max(st.thunder[p] for p in chosen) == 2
    foggy = tuple(p for p, fog in enumerate(st.foggy[first:last]) if fog)
    return _periods_phrase(wet, condition, thunder, foggy, tuple(st.cloud[first:last]),
                           tuple(st.wind[first:last]), names)


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
        main = time_phrase(text.SKIES[top],
                           tuple(p for p, level in enumerate(clouds) if level == top), names)
    windy = tuple(p for p, level in enumerate(winds) if level > 0)
    if windy:
        main = ("and", main, time_phrase(text.WINDS[max(winds)], windy, names))
    return ("sentence", main)


def minutely_phrase(rate: np.ndarray, kind: np.ndarray, probability: np.ndarray,
                    current_code: int):
    """The next hour: when precipitation starts or stops (in minutes), else the current
    conditions for the hour."""
    wet = kind > 0
    if not wet.any():
        return ("sentence", ("for-hour", text.phrase(current_code)))
    kinds = list(dict.fromkeys(kind[wet].tolist()))
    peak = float(rate[wet].max())
    if len(kinds) > 2:
        condition = "mixed-precipitation"
    else:
        top = float(np.fmax.reduce(probability[wet]))
        possible = peak < text.SURE_MMH or (top == top and top < text.SURE_PROBABILITY)
        condition = text.precipitation_phrase(
            kinds[0], text.precipitation_level(peak, kinds[0]), possible)
    n = len(rate) - 1                       # 60: minutes after the first
    before = np.concatenate([[False], wet[:-1]])
    starts, ends = np.flatnonzero(wet & ~before), np.flatnonzero(~wet & before)
    start1 = int(starts[0])
    end1 = int(ends[0]) if len(ends) else n
    again = [int(s) for s in starts if s > end1]
    if start1 == 0:
        if end1 >= n:
            return ("sentence", ("for-hour", condition))
        if again:
            return ("sentence", ("stopping-then-starting-later", condition,
                                 ("minutes", end1), ("minutes", again[0] - end1)))
        return ("sentence", ("stopping-in", condition, ("minutes", end1)))
    if end1 >= n:
        return ("sentence", ("starting-in", condition, ("minutes", start1)))
    return ("sentence", ("starting-then-stopping-later", condition, ("minutes", start1),
                         ("minutes", end1 - start1)))


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


def week_phrase(st: Stats, highs: list[float], names: list[str], fahrenheit: bool):
    """The week (`st` holds one span per day): which days it rains or snows, and where the
    highs go."""
    wet = [d for d, total in enumerate(st.total) if total >= DAY_MM]
    if not wet:
        precipitation = ("for-week", "no-precipitation")
    else:
        condition = precipitation_condition([st.by_kind[d] for d in wet],
                                            max(st.peak[d] for d in wet),
                                            max(st.probability[d] for d in wet))
        weekend = [d for d, name in enumerate(names) if name in ("saturday", "sunday")]
        if len(wet) == len(names):
            precipitation = ("for-week", condition)
        elif len(weekend) == 2 and wet == weekend:
            precipitation = ("over-weekend", condition)
        else:
            precipitation = ("during", condition, _days_phrase(wet, names))
    known = [d for d, high in enumerate(highs) if high == high]
    if len(known) < 2:
        return ("sentence", precipitation)
    hi = max(known, key=lambda d: highs[d])
    lo = min(known, key=lambda d: highs[d])
    unit = "fahrenheit" if fahrenheit else "celsius"
    if highs[hi] - highs[lo] < 1.0 or hi not in (known[0], known[-1]):
        trend = ("temperatures-peaking", (unit, round(highs[hi])), names[hi])
    elif hi == known[-1]:
        trend = ("temperatures-rising", (unit, round(highs[hi])), names[hi])
    elif lo == known[-1]:
        trend = ("temperatures-falling", (unit, round(highs[lo])), names[lo])
    else:
        trend = ("temperatures-valleying", (unit, round(highs[lo])), names[lo])
    return ("sentence", ("with", precipitation, trend))
