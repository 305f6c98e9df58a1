"""The forecast's blocks (currently, minutely, hourly, daily) in one compiled call: the point's
series read (bilinear) and derived, reduced to days and periods, and written as JSON.

Summaries are left as holes holding their facts (facts), which Python turns into
rendered text from its caches; condition titles are read from a per-language table of
pre-rendered JSON strings (forecast_titles). Everything is computed in SI on the local hours
from today's local midnight (`t0`) plus one row for the present moment, and converted only
when written. The same rules as before this was compiled (tests pin the answers).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from contract import DAY_S, HOUR_S
from server.forecast import facts, jsonbytes, kernels, series, text
from server.forecast.science import sun

DAYS, MINUTES = 7, 61
MODEL_HOURS = 3  # the model's hours the next 61 minutes can reach, from the present's
LAPSE_C_PER_M = 0.0065  # standard atmosphere: 6.5 K per km
# Scalar parameters, one float64 array: point, now, the data's first and last hour, hours of
# the hourly block, the gazetteer's elevation (and whether there is one), blocks wanted, the
# unit system's precipitation factor and °F, today's weekday, the first time of the sun table;
# then the point's Corners in the hourly block and in the static grid (blocks.Point: rows i0,
# i1, columns j0, j1, four weights). An array, not a record: compiled code takes it whole.
(
    P_LAT,
    P_LON,
    P_NOW,
    P_FIRST_S,
    P_LAST_S,
    P_HOURS,
    P_ELEVATION,
    P_ELEVATION_KNOWN,
    P_BLOCKS,
    P_PRECIPITATION,
    P_FAHRENHEIT,
    P_WEEKDAY,
    P_SUN_T0,
) = range(13)
CELL, STATIC_CELL = 13, 21
NPARAMS = 29
# The sun's position (declination, equation of time) depends on the time alone: a data
# version tabulates it every SUN_STEP_S (local hours fall on these in every zone).
SUN_STEP_S = 900
CURRENTLY, MINUTELY, HOURLY, DAILY = 1, 2, 4, 8
DIGITS = np.array([series.DIGITS[r] for r in range(kernels.NROWS)], dtype=np.int64)
DAY_TOTAL_DIGITS = 2  # a day's precipitation as gauges report it: 0.01 mm or in
# currently and hourly entries: these rows, in this order, then windDirection.
POINT_ROWS = np.array(
    [
        series.TEMPERATURE,
        series.APPARENT,
        series.DEWPOINT,
        series.HUMIDITY,
        series.PRESSURE,
        series.WIND,
        series.GUST,
        series.CLOUD,
        series.VISIBILITY,
        series.RATE,
        series.PROBABILITY,
    ]
)


def sun_table(first_s: float, last_s: float) -> tuple[float, np.ndarray]:
    """(t0, rows of declination and equation of time every SUN_STEP_S from t0) around
    [first_s, last_s], a day either side."""
    t0 = (first_s - DAY_S) // SUN_STEP_S * SUN_STEP_S
    times = np.arange(t0, last_s + DAY_S + SUN_STEP_S, SUN_STEP_S, dtype=np.float64)
    return float(t0), np.ascontiguousarray(np.column_stack(sun.position(times)))


@njit(cache=True, nogil=True)
def is_day(t, lat, lon, suns, t0):
    """sun.is_day(t, lat, lon), the sun's position taken from the table when t is on it."""
    step = (t - t0) / SUN_STEP_S
    i = int(step)
    if step >= 0 and step == i and i < suns.shape[0]:
        return sun.altitude_at(t, lat, lon, suns[i, 0], suns[i, 1]) > sun.HORIZON_DEG
    return sun.is_day(t, lat, lon)


