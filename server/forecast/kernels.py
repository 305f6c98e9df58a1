"""The forecast's per-request loops, compiled with numba.

A response derives and classifies about 200 hours and reduces them over some 40 spans. As
numpy expressions that is several hundred small array operations, whose fixed cost (about a
microsecond each) dominated a response; as compiled loops it is a few microseconds. The
science stays in server/science (the same functions, compiled here); the thresholds stay in
text. Compiled once per machine (cache=True writes next to this file, or to
NUMBA_CACHE_DIR), and warmed by the loader, so no request waits for the compiler.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from contract import Forecast as F
from server.forecast import text
from server.forecast.science import weather
from server.kernels.bilinear import mix

# Input columns, in the order of point_series' `inputs` (-1: absent from the grid).
INPUTS = (
    F.TEMPERATURE,
    F.DEWPOINT,
    F.WIND_U,
    F.WIND_V,
    F.PRESSURE,
    F.CLOUD,
    F.PRECIP,
    F.PRECIP_PROBABILITY,
    F.SNOW,
    F.SLEET,
    F.VISIBILITY,
    F.GUST,
    F.CAPE,
)
# Derived rows (series.ROWS has the same order); SNOW and SLEET are the model's
# shares as read (NaN: unknown), kept so that instants between hours are typed from them.
NROWS = 16
(
    TEMPERATURE,
    APPARENT,
    DEWPOINT,
    HUMIDITY,
    PRESSURE,
    WIND,
    GUST,
    DIRECTION,
    CLOUD,
    VISIBILITY,
    RATE,
    PROBABILITY,
    U,
    V,
    SNOW,
    SLEET,
) = range(NROWS)
# Condition parts (text.RADIX has the same order).
KIND, LEVEL, POSSIBLE, THUNDER, WINDLEVEL, VISCODE, HUMID, SKY = range(8)
# Span statistics columns.
STAT_COLUMNS = (
    "total",
    "peak",
    "probability",
    "rain",
    "snow",
    "sleet",
    "thunder",
    "foggy",
    "cloud",
    "wind",
    "wet_hours",
    "known_hours",
)
# Day aggregate columns.
DAY_COLUMNS = (
    "high",
    "low",
    "humidity",
    "pressure",
    "wind",
    "cloud",
    "u",
    "v",
    "gust",
    "daytime_cloud",
)
(D_HIGH, D_LOW, D_HUMIDITY, D_PRESSURE, D_WIND, D_CLOUD, D_U, D_V, D_GUST, D_DAYTIME_CLOUD) = range(
    len(DAY_COLUMNS)
)
# Local hours marking each day: midnight, period starts (04, 12, 17, 22), and 06/18 for the
# high (06-18) and low (18-06 next morning) of docs/api/forecast.md#daily.
MARK_HOURS = (0, 4, 6, 12, 17, 18, 22)
MIDNIGHT, H04, H06, H12, H17, H18, H22 = range(len(MARK_HOURS))
PERIOD_MARKS = (H04, H12, H17, H22)
# A daily entry's summary covers its calendar day, as its icon, type and total do: morning
# from midnight, afternoon, evening, and night to the next midnight.
DAY_PERIOD_MARKS = (MIDNIGHT, H12, H17, H22)

_relative_humidity = njit(cache=True)(weather.relative_humidity)
_apparent = njit(cache=True)(weather.apparent_temperature_c)
_direction = njit(cache=True)(weather.wind_direction_deg)
_RADIX = text.RADIX
_RAIN, _SNOW, _WIND = text.RAIN_LEVELS, text.SNOW_LEVELS, text.WIND_LEVELS
_CLOUD, _CAPE = text.CLOUD_LEVELS, text.CAPE_LEVELS
_WET, _SURE, _SURE_P = text.WET_MMH, text.SURE_MMH, text.SURE_PROBABILITY
_FOG, _MIST, _FOG_SPREAD, _MIST_SPREAD = (
    text.FOG_M,
    text.MIST_M,
    text.FOG_SPREAD_C,
    text.MIST_SPREAD_C,
)
_DRY, _HUMID, _HUMID_C = text.DRY_HUMIDITY, text.HUMID_HUMIDITY, text.HUMID_MIN_C


@njit(cache=True, nogil=True)
def _count(value, bounds):
    """How many bounds the value reaches (0 for NaN)."""
    n = 0
    for b in bounds:
        if value >= b:
            n += 1
    return n


@njit(cache=True, nogil=True)
def _get(values, i, column):
    return values[i, column] if column >= 0 else np.nan


@njit(cache=True, nogil=True)
def _unit(value):
    """Clipped to [0, 1]; NaN stays NaN."""
    if value < 0.0:
        return 0.0
    if value > 1.0:
        return 1.0
    return value


@njit(cache=True, nogil=True)
def bilinear(values, cell, step, column):
    """The value between four cells (server.kernels.bilinear.mix): cell holds the Corners
    (rows i0, i1, columns j0, j1 and the four weights) as floats."""
    i0, i1, j0, j1 = int(cell[0]), int(cell[1]), int(cell[2]), int(cell[3])
    return mix(
        values[i0, j0, step, column],
        values[i0, j1, step, column],
        values[i1, j0, step, column],
        values[i1, j1, step, column],
        cell[4],
        cell[5],
        cell[6],
        cell[7],
    )


@njit(cache=True, nogil=True)
def window(values, cell, start, out):
    """out[j] = values (every variable) at fractional step start + j, for j < len(out) - 1:
    bilinear in space, linear in time (for zones whose hours start off the UTC hour); NaN
    outside the grid's steps."""
    count, nvar, ntime = out.shape[0] - 1, out.shape[1], values.shape[2]
    i0, i1, j0, j1 = int(cell[0]), int(cell[1]), int(cell[2]), int(cell[3])
    w0, w1, w2, w3 = cell[4], cell[5], cell[6], cell[7]
    c00, c01, c10, c11 = values[i0, j0], values[i0, j1], values[i1, j0], values[i1, j1]
    s0 = int(np.floor(start))
    frac = start - s0
    exact = frac < 1e-9
    rows = count if exact else count + 1
    padded = out if exact else np.empty((rows, nvar))
    for j in range(rows):
        t = s0 + j
        if t < 0 or t >= ntime:
            padded[j, :] = np.nan
            continue
        for v in range(nvar):
            padded[j, v] = mix(c00[t, v], c01[t, v], c10[t, v], c11[t, v], w0, w1, w2, w3)
    if not exact:
        for j in range(count):
            for v in range(nvar):
                out[j, v] = padded[j, v] * (1.0 - frac) + padded[j + 1, v] * frac


