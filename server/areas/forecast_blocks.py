"""The forecast response: one bilinear read of the point's series, derived quantities, then the
blocks (currently, minutely, hourly, daily) in the requested units.

Everything is computed in SI on the local hours from today's local midnight (`t0`) plus one
row for the present moment, and converted only when a block is written out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

import numpy as np

from server.areas import forecast_kernels as kernels
from server.areas import forecast_series as fs
from server.areas import forecast_summary as summary
from server.areas import forecast_text as text
from server.areas.forecast_data import HOUR_S, ForecastData
from server.areas.forecast_place import Place, zone
from server.science import moon, sun, weather
from server.science.units import UnitSystem

LAPSE_C_PER_M = 0.0065          # standard atmosphere: 6.5 K per km
HOURLY_HOURS, EXTENDED_HOURS = 48, 168
DAYS = 7
MINUTES = 61
# Local hours marking each day: midnight, period starts (04, 12, 17, 22), and 06/18 for the
# high (06-18) and low (18-06 next morning) of decisions rule 31.
MARK_HOURS = (0, 4, 6, 12, 17, 18, 22)
MIDNIGHT, H04, H06, H12, H17, H18, H22 = range(len(MARK_HOURS))
PERIOD_MARKS = (H04, H12, H17, H22)
# currently and hourly entries: these rows, under these names, in this order.
POINT_ROWS = (fs.TEMPERATURE, fs.APPARENT, fs.DEWPOINT, fs.HUMIDITY, fs.PRESSURE, fs.WIND,
              fs.GUST, fs.CLOUD, fs.VISIBILITY, fs.RATE, fs.PROBABILITY, fs.DIRECTION)
# Daily rows from day_aggregates (high, low, humidity, pressure, wind, cloud), the total, the
# highest probability and gust, converted as these rows are.
DAY_ROWS = (fs.TEMPERATURE, fs.TEMPERATURE, fs.HUMIDITY, fs.PRESSURE, fs.WIND, fs.CLOUD,
            fs.RATE, fs.PROBABILITY, fs.GUST)
DAY_KEYS = ("time", "summary", "icon", "is_day", "temperatureHigh", "temperatureLow",
            "humidity", "pressure", "windSpeed", "windGust", "windDirection", "cloudCover",
            "precipitation", "precipitationProbability", "precipitationType", "sunriseTime",
            "sunsetTime", "moonPhase")
POINT_KEYS = ("temperature", "apparentTemperature", "dewPoint", "humidity", "pressure",
              "windSpeed", "windGust", "cloudCover", "visibility", "precipitation",
              "precipitationProbability")


@dataclass(frozen=True)
class Request:
    """What the handler parsed."""

    lat: float
    lon: float
    units: UnitSystem
    lang: str
    hours: int                 # 48, or 168 with extend=hourly
    blocks: frozenset[str]     # the blocks to include


@lru_cache(maxsize=8192)
def day_marks(tz: str, year: int, month: int, day: int) -> tuple[np.ndarray, int]:
    """UTC instants (days + 2, marks) of MARK_HOURS on the local days starting at the given
    date, and the weekday (0 Monday) of that date; cached per zone and day."""
    z = zone(tz)
    first = datetime(year, month, day).toordinal()
    marks = np.empty((DAYS + 2, len(MARK_HOURS)))
    for d in range(DAYS + 2):
        date = datetime.fromordinal(first + d)
        for m, hour in enumerate(MARK_HOURS):
            marks[d, m] = date.replace(hour=hour, tzinfo=z).timestamp()
    return marks, datetime.fromordinal(first).weekday()


def _rows(keys: tuple[str, ...], columns: list[list]) -> list[dict]:
    return [dict(zip(keys, row)) for row in zip(*columns)]


class Forecast:
    """Builds one response."""

    def __init__(self, data: ForecastData, place: Place, request: Request, now_s: float):
        self.data, self.place, self.r, self.now = data, place, request, now_s
        local = datetime.fromtimestamp(now_s, place.zone)
        self.offset_h = local.utcoffset().total_seconds() / 3600.0
        self.marks, self.weekday = day_marks(place.timezone, local.year, local.month, local.day)
        self.t0 = float(self.marks[0, MIDNIGHT])
        # Hour index of every mark in the series (marks fall on local hours).
        self.mi = ((self.marks - self.t0) // HOUR_S).astype(np.int64)
        self.h0 = int((now_s - self.t0) // HOUR_S)          # the current local hour
        end = max(self.marks[DAYS, H06], self.t0 + (self.h0 + request.hours) * HOUR_S)
        count = int((end - self.t0) // HOUR_S) + 1
        values = data.window(request.lat, request.lon, self.t0, count)
        k = (now_s - self.t0) / HOUR_S
        k0 = min(int(k), count - 2)
        now_row = values[k0] + (values[k0 + 1] - values[k0]) * (k - k0)
        orography = data.orography_m(request.lat, request.lon)
        known = place.elevation_m is not None and orography == orography
        self.elevation_m = place.elevation_m if place.elevation_m is not None else orography
        lift = (orography - place.elevation_m) * LAPSE_C_PER_M if known else 0.0
        # The last row is the present moment.
        self.s = fs.derive(np.vstack([values, now_row]), data.inputs, lift)
        self.count = count
        self.conv = fs.conversion(request.units)
        # The hourly block stops where the data ends.
        self.valid = min(count, int((data.last_s - self.t0) // HOUR_S) + 1)
        self._reducer = None

    @property
    def reducer(self) -> summary.Reducer:
        if self._reducer is None:
            self._reducer = summary.Reducer(self.s)
        return self._reducer

    def body(self) -> dict:
        """The whole response object (decisions rules 25-35)."""
        r, units = self.r, self.r.units
        out = {"latitude": round(r.lat, 5), "longitude": round(r.lon, 5),
               "timezone": self.place.timezone, "offset": self.offset_h,
               "elevation": None if self.elevation_m != self.elevation_m
               else round(self.elevation_m * units.elevation)}
        day_now = bool(sun.is_day(self.now, r.lat, r.lon))
        if "currently" in r.blocks:
            out["currently"] = self.currently(day_now)
        if "minutely" in r.blocks:
            out["minutely"] = self.minutely(day_now)
        if "hourly" in r.blocks:
            out["hourly"] = self.hourly(day_now)
        if "daily" in r.blocks:
            out["daily"] = self.daily()
        if "alerts" in r.blocks:
            out["alerts"] = self.data.alerts.at(r.lat, r.lon, self.now)
        out["flags"] = {"units": units.name, "sources": self.data.sources,
                        "version": self.data.version}
        return out

    def _points(self, sl: slice) -> list[list]:
        """The point fields of instants sl, converted, rounded, one list per field."""
        columns = self.conv.apply(POINT_ROWS, self.s.rows[POINT_ROWS, sl])
        columns[-1] = fs.directions(columns[-1])
        return columns + [fs.kinds(self.s, sl)]

    def currently(self, day_now: bool) -> dict:
        s, now = self.s, slice(self.count, self.count + 1)
        code = int(s.codes[-1])
        entry = {"time": int(self.now), "summary": text.titles([code], self.r.lang)[0],
                 "icon": text.icon_names(s.icons[now], day_now)[0], "is_day": day_now}
        entry.update(_rows(POINT_KEYS + ("windDirection", "precipitationType"),
                           self._points(now))[0])
        return entry

    def minutely(self, day_now: bool) -> dict:
        minutes = self.now // 60 * 60 + 60 * np.arange(MINUTES)
        position = (minutes - self.t0) / HOUR_S
        index = np.arange(self.count, dtype=np.float64)
        s = self.s
        rate = np.interp(position, index, s[fs.RATE][:-1])
        probability = np.interp(position, index, s[fs.PROBABILITY][:-1])
        kind = s.kind[np.minimum(position.astype(np.int64), self.count - 1)]
        kind = np.where(rate >= text.WET_MMH, np.maximum(kind, 1), 0)
        factor = self.r.units.precipitation
        data = _rows(("time", "precipitation", "precipitationProbability", "precipitationType"),
                     [minutes.astype(np.int64).tolist(), (np.rint(rate * factor * 1e4) / 1e4)
                      .tolist(), (np.rint(probability * 100) / 100).tolist(),
                      text.KIND_NAMES[kind].tolist()])
        phrase = summary.minutely_phrase(rate, kind, probability, int(s.codes[-1]))
        wet = kind > 0
        if wet.any():
            main = int(np.argmax(np.bincount(kind[wet], weights=rate[wet], minlength=4)[1:])) + 1
            icon = text.precipitation_icon(main, float(rate.max()))
        else:
            icon = text.ICON_CODES[int(s.icons[-1])]
        return {"summary": text.render(phrase, self.r.lang),
                "icon": icon + ("d" if day_now else "n"), "data": data}

    def hourly(self, day_now: bool) -> dict:
        start, stop = self.h0, min(self.h0 + self.r.hours, self.valid)
        sl = slice(start, stop)
        s = self.s
        times = self.t0 + HOUR_S * np.arange(start, stop)
        day = sun.is_day(times, self.r.lat, self.r.lon)
        columns = [times.astype(np.int64).tolist(),
                   text.titles(s.codes[sl].tolist(), self.r.lang),
                   text.icon_names(s.icons[sl], day), day.tolist()] + self._points(sl)
        data = _rows(("time", "summary", "icon", "is_day") + POINT_KEYS
                     + ("windDirection", "precipitationType"), columns)
        starts, names = self._next_day_periods(start)
        if starts:
            stats = self.reducer.stats(starts, min(start + 24, self.valid))
            phrase = summary.periods_phrase(stats, 0, names)
        else:
            phrase = ("sentence", text.phrase(int(s.codes[-1])))
        return {"summary": text.render(phrase, self.r.lang),
                "icon": text.dominant(s.icons[sl]) + ("d" if day_now else "n"), "data": data}

    def _next_day_periods(self, start: int) -> tuple[list[int], tuple[str, ...]]:
        """Starts and names of the periods of the next 24 hours from the current hour, named
        today-/tomorrow- (the night that began yesterday evening counts as tonight); the
        window ends early rather than name a period twice."""
        stop = min(start + 24, self.valid)
        bounds = self.mi[:3, PERIOD_MARKS].ravel().tolist()
        marks = [(-10 ** 9, 3, 0)] + [(b, i % 4, i // 4) for i, b in enumerate(bounds)]
        starts, names = [], []
        for (a, p, d), (b, _, _) in zip(marks, marks[1:]):
            a, b = max(a, start), min(b, stop)
            if b <= a:
                continue
            name = f"{'today' if d == 0 else 'tomorrow'}-{summary.PERIODS[p]}"
            if name in names:
                break
            starts.append(a)
            names.append(name)
        return starts, tuple(names)

    def daily(self) -> dict:
        m, s, units, lang = self.marks, self.s, self.r.units, self.r.lang
        mi = self.mi
        mid, six, eighteen = mi[:DAYS + 1, MIDNIGHT], mi[:DAYS + 1, H06], mi[:DAYS + 1, H18]
        days = np.empty((DAYS, len(kernels.DAY_COLUMNS)))
        kernels.day_aggregates(mid, six, eighteen, s.rows, days)
        week = self.reducer.stats(mid[:DAYS], int(mid[DAYS]))
        periods = self.reducer.stats(mi[:DAYS, PERIOD_MARKS].ravel(), int(mi[DAYS, H04]))
        noon_local = np.ascontiguousarray(m[:DAYS, H12])
        noon = sun.solar_noon(noon_local, self.r.lon)
        rise, set_ = sun.rise_set(noon, self.r.lat, self.r.lon)
        lit = (sun.altitude(noon, self.r.lat, self.r.lon) > sun.HORIZON_DEG).tolist()
        names = ["today", "tomorrow"] + [summary.WEEKDAYS[(self.weekday + d) % 7]
                                         for d in range(2, DAYS)]
        kinds = [a.index(max(a)) + 1 for a in week.by_kind]
        daytime_cloud = days[:, 9].tolist()
        icons = [self._day_icon(week, d, kinds[d], daytime_cloud[d]) for d in range(DAYS)]
        total = np.where(np.isnan(days[:, 2]), np.nan, week.total)
        high, low, humidity, pressure, wind, cloud, precipitation, probability, gust = \
            self.conv.apply(DAY_ROWS, np.vstack([days[:, :6].T, total, week.probability,
                                                 days[:, 8]]))
        direction = fs.directions(np.rint(weather.wind_direction_deg(days[:, 6], days[:, 7]))
                                  .tolist())
        events = np.rint(np.stack([rise, set_])).tolist()
        columns = [
            m[:DAYS, MIDNIGHT].astype(np.int64).tolist(),
            [text.render(summary.periods_phrase(periods, 4 * d, summary.PERIODS), lang)
             for d in range(DAYS)],
            [icon + "d" for icon in icons], lit, high, low, humidity, pressure, wind, gust,
            direction, cloud, precipitation, probability,
            [text.KINDS[k] if t >= text.WET_MMH else "none" for k, t in zip(kinds, week.total)],
            fs.directions(events[0]), fs.directions(events[1]),
            (np.rint(moon.phase(noon_local) * 100) / 100).tolist()]
        data = _rows(DAY_KEYS, columns)
        phrase = summary.week_phrase(week, high, names, units.fahrenheit)
        return {"summary": text.render(phrase, lang),
                "icon": text.dominant([text.ICON_CODES.index(i) for i in icons]) + "d",
                "data": data}

    @staticmethod
    def _day_icon(week: summary.Stats, d: int, kind: int, daytime_cloud: float) -> str:
        """1 mm of precipitation or more decides (thunder, snow or sleet, rain for six hours
        or more, else showers); else fog half the day; else the mean cloud from 06 to 18."""
        if week.total[d] >= summary.DAY_MM:
            if week.thunder[d] == 2:
                return "11"
            return "13" if kind >= 2 else "10" if week.wet_hours[d] >= 6 else "09"
        if week.foggy[d]:
            return "50"
        return ("01", "02", "03", "04", "04")[text.cloud_level(float(daytime_cloud))]


def now_utc() -> float:
    """The current time (one place, so that the handler and tests read the same clock)."""
    return datetime.now(timezone.utc).timestamp()
