"""The forecast response: one bilinear read of the point's hourly series, derived quantities in
numpy, then the blocks (currently, minutely, hourly, daily) in the requested units.

Everything is computed in SI on a series of local hours that starts at today's local midnight
(`t0`), and converted to the unit system only when an entry is written out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

import numpy as np

from contract import Forecast as F
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
KIND_NAMES = np.asarray(text.KINDS)


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


@dataclass
class Series:
    """Derived SI quantities over a run of instants."""

    temperature: np.ndarray
    dewpoint: np.ndarray
    humidity: np.ndarray
    apparent: np.ndarray
    pressure: np.ndarray
    wind: np.ndarray
    direction: np.ndarray
    gust: np.ndarray
    cloud: np.ndarray
    visibility_km: np.ndarray
    rate: np.ndarray
    probability: np.ndarray
    u: np.ndarray
    v: np.ndarray
    cond: text.Conditions


def derive(values: np.ndarray, column: dict[str, int], lift_c: float) -> Series:
    """Quantities at the point from the bilinear values (n, nvar); `lift_c` is the
    elevation correction added to temperature and dewpoint (which keeps their spread)."""
    missing = np.full(len(values), np.nan)
    get = lambda name: values[:, column[name]] if name in column else missing  # noqa: E731
    temperature = get(F.TEMPERATURE) + lift_c
    dewpoint = np.minimum(get(F.DEWPOINT) + lift_c, temperature)
    u, v = get(F.WIND_U), get(F.WIND_V)
    wind = weather.wind_speed_ms(u, v)
    humidity = weather.relative_humidity(temperature, dewpoint)
    rate = np.maximum(get(F.PRECIP), 0.0)
    probability = np.clip(get(F.PRECIP_PROBABILITY), 0.0, 1.0)
    kind = text.precipitation_kind(rate, get(F.SNOW), get(F.SLEET))
    cloud = np.clip(get(F.CLOUD), 0.0, 1.0)
    visibility = get(F.VISIBILITY)
    cond = text.conditions(rate, probability, kind, temperature, dewpoint, humidity, wind,
                           visibility, cloud, get(F.CAPE))
    return Series(temperature=temperature, dewpoint=dewpoint, humidity=humidity,
                  apparent=weather.apparent_temperature_c(temperature, humidity, wind),
                  pressure=get(F.PRESSURE), wind=wind,
                  direction=weather.wind_direction_deg(u, v), gust=get(F.GUST), cloud=cloud,
                  visibility_km=visibility / 1000.0, rate=rate, probability=probability,
                  u=u, v=v, cond=cond)


def _round(values: np.ndarray, digits: int) -> list:
    """Rounded values as Python floats (NaN stays NaN: orjson writes it as null)."""
    return np.round(values, digits).tolist()


def _ints(values: np.ndarray) -> list:
    return [None if x != x else int(x) for x in np.round(values).tolist()]


def point_columns(s: Series, sl, units: UnitSystem) -> dict[str, list]:
    """The per-time fields shared by currently and hourly, converted and rounded."""
    return {
        "temperature": _round(units.temperature(s.temperature[sl]), 2),
        "apparentTemperature": _round(units.temperature(s.apparent[sl]), 2),
        "dewPoint": _round(units.temperature(s.dewpoint[sl]), 2),
        "humidity": _round(s.humidity[sl], 2),
        "pressure": _round(s.pressure[sl], 1),
        "windSpeed": _round(s.wind[sl] * units.speed, 2),
        "windGust": _round(s.gust[sl] * units.speed, 2),
        "windDirection": _ints(s.direction[sl]),
        "cloudCover": _round(s.cloud[sl], 2),
        "visibility": _round(s.visibility_km[sl] * units.visibility, 2),
        "precipitation": _round(s.rate[sl] * units.precipitation, 4),
        "precipitationProbability": _round(s.probability[sl], 2),
        "precipitationType": KIND_NAMES[s.cond.kind[sl]].tolist(),
    }


def _rows(columns: dict[str, list]) -> list[dict]:
    keys = list(columns)
    return [dict(zip(keys, row)) for row in zip(*columns.values())]


class Forecast:
    """Builds one response."""

    def __init__(self, data: ForecastData, place: Place, request: Request, now_s: float):
        self.data, self.place, self.r, self.now = data, place, request, now_s
        local = datetime.fromtimestamp(now_s, place.zone)
        self.offset_h = local.utcoffset().total_seconds() / 3600.0
        self.marks, self.weekday = day_marks(place.timezone, local.year, local.month, local.day)
        self.t0 = float(self.marks[0, MIDNIGHT])
        self.index = lambda instants: ((np.asarray(instants) - self.t0) // HOUR_S).astype(
            np.int64)
        self.h0 = int((now_s - self.t0) // HOUR_S)          # the current local hour
        end = max(self.marks[DAYS, H06], self.t0 + (self.h0 + request.hours) * HOUR_S)
        count = int((end - self.t0) // HOUR_S) + 1
        values = data.window(request.lat, request.lon, self.t0, count)
        orography = data.orography_m(request.lat, request.lon)
        known = place.elevation_m is not None and orography == orography
        self.elevation_m = place.elevation_m if place.elevation_m is not None else orography
        lift = (orography - place.elevation_m) * LAPSE_C_PER_M if known else 0.0
        self.s = derive(values, data.column, lift)
        self.codes = self.s.cond.code
        self.icon_codes = text.icons(self.s.cond)
        self.times = self.t0 + HOUR_S * np.arange(count)
        # The hourly block stops where the data ends.
        self.valid = int(np.searchsorted(self.times, data.last_s, side="right"))
        k = (now_s - self.t0) / HOUR_S
        k0 = min(int(k), count - 2)
        now_row = values[k0] + (values[k0 + 1] - values[k0]) * (k - k0)
        self.now_s = derive(now_row[None], data.column, lift)

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

    def currently(self, day_now: bool) -> dict:
        s = self.now_s
        code = int(s.cond.code[0])
        entry = {"time": int(self.now), "summary": text.render(("title", text.phrase(code)),
                                                               self.r.lang),
                 "icon": text.icons(s.cond)[0] + ("d" if day_now else "n"), "is_day": day_now}
        entry.update({k: v[0] for k, v in point_columns(s, slice(None), self.r.units).items()})
        return entry

    def minutely(self, day_now: bool) -> dict:
        minutes = self.now // 60 * 60 + 60 * np.arange(MINUTES)
        position = (minutes - self.t0) / HOUR_S
        index = np.arange(len(self.times), dtype=np.float64)
        s = self.s
        rate = np.interp(position, index, s.rate)
        probability = np.interp(position, index, s.probability)
        kind = s.cond.kind[np.minimum(position.astype(np.int64), len(index) - 1)]
        kind = np.where(rate >= text.WET_MMH, np.maximum(kind, 1), 0)
        data = _rows({"time": minutes.astype(np.int64).tolist(),
                      "precipitation": _round(rate * self.r.units.precipitation, 4),
                      "precipitationProbability": _round(probability, 2),
                      "precipitationType": KIND_NAMES[kind].tolist()})
        phrase = summary.minutely_phrase(rate, kind, probability, int(self.now_s.cond.code[0]))
        wet = kind > 0
        if wet.any():
            main = int(np.argmax(np.bincount(kind[wet], weights=rate[wet], minlength=4)[1:])) + 1
            icon = text.precipitation_icon(main, float(rate.max()))
        else:
            icon = str(text.icons(self.now_s.cond)[0])
        return {"summary": text.render(phrase, self.r.lang),
                "icon": icon + ("d" if day_now else "n"), "data": data}

    def hourly(self, day_now: bool) -> dict:
        start, stop = self.h0, min(self.h0 + self.r.hours, self.valid)
        sl = slice(start, stop)
        times = self.times[sl]
        day = sun.is_day(times, self.r.lat, self.r.lon)
        lang = self.r.lang
        columns = {"time": times.astype(np.int64).tolist(),
                   "summary": [text.render(("title", text.phrase(c)), lang)
                               for c in self.codes[sl].tolist()],
                   "icon": text.with_suffix(self.icon_codes[sl], day), "is_day": day.tolist(),
                   **point_columns(self.s, sl, self.r.units)}
        starts, names = self._next_day_periods(start)
        if starts:
            st = summary.stats(self.s.rate, self.s.probability, self.s.cloud, self.s.cond,
                               starts, min(start + 24, self.valid))
            phrase = summary.periods_phrase(st, 0, names)
        else:
            phrase = ("sentence", text.phrase(int(self.now_s.cond.code[0])))
        return {"summary": text.render(phrase, lang),
                "icon": text.dominant(self.icon_codes[sl]) + ("d" if day_now else "n"),
                "data": _rows(columns)}

    def _next_day_periods(self, start: int) -> tuple[list[int], tuple[str, ...]]:
        """Starts and names of the periods of the next 24 hours from the current hour, named
        today-/tomorrow- (the night that began yesterday evening counts as tonight); the
        window ends early rather than name a period twice."""
        stop = min(start + 24, self.valid)
        bounds = self.index(self.marks[:3, PERIOD_MARKS]).ravel().tolist()
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
        m, s, units = self.marks, self.s, self.r.units
        mid, six, eighteen = (self.index(m[:, col]) for col in (MIDNIGHT, H06, H18))
        end = int(six[DAYS])
        cuts = np.ravel(np.column_stack([six[:DAYS], eighteen[:DAYS]]))
        temp = s.temperature[:end]
        high, low = np.fmax.reduceat(temp, cuts)[0::2], np.fmin.reduceat(temp, cuts)[1::2]
        days, stop = mid[:DAYS], int(mid[DAYS])
        week = summary.stats(s.rate, s.probability, s.cloud, s.cond, days, stop)
        periods = summary.stats(s.rate, s.probability, s.cloud, s.cond,
                                self.index(m[:DAYS, PERIOD_MARKS]).ravel(),
                                int(self.index(m[DAYS, H04])))
        mean = lambda x: _means(x, days, stop)  # noqa: E731
        daytime_cloud = _means(s.cloud, cuts, end)[0::2]
        noon = sun.solar_noon(m[:DAYS, H12], self.r.lon)
        rise, set_ = sun.rise_set(noon, self.r.lat, self.r.lon)
        lit = sun.altitude(noon, self.r.lat, self.r.lon) > sun.HORIZON_DEG
        names = ["today", "tomorrow"] + [summary.WEEKDAYS[(self.weekday + d) % 7]
                                         for d in range(2, DAYS)]
        kinds = [amounts.index(max(amounts)) + 1 for amounts in week.by_kind]
        lang = self.r.lang
        icons = [self._day_icon(week, d, kinds[d], daytime_cloud[d]) for d in range(DAYS)]
        total = np.asarray(week.total) * units.precipitation
        columns = {
            "time": m[:DAYS, MIDNIGHT].astype(np.int64).tolist(),
            "summary": [text.render(summary.periods_phrase(periods, 4 * d, summary.PERIODS),
                                    lang) for d in range(DAYS)],
            "icon": [icon + "d" for icon in icons],
            "is_day": lit.tolist(),
            "temperatureHigh": _round(units.temperature(high), 2),
            "temperatureLow": _round(units.temperature(low), 2),
            "humidity": _round(mean(s.humidity), 2), "pressure": _round(mean(s.pressure), 1),
            "windSpeed": _round(mean(s.wind) * units.speed, 2),
            "windGust": _round(np.fmax.reduceat(s.gust[:stop], days) * units.speed, 2),
            "windDirection": _ints(weather.wind_direction_deg(mean(s.u), mean(s.v))),
            "cloudCover": _round(mean(s.cloud), 2),
            "precipitation": _round(np.where(np.isnan(mean(s.rate)), np.nan, total), 4),
            "precipitationProbability": _round(np.asarray(week.probability), 2),
            "precipitationType": [text.KINDS[k] if t >= text.WET_MMH else "none"
                                  for k, t in zip(kinds, week.total)],
            "sunriseTime": _ints(rise), "sunsetTime": _ints(set_),
            "moonPhase": _round(moon.phase(m[:DAYS, H12]), 2),
        }
        phrase = summary.week_phrase(week, _round(units.temperature(high), 2), names,
                                     units.fahrenheit)
        return {"summary": text.render(phrase, lang), "icon": text.dominant(icons) + "d",
                "data": _rows(columns)}

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
        return ("01", "02", "03", "04", "04")[text.cloud_level(daytime_cloud)]


def _means(x: np.ndarray, starts: np.ndarray, stop: int) -> np.ndarray:
    """Means of the known values of x over [starts[i], starts[i + 1]) and [starts[-1], stop);
    NaN where none is known."""
    part = x[:stop]
    known = part == part
    counts = np.add.reduceat(known.astype(np.float64), starts)
    sums = np.add.reduceat(np.where(known, part, 0.0), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def now_utc() -> float:
    """The current time (one place, so that the handler and tests read the same clock)."""
    return datetime.now(timezone.utc).timestamp()