@njit(cache=True, nogil=True)
def window_at(values, cell, positions, out):
    """out[j] = values (every variable) at fractional step positions[j]: bilinear in space,
    linear in time; NaN outside the grid's steps (window, for hours not evenly spaced)."""
    nvar, ntime = out.shape[1], values.shape[2]
    i0, i1, j0, j1 = int(cell[0]), int(cell[1]), int(cell[2]), int(cell[3])
    w0, w1, w2, w3 = cell[4], cell[5], cell[6], cell[7]
    c00, c01, c10, c11 = values[i0, j0], values[i0, j1], values[i1, j0], values[i1, j1]
    for j in range(len(positions)):
        s0 = int(np.floor(positions[j]))
        frac = positions[j] - s0
        for v in range(nvar):
            a = np.nan
            if 0 <= s0 < ntime:
                a = mix(c00[s0, v], c01[s0, v], c10[s0, v], c11[s0, v], w0, w1, w2, w3)
            if frac >= 1e-9:
                b = np.nan
                if 0 <= s0 + 1 < ntime:
                    b = mix(
                        c00[s0 + 1, v],
                        c01[s0 + 1, v],
                        c10[s0 + 1, v],
                        c11[s0 + 1, v],
                        w0,
                        w1,
                        w2,
                        w3,
                    )
                a = a * (1.0 - frac) + b * frac
            out[j, v] = a