def _table(items: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings end to end (bytes) and where each starts (the last entry: the end)."""
    data = [item.encode() for item in items]
    starts = np.cumsum([0] + [len(d) for d in data]).astype(np.int64)
    return np.frombuffer(b"".join(data), dtype=np.uint8), starts


def _keys(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """'{"a":', ',"b":', ... for an object's keys in order."""
    return _table([("{" if i == 0 else ",") + f'"{name}":' for i, name in enumerate(names)])


POINT_KEYS, POINT_AT = _keys(
    (
        "time",
        "summary",
        "icon",
        "is_day",
        "temperature",
        "apparentTemperature",
        "dewPoint",
        "humidity",
        "pressure",
        "windSpeed",
        "windGust",
        "cloudCover",
        "visibility",
        "precipitation",
        "precipitationProbability",
        "windDirection",
        "precipitationType",
    )
)
DAY_KEYS, DAY_AT = _keys(
    (
        "time",
        "summary",
        "icon",
        "is_day",
        "temperatureHigh",
        "temperatureLow",
        "humidity",
        "pressure",
        "windSpeed",
        "windGust",
        "windDirection",
        "cloudCover",
        "precipitation",
        "precipitationProbability",
        "precipitationType",
        "sunriseTime",
        "sunsetTime",
        "moonPhase",
    )
)
MINUTE_KEYS, MINUTE_AT = _keys(
    ("time", "precipitation", "precipitationProbability", "precipitationType")
)
BLOCK_KEYS, BLOCK_AT = _table(
    [
        ',"currently":',
        ',"minutely":',
        ',"hourly":',
        ',"daily":',
        '{"summary":',
        ',"icon":',
        ',"data":[',
        "]}",
    ]
)
ICONS, ICONS_AT = _table([f'"{code}{suffix}"' for code in text.ICON_CODES for suffix in "dn"])
# Last, the type of an instant whose precipitation is unknown (null, not "none").
KINDS, KINDS_AT = _table([f'"{kind}"' for kind in text.KINDS] + ["null"])
KIND_UNKNOWN = len(text.KINDS)
CURRENTLY_KEY, MINUTELY_KEY, HOURLY_KEY, DAILY_KEY, SUMMARY_KEY, ICON_KEY, DATA_KEY, END = range(8)


@njit(cache=True, nogil=True, inline="always")
def _put(o, n, table, starts, i):
    """Entry i of a table."""
    return jsonbytes.put_slice(o, n, table, starts[i], starts[i + 1])


@njit(cache=True, nogil=True, inline="always")
def _comma(o, n, first):
    if not first:
        o[0][n] = 44
        return n + 1
    return n


@njit(cache=True, nogil=True, inline="always")
def _close(o, n):
    o[0][n] = 125  # }
    return n + 1


@njit(cache=True, nogil=True)
def hour_of(t, t0, shift):
    """Index of the local hour holding t (hour i starts at t0 + i hours + shift[i])."""
    i = int((t - t0) // HOUR_S)
    if 0 < i < len(shift) and t < t0 + i * HOUR_S + shift[i]:
        i -= 1
    return i


@njit(cache=True, nogil=True)
def position(t, t0, shift):
    """t as a fractional index on the local hours (t0 + i hours + shift[i])."""
    i = hour_of(t, t0, shift)
    start = t0 + i * HOUR_S + shift[i]
    return i + (t - start) / (HOUR_S + shift[i + 1] - shift[i])


@njit(cache=True, nogil=True)
def respond(values, static, p, marks, mi, shift, moon, suns, conv, inputs, titles, o):
    """Write the wanted blocks (P_BLOCKS) into o; return the bytes written, or -1 when
    condition titles are missing from `titles` (their codes then fill o[1][1:, 0], their
    count o[1][0, 0]). o[2][0] receives the elevation the response reports (m)."""
    o[1][0, 0] = o[1][0, 1] = 0
    now = p[P_NOW]
    t0 = marks[0, kernels.MIDNIGHT]
    h0 = hour_of(now, t0, shift)
    hours = int(p[P_HOURS])
    end = max(marks[DAYS, kernels.H06], t0 + (h0 + hours) * HOUR_S)
    count = int((end - t0) // HOUR_S) + 1
    valid = min(count, int((p[P_LAST_S] - t0) // HOUR_S) + 1)
    if valid > 0 and t0 + (valid - 1) * HOUR_S + shift[valid - 1] > p[P_LAST_S]:
        valid -= 1  # after a half-hour change the last hour can start past the data's end
    stop = min(h0 + hours, valid)
    blocks = int(p[P_BLOCKS])
    shown = stop if blocks & HOURLY else h0
    lift = _lift(static, p, o)
    s = _series(values, p, t0, shift, count, h0, shown, inputs, lift)
    # The minutes lie between the model's own hours: the local ones where they are those.
    hours, hours_t0, hours_shift, hours_count = s, t0, shift, count
    if not _on_model_hours(p, t0, shift, count):
        hours_t0 = p[P_FIRST_S] + (now - p[P_FIRST_S]) // HOUR_S * HOUR_S
        hours = _model_hours(values, p, hours_t0, inputs, lift, s)
        hours_shift, hours_count = np.zeros(MODEL_HOURS + 1), MODEL_HOURS
    if _missing_titles(o, titles[0], s[2], count, h0, stop, blocks):
        return -1
    day_now = sun.is_day(now, p[P_LAT], p[P_LON])
    n = 0
    if blocks & CURRENTLY:
        n = _put(o, n, BLOCK_KEYS, BLOCK_AT, CURRENTLY_KEY)
        n = _point(o, n, int(now), day_now, s, count, conv, titles)
    if blocks & MINUTELY:
        n = _minutely(o, n, p, hours_t0, hours_shift, hours_count, day_now, s, hours)
    if blocks & HOURLY:
        n = _hourly(
            o, n, p, t0, shift, h0, stop, min(h0 + 24, valid), mi, suns, day_now, s, conv, titles
        )
    if blocks & DAILY:
        n = _daily(o, n, p, marks, mi, moon, s, conv)
    return n


@njit(cache=True, nogil=True)
def _lift(static, p, o):
    """The temperature correction (°C) from the model's orography to the gazetteer's elevation
    of the point, when it has one; o[2][0] receives the elevation the response reports."""
    orography = kernels.bilinear(static, p[STATIC_CELL : STATIC_CELL + 8], 0, 0)
    gazetteer = p[P_ELEVATION_KNOWN] > 0
    o[2][0] = p[P_ELEVATION] if gazetteer else orography
    return (
        (orography - p[P_ELEVATION]) * LAPSE_C_PER_M
        if gazetteer and orography == orography
        else 0.0
    )


@njit(cache=True, nogil=True)
def _series(values, p, t0, shift, count, h0, shown_to, inputs, lift):
    """(rows, parts, codes, icons) of the local hours from t0 and, last, the present, which
    lies in hour h0 (the apparent temperature and wind direction only for the hours shown,
    [h0, shown_to), and the present)."""
    vals = np.empty((count + 1, values.shape[3]))
    now = np.array([(p[P_NOW] - p[P_FIRST_S]) / HOUR_S])
    if shift[:count].any():  # hours not evenly spaced: each read at its own time
        at = np.empty(count)
        for j in range(count):
            at[j] = (t0 + j * HOUR_S + shift[j] - p[P_FIRST_S]) / HOUR_S
        kernels.window_at(values, p[CELL : CELL + 8], at, vals[:count])
    else:
        kernels.window(values, p[CELL : CELL + 8], (t0 - p[P_FIRST_S]) / HOUR_S, vals)
    # The present between the model's own hours: where local hours fall between those (a
    # zone at +5:30), between two local hours would be interpolated twice.
    kernels.window_at(values, p[CELL : CELL + 8], now, vals[count:])
    n = count + 1
    rows, parts = np.empty((kernels.NROWS, n)), np.empty((8, n), dtype=np.int64)
    codes, icons = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    # The present is typed as a minute is (minute_kind): between its hours, never against both.
    kernels.point_series(
        vals, inputs, lift, rows, parts, codes, icons, h0, shown_to, min(h0, count - 2)
    )
    return rows, parts, codes, icons


@njit(cache=True, nogil=True)
def _missing_titles(o, slot, codes, count, h0, stop, blocks):
    """Note the condition codes the response needs whose titles are not in `slot`."""
    holes, missing = o[1], 0
    if blocks & CURRENTLY and slot[codes[count]] < 0:
        missing += 1
        holes[missing, 0] = codes[count]
    if blocks & HOURLY:
        for i in range(h0, stop):
            if slot[codes[i]] < 0:
                missing += 1
                holes[missing, 0] = codes[i]
    holes[0, 0] = missing
    return missing > 0


@njit(cache=True, nogil=True)
def _point(o, n, time, day, s, i, conv, titles):
    """A currently or hourly entry: instant i of the series."""
    rows, parts, codes, icons = s
    n = _put(o, n, POINT_KEYS, POINT_AT, 0)
    n = jsonbytes.put_int(o, n, time)
    n = _put(o, n, POINT_KEYS, POINT_AT, 1)
    slot, starts, pool = titles
    n = jsonbytes.put_slice(o, n, pool, starts[slot[codes[i]]], starts[slot[codes[i]] + 1])
    n = _put(o, n, POINT_KEYS, POINT_AT, 2)
    n = _put(o, n, ICONS, ICONS_AT, 2 * icons[i] + (0 if day else 1))
    n = _put(o, n, POINT_KEYS, POINT_AT, 3)
    n = jsonbytes.put_bool(o, n, day)
    for f in range(len(POINT_ROWS)):
        r = POINT_ROWS[f]
        n = _put(o, n, POINT_KEYS, POINT_AT, 4 + f)
        value = rows[r, i]
        if value > conv[2, r]:  # NaN stays NaN
            value = conv[2, r]
        n = jsonbytes.put_number(o, n, value, conv[0, r], conv[1, r], DIGITS[r])
    n = _put(o, n, POINT_KEYS, POINT_AT, 15)
    n = jsonbytes.put_whole(o, n, _bearing(rows[kernels.DIRECTION, i], rows[kernels.WIND, i], conv))
    n = _put(o, n, POINT_KEYS, POINT_AT, 16)
    n = _put(o, n, KINDS, KINDS_AT, _kind(parts[kernels.KIND, i], rows[kernels.RATE, i]))
    return _close(o, n)


@njit(cache=True, nogil=True, inline="always")
def _kind(kind, rate):
    """The type written for an instant: KIND_UNKNOWN when its precipitation is."""
    return kind if rate == rate else KIND_UNKNOWN


@njit(cache=True, nogil=True, inline="always")
def _bearing(direction, speed, conv):
    """The wind's direction, NaN (null) when its speed as written is 0: a calm comes from no
    direction (Dark Sky's windBearing is undefined then)."""
    digits = DIGITS[kernels.WIND]
    if (
        np.rint((speed * conv[0, kernels.WIND] + conv[1, kernels.WIND]) * jsonbytes.SCALE[digits])
        == 0.0
    ):
        return np.nan
    return direction


@njit(cache=True, nogil=True)
def _block_head(o, n, key, row, icon, day):
    """',"<block>":{"summary":<hole>,"icon":"<icon>","data":['."""
    n = _put(o, n, BLOCK_KEYS, BLOCK_AT, key)
    n = _put(o, n, BLOCK_KEYS, BLOCK_AT, SUMMARY_KEY)
    n = jsonbytes.hole_text(o, n, row)
    n = _put(o, n, BLOCK_KEYS, BLOCK_AT, ICON_KEY)
    n = _put(o, n, ICONS, ICONS_AT, 2 * icon + (0 if day else 1))
    return _put(o, n, BLOCK_KEYS, BLOCK_AT, DATA_KEY)


@njit(cache=True, nogil=True)
def interp(x, fp, count):
    """numpy.interp(x, arange(count), fp[:count]), step for step (NaN handling included)."""
    if x != x:
        return x
    if x < 0.0:
        return fp[0]
    if x > count - 1:
        return fp[count - 1]
    j = int(x)
    if j == count - 1 or j == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / ((j + 1.0) - j)
    value = slope * (x - j) + fp[j]
    if value != value:
        value = slope * (x - (j + 1.0)) + fp[j + 1]
        if value != value and fp[j] == fp[j + 1]:
            value = fp[j]
    return value


@njit(cache=True, nogil=True)
def _on_model_hours(p, t0, shift, count):
    """True when every local hour from t0 starts on one of the model's hours."""
    if (t0 - p[P_FIRST_S]) % HOUR_S != 0:
        return False
    for j in range(count):  # mostly no shift: a float modulo each would cost microseconds
        if shift[j] != 0.0 and shift[j] % HOUR_S != 0:
            return False
    return True


@njit(cache=True, nogil=True)
def _model_hours(values, p, first, inputs, lift, s):
    """(rows, parts, codes, icons) of MODEL_HOURS of the model's own hours from `first`, the
    first holding the present, and last the present; which also replaces the present of the
    local series `s` (last there too): its precipitation is typed between its model hours, as
    the minutes after it are, not between two local hours that are themselves in between."""
    n = MODEL_HOURS + 1
    at = np.empty(n)
    for j in range(MODEL_HOURS):
        at[j] = (first - p[P_FIRST_S]) / HOUR_S + j
    at[MODEL_HOURS] = (p[P_NOW] - p[P_FIRST_S]) / HOUR_S
    vals = np.empty((n, values.shape[3]))
    kernels.window_at(values, p[CELL : CELL + 8], at, vals)
    rows, parts = np.empty((kernels.NROWS, n)), np.empty((8, n), dtype=np.int64)
    codes, icons = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    kernels.point_series(vals, inputs, lift, rows, parts, codes, icons, 0, 0, 0)
    local_rows, local_parts, local_codes, local_icons = s
    now = local_rows.shape[1] - 1
    local_rows[:, now], local_parts[:, now] = rows[:, MODEL_HOURS], parts[:, MODEL_HOURS]
    local_codes[now], local_icons[now] = codes[MODEL_HOURS], icons[MODEL_HOURS]
    return rows, parts, codes, icons


@njit(cache=True, nogil=True)
def _minutely(o, n, p, t0, shift, count, day_now, s, hours):
    """The next 61 minutes (from the current one), interpolated in time between the first
    `count` of `hours` (hour i starting at t0 + i hours + shift[i]): the model's own hours."""
    rows, parts, codes, icons = s
    first = p[P_NOW] // 60 * 60
    rate, probability = np.empty(MINUTES), np.empty(MINUTES)
    kind = np.zeros(MINUTES, dtype=np.int64)
    # The current minute is the present (currently's values, so the two cannot disagree).
    now = rows.shape[1] - 1
    rate[0], probability[0], kind[0] = (
        rows[kernels.RATE, now],
        rows[kernels.PROBABILITY, now],
        parts[kernels.KIND, now],
    )
    between = hours[0]
    for i in range(1, MINUTES):
        at = position(first + 60 * i, t0, shift)
        rate[i] = interp(at, between[kernels.RATE], count)
        probability[i] = interp(at, between[kernels.PROBABILITY], count)
        kind[i] = minute_kind(at, rate[i], between, count)
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.minutely_facts(rate, kind, probability, row)
    if row[facts.M_CASE] == facts.DRY_HOUR:
        row[:] = 0
        row[0], row[facts.C_CODE] = facts.CODE_FOR_HOUR, codes[now]
    n = _block_head(o, n, MINUTELY_KEY, row, facts.summary_icon(row, icons[now]), day_now)
    factor = p[P_PRECIPITATION]
    for i in range(MINUTES):
        n = _comma(o, n, i == 0)
        n = _put(o, n, MINUTE_KEYS, MINUTE_AT, 0)
        n = jsonbytes.put_int(o, n, int(first + 60 * i))
        n = _put(o, n, MINUTE_KEYS, MINUTE_AT, 1)
        n = jsonbytes.put_rounded(o, n, np.rint(rate[i] * factor * 1e4), 4)
        n = _put(o, n, MINUTE_KEYS, MINUTE_AT, 2)
        n = jsonbytes.put_rounded(o, n, np.rint(probability[i] * 100), 2)
        n = _put(o, n, MINUTE_KEYS, MINUTE_AT, 3)
        n = _put(o, n, KINDS, KINDS_AT, _kind(kind[i], rate[i]))
        n = _close(o, n)
    return _put(o, n, BLOCK_KEYS, BLOCK_AT, END)


@njit(cache=True, nogil=True)
def minute_kind(at, rate, rows, count):
    """The kind at fractional hour `at` with this rate: the snow and sleet shares interpolated
    as the values are, typed by the hours around (kernels.kind_between): a kind one
    of its hours has, or would have were it wet (an untyped hour's shares still say snow)."""
    j = min(max(int(at), 0), count - 2)
    snow, sleet = interp(at, rows[kernels.SNOW], count), interp(at, rows[kernels.SLEET], count)
    return kernels.kind_between(
        rate, snow, sleet, kernels.phase_of(rows, j), kernels.phase_of(rows, j + 1)
    )


@njit(cache=True, nogil=True)
def _hourly(o, n, p, t0, shift, start, stop, day_end, mi, suns, day_now, s, conv, titles):
    """The hours [start, stop); the summary, and so the icon, covers the periods of the next
    24 hours ([start, day_end))."""
    rows, parts, codes, icons = s
    starts = np.empty(12, dtype=np.int64)
    row = np.zeros(facts.FACTS, dtype=np.int64)
    periods, names = facts.next_day_periods(mi, start, day_end, starts)
    if periods:
        stats = np.empty((periods, len(kernels.STAT_COLUMNS)))
        kernels.span_stats(starts[:periods], day_end, rows, parts, stats)
        facts.period_facts(stats, 0, periods, names, row)
    else:
        row[0], row[facts.C_CODE] = facts.CODE_SENTENCE, codes[-1]
    # The icon is the condition the summary names (not the most frequent hour's, which
    # can be cloud while a few wet hours make the summary say rain).
    n = _block_head(o, n, HOURLY_KEY, row, facts.summary_icon(row, icons[-1]), day_now)
    for i in range(start, stop):
        time = t0 + HOUR_S * i + shift[i]
        n = _comma(o, n, i == start)
        day = is_day(time, p[P_LAT], p[P_LON], suns, p[P_SUN_T0])
        n = _point(o, n, int(time), day, s, i, conv, titles)
    return _put(o, n, BLOCK_KEYS, BLOCK_AT, END)


@njit(cache=True, nogil=True)
def _daily(o, n, p, marks, mi, moon, s, conv):
    """The seven local days from today (those the data reaches)."""
    rows, parts = s[0], s[1]
    days = np.empty((DAYS, len(kernels.DAY_COLUMNS)))
    midnight = mi[: DAYS + 1, kernels.MIDNIGHT].copy()
    kernels.day_aggregates(
        midnight, mi[: DAYS + 1, kernels.H06].copy(), mi[: DAYS + 1, kernels.H18].copy(), rows, days
    )
    week = np.empty((DAYS, len(kernels.STAT_COLUMNS)))
    kernels.span_stats(midnight[:DAYS], midnight[DAYS], rows, parts, week)
    starts = np.empty(4 * DAYS, dtype=np.int64)
    for d in range(DAYS):
        for q in range(4):
            starts[4 * d + q] = mi[d, kernels.DAY_PERIOD_MARKS[q]]
    periods = np.empty((4 * DAYS, len(kernels.STAT_COLUMNS)))
    kernels.span_stats(starts, mi[DAYS, kernels.MIDNIGHT], rows, parts, periods)
    # Days past the data's end are left out, as its hours are: with no hour known they would
    # be summarised as clear and dry.
    shown = DAYS
    while shown > 1 and week[shown - 1, facts.S_KNOWN] == 0:
        shown -= 1
    highs, highs_c = np.empty(shown), np.empty(shown)
    icons, kinds = np.empty(shown, dtype=np.int64), np.empty(shown, dtype=np.int64)
    counts = np.zeros(len(text.ICON_CODES), dtype=np.int64)
    day_facts = np.empty((shown, facts.FACTS), dtype=np.int64)
    for d in range(shown):
        highs_c[d] = days[d, kernels.D_HIGH]
        highs[d] = (
            np.rint(
                (
                    days[d, kernels.D_HIGH] * conv[0, kernels.TEMPERATURE]
                    + conv[1, kernels.TEMPERATURE]
                )
                * 100.0
            )
            / 100.0
        )
        facts.day_facts(periods, 4 * d, day_facts[d])
        icons[d] = facts.day_icon(
            day_facts[d], days[d, kernels.D_DAYTIME_CLOUD], days[d, kernels.D_CLOUD]
        )
        kinds[d] = facts.day_kind(periods, 4 * d)
        counts[icons[d]] += 1
    row = np.empty(facts.FACTS, dtype=np.int64)
    facts.week_facts(
        week[:shown], highs_c, highs, kinds, int(p[P_WEEKDAY]), int(p[P_FAHRENHEIT]), row
    )
    # The precipitation the week's summary names, else (it names none) the most frequent
    # day icon, a sky or fog: a day's precipitation icon needs a wet day.
    n = _block_head(o, n, DAILY_KEY, row, facts.summary_icon(row, facts.dominant(counts)), True)
    lat, lon = p[P_LAT], p[P_LON]
    for d in range(shown):
        noon = sun.solar_noon(marks[d, kernels.H12], lon)
        rise, set_ = sun.rise_set(noon, lat, lon)
        lit = sun.altitude(noon, lat, lon) > sun.HORIZON_DEG
        n = _comma(o, n, d == 0)
        n = _day(
            o,
            n,
            marks[d, kernels.MIDNIGHT],
            day_facts[d],
            icons[d],
            kinds[d],
            lit,
            days[d],
            week[d],
            conv,
        )
        n = _day_tail(o, n, rise, set_, moon[d])
    return _put(o, n, BLOCK_KEYS, BLOCK_AT, END)


@njit(cache=True, nogil=True)
def _day(o, n, time, row, icon, kind, lit, day, week, conv):
    """A daily entry up to its precipitationType."""
    n = _put(o, n, DAY_KEYS, DAY_AT, 0)
    n = jsonbytes.put_int(o, n, int(time))
    n = _put(o, n, DAY_KEYS, DAY_AT, 1)
    n = jsonbytes.hole_text(o, n, row)
    n = _put(o, n, DAY_KEYS, DAY_AT, 2)
    n = _put(o, n, ICONS, ICONS_AT, 2 * icon)
    n = _put(o, n, DAY_KEYS, DAY_AT, 3)
    n = jsonbytes.put_bool(o, n, lit)
    # A day without data (no mean humidity) has no total either.
    total = np.nan if day[kernels.D_HUMIDITY] != day[kernels.D_HUMIDITY] else week[facts.S_TOTAL]
    # (key in DAY_KEYS, value, row for the unit and digits): temperatureHigh .. windGust,
    # then windDirection, then cloudCover .. precipitationProbability
    for f, value, r in (
        (4, day[kernels.D_HIGH], kernels.TEMPERATURE),
        (5, day[kernels.D_LOW], kernels.TEMPERATURE),
        (6, day[kernels.D_HUMIDITY], kernels.HUMIDITY),
        (7, day[kernels.D_PRESSURE], kernels.PRESSURE),
        (8, day[kernels.D_WIND], kernels.WIND),
        (9, day[kernels.D_GUST], kernels.GUST),
        (11, day[kernels.D_CLOUD], kernels.CLOUD),
        (12, total, kernels.RATE),
        (13, week[facts.S_PROBABILITY], kernels.PROBABILITY),
    ):
        if f == 11:
            n = _put(o, n, DAY_KEYS, DAY_AT, 10)
            n = jsonbytes.put_whole(
                o,
                n,
                _bearing(
                    kernels._direction(day[kernels.D_U], day[kernels.D_V]),
                    day[kernels.D_WIND],
                    conv,
                ),
            )
        n = _put(o, n, DAY_KEYS, DAY_AT, f)
        digits = DAY_TOTAL_DIGITS if f == 12 else DIGITS[r]
        n = jsonbytes.put_number(o, n, value, conv[0, r], conv[1, r], digits)
    n = _put(o, n, DAY_KEYS, DAY_AT, 14)
    return _put(o, n, KINDS, KINDS_AT, _kind(kind, total))


@njit(cache=True, nogil=True)
def _day_tail(o, n, rise, set_, moon):
    """sunriseTime, sunsetTime, moonPhase and the end of a daily entry. A day of polar night or
    midnight sun has no sunrise or sunset: the key is left out, as Dark Sky did (a null breaks
    clients that test for the key, such as python-pirateweather)."""
    if rise == rise:
        n = _put(o, n, DAY_KEYS, DAY_AT, 15)
        n = jsonbytes.put_whole(o, n, rise)
    if set_ == set_:
        n = _put(o, n, DAY_KEYS, DAY_AT, 16)
        n = jsonbytes.put_whole(o, n, set_)
    n = _put(o, n, DAY_KEYS, DAY_AT, 17)
    # a lunation fraction is below 1: from 0.995 it rounds to the next new moon, 0
    n = jsonbytes.put_rounded(o, n, np.rint(moon * 100) % 100, 2)
    return _close(o, n)
