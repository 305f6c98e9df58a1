"""The facts a summary or icon is made of, decided by compiled code as small integers.

A summary has two layers: numbers to facts (which periods are wet, the main kind of
precipitation and its level, the foggy periods, cloud and wind levels, when rain starts and
stops, which day is warmest), here; facts to a structured phrase, in summary, cached
per facts and language. A response thus reduces its hours in one compiled pass and renders
only the phrases it has not seen before. Facts rows hold FACTS integers (unused ones zero).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from server.forecast import kernels, text

FACTS = 20
# Facts rows: the phrase's shape first, then its facts.
PERIODS, WEEK, MINUTELY, CODE_FOR_HOUR, CODE_SENTENCE = range(1, 6)
# Period facts: n, wet mask, kind, level, possible, thunder, foggy mask, names (0 for
# summary.PERIODS, else the marks of next_day_periods), then the cloud levels
# from CLOUDS and the wind levels from WINDS (one per period, at most MAX_PERIODS).
MAX_PERIODS = 5
(P_N, P_WET, P_KIND, P_LEVEL, P_POSSIBLE, P_THUNDER, P_FOG, P_NAMES) = range(1, 9)
CLOUDS, WINDS = 9, 9 + MAX_PERIODS
P_FIRST = WINDS + MAX_PERIODS  # names 0: the first period's index into PERIODS
# Statistics columns (kernels.STAT_COLUMNS).
(
    S_TOTAL,
    S_PEAK,
    S_PROBABILITY,
    S_RAIN,
    S_SNOW,
    S_SLEET,
    S_THUNDER,
    S_FOGGY,
    S_CLOUD,
    S_WIND,
    S_WET,
    S_KNOWN,
) = range(len(kernels.STAT_COLUMNS))
# Week facts: wet mask, kind, level, possible, weekday of today, °F, trend, its day, its
# rounded high. Trends: none (fewer than two known highs), peaking, rising, falling, valleying.
W_WET, W_KIND, W_LEVEL, W_POSSIBLE, W_WEEKDAY, W_FAHRENHEIT, W_TREND, W_DAY, W_HIGH = range(1, 10)
TREND_NONE, TREND_PEAKING, TREND_RISING, TREND_FALLING, TREND_VALLEYING = range(5)
# Minutely facts: case, kind (0: mixed precipitation), level, possible, two minute counts.
M_CASE, M_KIND, M_LEVEL, M_POSSIBLE, M_A, M_B = range(1, 7)
(DRY_HOUR, WET_HOUR, STOPPING, STOPPING_THEN_STARTING, STARTING, STARTING_THEN_STOPPING) = range(6)
# Condition-code facts (CODE_FOR_HOUR, CODE_SENTENCE): the code.
C_CODE = 1
PERIOD_MM = 0.2  # a period counts as wet (is summarised as such) from this total
MIXED = 0  # kind: a second kind has MIXED_SHARE of the amount or more
SLEET = 3  # text.KINDS: the type of a mixed day
MIXED_SHARE = 0.25

_RAIN, _SNOW = text.RAIN_LEVELS, text.SNOW_LEVELS
_SURE, _SURE_P, _WET = text.SURE_MMH, text.SURE_PROBABILITY, text.WET_MMH
# Icon indexes (text.ICON_CODES) and their severity (ties of dominant()).
_SEVERITY = np.array([text.SEVERITY[code] for code in text.ICON_CODES], dtype=np.int64)
I_SHOWERS, I_RAIN, I_THUNDER, I_SNOW, I_FOG = (
    text.ICON_CODES.index(c) for c in ("09", "10", "11", "13", "50")
)


@njit(cache=True, nogil=True)
def level(rate, kind):
    """1 very light, 2 light, 3 medium, 4 heavy (snow on its own scale)."""
    return 1 + kernels._count(rate, _SNOW if kind == 2 else _RAIN)


@njit(cache=True, nogil=True)
def main_kind(rain, snow, sleet):
    """The kind a summary names: the main one by amount (the first of equal amounts), or
    MIXED when a second kind is sizeable."""
    total = rain + snow + sleet
    second = total - max(rain, snow, sleet) - min(rain, snow, sleet)
    if total > 0 and second >= MIXED_SHARE * total:
        return MIXED
    return kernels.first_max(rain, snow, sleet)


@njit(cache=True, nogil=True)
def condition(rain, snow, sleet, peak, probability):
    """(kind, level, possible) of precipitation: main_kind, its level at the strongest rate,
    "possible" when light or unlikely."""
    kind = main_kind(rain, snow, sleet)
    possible = peak < _SURE or (probability == probability and probability < _SURE_P)
    return kind, level(peak, kind), 1 if possible else 0


@njit(cache=True, nogil=True)
def period_facts(stats, first, n, names, out):
    """Facts of the n periods stats[first:first + n] (summary.periods_phrase_of)."""
    out[:] = 0
    out[0] = PERIODS
    wet = fog = thunder = 0
    rain = snow = sleet = peak = top = 0.0
    for p in range(n):
        row = stats[first + p]
        if row[S_TOTAL] >= PERIOD_MM:
            wet |= 1 << p
            rain, snow, sleet = rain + row[S_RAIN], snow + row[S_SNOW], sleet + row[S_SLEET]
            peak, top = max(peak, row[S_PEAK]), max(top, row[S_PROBABILITY])
            thunder = max(thunder, int(row[S_THUNDER]))
        if row[S_FOGGY]:
            fog |= 1 << p
        out[CLOUDS + p], out[WINDS + p] = int(row[S_CLOUD]), int(row[S_WIND])
    out[P_N], out[P_WET], out[P_FOG], out[P_NAMES] = n, wet, fog, names
    if wet:
        out[P_KIND], out[P_LEVEL], out[P_POSSIBLE] = condition(rain, snow, sleet, peak, top)
        out[P_THUNDER] = 1 if thunder == 2 else 0


@njit(cache=True, nogil=True)
def day_facts(stats, first, out):
    """period_facts() of a calendar day's four periods stats[first:first + 4], over those
    that have data: hours before the forecast begins are unknown, not clear and dry."""
    a, b = 0, 4
    while a < b and stats[first + a, S_KNOWN] == 0:
        a += 1
    while b > a and stats[first + b - 1, S_KNOWN] == 0:
        b -= 1
    if a == b:
        a, b = 0, 4
    period_facts(stats, first + a, b - a, 0, out)
    out[P_FIRST] = a


@njit(cache=True, nogil=True)
def next_day_periods(mi, start, stop, starts):
    """The periods of the 24 hours from `start` (ending at `stop`): their starts (into
    `starts`), their count and which marks begin them (a mask of j, see name_index). The
    night that began yesterday evening counts as tonight; the window ends early rather than
    name a period twice (the last period's statistics then run to `stop`)."""
    bounds = np.empty(13, dtype=np.int64)
    bounds[0] = -(10**9)
    for d in range(3):
        for p in range(4):
            bounds[1 + 4 * d + p] = mi[d, kernels.PERIOD_MARKS[p]]
    n = names = marks = 0
    for j in range(12):
        a, b = max(bounds[j], start), min(bounds[j + 1], stop)
        if b <= a:
            continue
        name = name_index(j)
        if names & (1 << name):
            break
        names |= 1 << name
        marks |= 1 << j
        starts[n] = a
        n += 1
    return n, marks


@njit(cache=True, nogil=True)
def name_index(j):
    """Index into summary.NEXT_DAY_NAMES (today-morning .. today-night,
    tomorrow-morning .. tomorrow-night) of the period that mark j of next_day_periods begins:
    0 yesterday's night, then each day's morning, afternoon, evening and night."""
    return 3 if j == 0 else (0 if j <= 4 else 4) + (j - 1) % 4


@njit(cache=True, nogil=True)
def day_kind(stats, first):
    """A day's precipitation type (text.KINDS) from its four periods
    stats[first:first + 4]: the kind its summary names for the periods it calls wet
    (PERIOD_MM), sleet when that is mixed precipitation (Dark Sky's sleet includes a wintry
    mix; the icon is 13 either way), none when it calls none wet (a trace is reported,
    untyped, as hours below WET_MMH are)."""
    wet = False
    rain = snow = sleet = 0.0
    for q in range(4):
        row = stats[first + q]
        if row[S_TOTAL] >= PERIOD_MM:
            wet = True
            rain, snow, sleet = rain + row[S_RAIN], snow + row[S_SNOW], sleet + row[S_SLEET]
    if not wet:
        return 0
    kind = main_kind(rain, snow, sleet)
    return SLEET if kind == MIXED else kind


@njit(cache=True, nogil=True)
def week_facts(stats, highs, served, wet_days, weekday, fahrenheit, out):
    """Facts of the week (one stats row per day; `highs` in °C, `served` as served, NaN when
    unknown); the wet days are those whose own summary mentions precipitation (wet_days[d] > 0,
    day_kind). Where the highs go is read in °C, so that it is the same in every unit system
    (rounded °F and °C highs differ in their ties and at the 1 °C step)."""
    out[:] = 0
    out[0], out[W_FAHRENHEIT] = WEEK, fahrenheit
    days = stats.shape[0]
    wet = 0
    rain = snow = sleet = peak = top = 0.0
    for d in range(days):
        row = stats[d]
        if wet_days[d] > 0:
            wet |= 1 << d
            rain, snow, sleet = rain + row[S_RAIN], snow + row[S_SNOW], sleet + row[S_SLEET]
            peak, top = max(peak, row[S_PEAK]), max(top, row[S_PROBABILITY])
    out[W_WET], out[W_WEEKDAY] = wet, weekday
    if wet:
        out[W_KIND], out[W_LEVEL], out[W_POSSIBLE] = condition(rain, snow, sleet, peak, top)
    first = last = hi = lo = -1
    for d in range(days):
        if highs[d] == highs[d]:
            if first < 0:
                first = hi = lo = d
            last = d
            if highs[d] > highs[hi]:
                hi = d
            if highs[d] < highs[lo]:
                lo = d
    if first < 0 or first == last:
        out[W_TREND] = TREND_NONE
    elif highs[hi] - highs[lo] < 1.0 or (hi != first and hi != last):
        out[W_TREND], out[W_DAY] = TREND_PEAKING, hi
    elif hi == last:
        out[W_TREND], out[W_DAY] = TREND_RISING, hi
    elif lo == last:
        out[W_TREND], out[W_DAY] = TREND_FALLING, lo
    else:
        out[W_TREND], out[W_DAY] = TREND_VALLEYING, lo
    if out[W_TREND] != TREND_NONE:
        out[W_HIGH] = round(served[out[W_DAY]])


@njit(cache=True, nogil=True)
def minutely_facts(rate, kind, probability, out):
    """Facts of the next hour: when precipitation starts or stops (minutes after the first),
    and what falls (the main kind by amount, or mixed, as for periods); DRY_HOUR when nothing
    does."""
    out[:] = 0
    out[0] = MINUTELY
    n = len(rate) - 1
    amounts = np.zeros(4)
    peak, top = -np.inf, np.nan
    start1 = end1 = again = -1
    for i in range(n + 1):
        wet = kind[i] > 0
        if wet:
            amounts[kind[i]] += rate[i]
            peak = max(peak, rate[i])
            if probability[i] == probability[i] and not probability[i] <= top:
                top = probability[i]
        before = i > 0 and kind[i - 1] > 0
        if wet and not before:
            if start1 < 0:
                start1 = i
            elif end1 >= 0 and again < 0:
                again = i
        if before and not wet and end1 < 0:
            end1 = i
    if start1 < 0:
        out[M_CASE] = DRY_HOUR
        return
    out[M_KIND], out[M_LEVEL], out[M_POSSIBLE] = condition(
        amounts[1], amounts[2], amounts[3], peak, top
    )
    if end1 < 0:
        end1 = n
    _minutely_case(start1, end1, again, n, out)


@njit(cache=True, nogil=True)
def _minutely_case(start1, end1, again, n, out):
    if start1 == 0:
        if end1 >= n:
            out[M_CASE] = WET_HOUR
        elif again >= 0:
            out[M_CASE], out[M_A], out[M_B] = STOPPING_THEN_STARTING, end1, again - end1
        else:
            out[M_CASE], out[M_A] = STOPPING, end1
    elif end1 >= n:
        out[M_CASE], out[M_A] = STARTING, start1
    else:
        out[M_CASE], out[M_A], out[M_B] = STARTING_THEN_STOPPING, start1, end1 - start1


@njit(cache=True, nogil=True)
def dominant(counts):
    """The icon index with the highest count; ties go to the more severe."""
    best = 0
    for i in range(1, len(counts)):
        if (counts[i], _SEVERITY[i]) > (counts[best], _SEVERITY[best]):
            best = i
    return best


@njit(cache=True, nogil=True)
def summary_icon(facts, otherwise):
    """The icon of the condition a block's summary names (Dark Sky's rule: a block's icon
    is its summary's): the precipitation it names (with thunder: 11), else fog, else the
    cloudiest sky it names; `otherwise` when it names none (the sentence of a condition
    code, whose icon the caller has, or a week without precipitation)."""
    shape = facts[0]
    if shape == PERIODS:
        if facts[P_WET]:
            return (
                I_THUNDER if facts[P_THUNDER] else precipitation_icon(facts[P_KIND], facts[P_LEVEL])
            )
        if facts[P_FOG]:
            return I_FOG
        top = 0
        for p in range(facts[P_N]):
            top = max(top, facts[CLOUDS + p])
        return min(top, 3)  # as an hour's sky: 04 for broken and overcast alike
    if shape == WEEK and facts[W_WET]:
        return precipitation_icon(facts[W_KIND], facts[W_LEVEL])
    if shape == MINUTELY and facts[M_CASE] != DRY_HOUR:
        return precipitation_icon(facts[M_KIND], facts[M_LEVEL])
    return otherwise


@njit(cache=True, nogil=True)
def precipitation_icon(kind, level):
    """Icon of named precipitation (a facts row's kind and level): 13 snow, sleet or a mix,
    09 drizzle (very light rain), else 10 rain. "Possible" precipitation keeps its icon: the
    summary names it."""
    if kind != 1:
        return I_SNOW
    return I_SHOWERS if level <= 1 else I_RAIN


@njit(cache=True, nogil=True)
def day_icon(facts, daytime_cloud, cloud):
    """A day's icon: the precipitation or fog its summary names (`facts`, from day_facts), as a
    block's icon is its summary's; else the mean cloud from 06 to 18, or of the whole day when
    those hours are unknown (NaN: before the run)."""
    if facts[P_WET] or facts[P_FOG]:
        return summary_icon(facts, I_FOG)
    if daytime_cloud != daytime_cloud:
        daytime_cloud = cloud
    return min(kernels._count(daytime_cloud, text.CLOUD_LEVELS), 3)