@njit(cache=True, nogil=True)
def point_series(values, inputs, lift, rows, parts, codes, icons, shown_from, shown_to, around):
    """Derive (rows, SI) and classify (parts, codes, icons) every instant of values (n, nvar).
    The apparent temperature and the wind direction, which only entries show, are derived
    for the instants [shown_from, shown_to) and the last (the present); NaN elsewhere. When
    `around` >= 0 the last instant lies between instants `around` and `around + 1` (the
    hours around the present) and takes the kind of one of them (kind_between)."""
    last = values.shape[0] - 1
    for i in range(values.shape[0]):
        t = _get(values, i, inputs[0]) + lift
        td = _get(values, i, inputs[1]) + lift
        if td > t:
            td = t
        u, v = _get(values, i, inputs[2]), _get(values, i, inputs[3])
        wind = math.hypot(u, v)
        rh = _relative_humidity(t, td)
        cloud = _unit(_get(values, i, inputs[5]))
        rate = _get(values, i, inputs[6])
        if rate < 0.0:
            rate = 0.0
        probability = _unit(_get(values, i, inputs[7]))
        vis = _get(values, i, inputs[10])
        snow, sleet = _get(values, i, inputs[8]), _get(values, i, inputs[9])
        rows[TEMPERATURE, i], rows[DEWPOINT, i], rows[HUMIDITY, i] = t, td, rh
        shown = shown_from <= i < shown_to or i == last
        rows[APPARENT, i] = _apparent(t, rh, wind) if shown else np.nan
        rows[PRESSURE, i] = _get(values, i, inputs[4])
        rows[WIND, i], rows[GUST, i] = wind, _get(values, i, inputs[11])
        rows[DIRECTION, i] = _direction(u, v) if shown else np.nan
        rows[CLOUD, i], rows[VISIBILITY, i] = cloud, vis * 0.001
        rows[RATE, i], rows[PROBABILITY, i], rows[U, i], rows[V, i] = rate, probability, u, v
        rows[SNOW, i], rows[SLEET, i] = snow, sleet
        if i == last and around >= 0:
            kind = kind_between(
                rate, snow, sleet, phase_of(rows, around), phase_of(rows, around + 1)
            )
        else:
            kind = kind_of(rate, snow, sleet)
        _classify(
            i,
            kind,
            rate,
            probability,
            t,
            td,
            rh,
            wind,
            vis,
            cloud,
            _get(values, i, inputs[12]),
            parts,
            codes,
            icons,
        )


@njit(cache=True, nogil=True)
def first_max(rain, snow, sleet):
    """1 rain, 2 snow, 3 sleet: the kind with the largest amount (the first of equals)."""
    if snow > rain and snow >= sleet:
        return 2
    return 3 if sleet > rain and sleet > snow else 1


@njit(cache=True, nogil=True)
def shares(snow, sleet):
    """(rain, snow, sleet) shares of what falls, from the model's snow and sleet shares (NaN
    counts as none)."""
    snow = snow if snow == snow else 0.0
    sleet = sleet if sleet == sleet else 0.0
    return 1.0 - snow - sleet, snow, sleet


@njit(cache=True, nogil=True)
def phase(snow, sleet):
    """What falls (1 rain, 2 snow, 3 sleet) with these shares of snow and sleet: the largest
    share, rain on ties, then snow."""
    rain, snow, sleet = shares(snow, sleet)
    return first_max(rain, snow, sleet)


@njit(cache=True, nogil=True)
def phase_of(rows, i):
    """phase() of instant i of the rows, whether or not anything falls then."""
    return phase(rows[SNOW, i], rows[SLEET, i])


@njit(cache=True, nogil=True)
def kind_of(rate, snow, sleet):
    """An hour's kind (text.KINDS): none below WET_MMH, else its phase."""
    return phase(snow, sleet) if rate >= _WET else 0


@njit(cache=True, nogil=True)
def kind_between(rate, snow, sleet, before, after):
    """The kind of an instant between two hours whose phases are `before` and `after`, from
    its own rate and (interpolated) shares: none below WET_MMH, else the one of the two with
    the larger share then (`before` on ties). Shares interpolated between a sleet hour and a
    snow hour can make rain the largest; what the hours around say is not contradicted."""
    if not rate >= _WET:
        return 0
    if before == after:
        return before
    share = shares(snow, sleet)  # indexed by kind - 1
    return after if share[after - 1] > share[before - 1] else before


@njit(cache=True, nogil=True)
def _classify(i, kind, rate, probability, t, td, rh, wind, vis, cloud, cape, parts, codes, icons):
    """One instant's condition (text's rules, Pirate Weather's thresholds)."""
    level = possible = thunder = 0
    if kind:
        level = 1 + _count(rate, _SNOW if kind == 2 else _RAIN)
        possible = 1 if rate < _SURE or probability < _SURE_P else 0
        thunder = _count(cape, _CAPE)
    wind_level = _count(wind, _WIND)
    spread = t - td
    visibility = 0
    if vis < _MIST:
        if wind_level == 0 and vis < _FOG and spread <= _FOG_SPREAD:
            visibility = 1
        elif wind_level == 0 and spread <= _MIST_SPREAD:
            visibility = 2
        elif spread > _MIST_SPREAD:
            visibility = 3
    humid = 1 if rh < _DRY else (2 if rh > _HUMID and t > _HUMID_C else 0)
    sky = _count(cloud, _CLOUD)
    values = (kind, level, possible, thunder, wind_level, visibility, humid, sky)
    code = 0
    for p in range(8):
        parts[p, i] = values[p]
        code = code * _RADIX[p] + values[p]
    codes[i] = code
    icons[i] = _icon(kind, level, possible, thunder, visibility, sky)


@njit(cache=True, nogil=True)
def _icon(kind, level, possible, thunder, visibility, sky):
    """An instant's icon (index into text.ICON_CODES): what its title names first.
    Thunderstorms (11) whenever named, even with "possible" precipitation; precipitation
    that is sure; else fog or mist; else the sky ("possible" precipitation keeps it)."""
    if kind and thunder == 2:
        return 6
    if kind and not possible:
        return 7 if kind >= 2 else (4 if level == 1 or sky < 3 else 5)
    if visibility:
        return 8
    return min(sky, 3)


@njit(cache=True, nogil=True)
def span_stats(starts, stop, rows, parts, out):
    """Statistics (STAT_COLUMNS) of the spans [starts[s], starts[s + 1]) and
    [starts[-1], stop) into out (len(starts), len(STAT_COLUMNS))."""
    n = len(starts)
    for s in range(n):
        a, b = starts[s], starts[s + 1] if s + 1 < n else stop
        total = peak = top = rain = snow = sleet = cloud_sum = 0.0
        thunder = foggy = cloud_n = wind = wet = known = 0
        for i in range(a, b):
            rate, cloud = rows[RATE, i], rows[CLOUD, i]
            if rate == rate or cloud == cloud:
                known += 1
            if rate == rate:
                total += rate
                peak = max(peak, rate)
                kind = parts[KIND, i]
                if kind == 1:
                    rain += rate
                elif kind == 2:
                    snow += rate
                elif kind == 3:
                    sleet += rate
            probability = rows[PROBABILITY, i]
            if probability == probability:
                top = max(top, probability)
            thunder = max(thunder, parts[THUNDER, i])
            wind = max(wind, parts[WINDLEVEL, i])
            if parts[VISCODE, i] == 1 or parts[VISCODE, i] == 2:
                foggy += 1
            if parts[KIND, i] > 0:
                wet += 1
            if cloud == cloud:
                cloud_sum += cloud
                cloud_n += 1
        mean_cloud = cloud_sum / cloud_n if cloud_n else 0.0
        row = (
            total,
            peak,
            top,
            rain,
            snow,
            sleet,
            float(thunder),
            1.0 if 2 * foggy >= b - a else 0.0,
            float(_count(mean_cloud, _CLOUD)),
            float(wind),
            float(wet),
            float(known),
        )
        for c in range(len(row)):
            out[s, c] = row[c]


@njit(cache=True, nogil=True)
def _mean(row, a, b):
    total, n = 0.0, 0
    for i in range(a, b):
        if row[i] == row[i]:
            total += row[i]
            n += 1
    return total / n if n else np.nan


@njit(cache=True, nogil=True)
def day_aggregates(midnight, six, eighteen, rows, out):
    """Per local day d (DAY_COLUMNS): high over [six[d], eighteen[d]), low over
    [eighteen[d], six[d + 1]), means and the highest gust over [midnight[d], midnight[d + 1]),
    mean cloud over [six[d], eighteen[d]). NaN where nothing is known."""
    for d in range(len(midnight) - 1):
        high, low, gust = -np.inf, np.inf, -np.inf
        for i in range(six[d], eighteen[d]):
            if rows[TEMPERATURE, i] > high:
                high = rows[TEMPERATURE, i]
        for i in range(eighteen[d], six[d + 1]):
            if rows[TEMPERATURE, i] < low:
                low = rows[TEMPERATURE, i]
        for i in range(midnight[d], midnight[d + 1]):
            if rows[GUST, i] > gust:
                gust = rows[GUST, i]
        a, b = midnight[d], midnight[d + 1]
        out[d, D_HIGH] = high if high > -np.inf else np.nan
        out[d, D_LOW] = low if low < np.inf else np.nan
        out[d, D_HUMIDITY] = _mean(rows[HUMIDITY], a, b)
        out[d, D_PRESSURE] = _mean(rows[PRESSURE], a, b)
        out[d, D_WIND] = _mean(rows[WIND], a, b)
        out[d, D_CLOUD] = _mean(rows[CLOUD], a, b)
        out[d, D_U] = _mean(rows[U], a, b)
        out[d, D_V] = _mean(rows[V], a, b)
        out[d, D_GUST] = gust if gust > -np.inf else np.nan
        out[d, D_DAYTIME_CLOUD] = _mean(rows[CLOUD], six[d], eighteen[d])
