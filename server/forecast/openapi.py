"""OpenAPI paths and schemas of the forecast (docs/api/forecast.md)."""

from __future__ import annotations

from server.openapi.parts import (
    ICONS,
    KEY,
    LANGUAGE,
    LAT,
    LON,
    UNIX,
    coordinates,
    nullable,
    obj,
    operation,
    param,
    ref,
    responses,
    success,
    unavailable,
)

UNITS_TABLE = """
| Measurement | us | si | ca | uk |
|---|---|---|---|---|
| Temperature | °F | °C | °C | °C |
| Wind speed | mph | m/s | km/h | mph |
| Precipitation | in/hr | mm/hr | mm/hr | mm/hr |
| Visibility | mi | km | km | mi |
| Elevation | ft | m | m | m |
"""

FORECAST = (
    """\
Current conditions, minutely precipitation for the next hour, hourly (48 h from the start of
the current local hour, 168 h with `extend=hourly`) and daily (7 calendar days in the
location's timezone) forecasts, and the alerts whose area contains the point.

**How values are made.** The model fields (temperature, dewpoint, wind components, pressure,
cloud, precipitation rate, probability and phase, visibility, gusts) are interpolated
bilinearly from the four surrounding grid cells, then humidity (Magnus), apparent temperature
(Bureau of Meteorology, Steadman 1994), wind speed and direction (from the components, never
interpolated as angles) are derived at the point. `currently` is interpolated in time to the
request; the model's steps were resampled to whole hours by the pipeline. Temperature and
dewpoint are adjusted to the point's elevation at 6.5 K/km where a gazetteer place with an
elevation lies within 5 km (see `elevation`). `is_day` is the sun's upper limb above the
horizon. Sunrise and sunset follow the NOAA algorithm (-0.833°), re-evaluated at the event and
anchored on each day's solar noon (a sunset after local midnight belongs to the day before);
both are null on days of polar night or midnight sun. Visibility is capped at 16 km (10 mi in `us` and `uk` units).

**Summaries and icons.** Summaries are built as Pirate Weather's structured phrases and
rendered with `pirateweather-translations` in `lang`; entry summaries are title case
("Partly Cloudy"), block and day summaries sentences. Icons are OpenWeatherMap condition codes
with `d` or `n` (daily: always `d`). A block's or a day's icon is the condition its summary
names (Dark Sky's rule), so the two never disagree: the precipitation it names (11 with
thunder, 13 snow, sleet or a mix, 09 drizzle, else 10), else fog (50), else a sky: the
cloudiest one a block's summary names, a day's mean cloud from 06 to 18; a week whose summary
names no precipitation takes its most frequent day icon (ties to the more severe). An entry's
icon is what its title names first: 11 whenever it names thunderstorms, sure precipitation,
fog, else the sky ("possible" precipitation keeps the sky's icon). An hour's
`precipitationType` is the largest of its rain, snow and sleet shares; the present and each
minute take their shares interpolated as their other values, and the type of one of the two
hours around them (the one with the larger share then), so `currently`, the current minute
(whose values are the present's) and their hours agree. A day's type is the one its summary names: sleet for mixed
precipitation (a wintry mix, icon 13).

**Units** (`flags.units`; humidity, cloud cover and probabilities are fractions 0-1, pressure
hPa, directions degrees the wind comes from):
"""
    + UNITS_TABLE
    + """
**Caching.** The answer changes every minute (`minutely` starts at the current minute,
`currently` is the present): `Cache-Control: max-age` lasts to the end of the current minute,
or less when the next data version is expected sooner. The weak `ETag` names the forecast and
gazetteer data versions, the request and the minute. Data that no longer covers the present is
a 503 (stale), never an answer about another time.
"""
)

_UNITS = " Unit per `flags.units` (see the units table)."
_ICON = {
    "type": "string",
    "enum": ICONS,
    "description": "Condition code plus d (day) or n (night): 01 clear, 02 few clouds, 03 "
    "scattered clouds, 04 broken or overcast, 09 showers or drizzle, 10 "
    "rain, 11 thunderstorm, 13 snow or sleet, 50 fog, mist or haze.",
}
_PRECIP_TYPE = {
    "type": ["string", "null"],
    "enum": ["none", "rain", "snow", "sleet", None],
    "description": "Freezing rain and ice pellets count as sleet; none below "
    "0.02 mm/h; null where the precipitation is unknown (null).",
}
_FRACTION = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_TEMPERATURE = "°F for `us`, °C otherwise."
_POINT = {
    "time": UNIX,
    "summary": {"type": "string", "description": "Title-case summary in `lang`."},
    "icon": _ICON,
    "is_day": {"type": "boolean", "description": "True while the sun is above the horizon."},
    "temperature": nullable("number", "Air temperature at 2 m. " + _TEMPERATURE),
    "apparentTemperature": nullable("number", "Feels-like temperature (BoM). " + _TEMPERATURE),
    "dewPoint": nullable("number", "Dewpoint at 2 m. " + _TEMPERATURE),
    "humidity": {**_FRACTION, "description": "Relative humidity, 0 to 1."},
    "pressure": nullable("number", "Sea-level pressure, hPa."),
    "windSpeed": nullable("number", "Wind speed at 10 m." + _UNITS, minimum=0),
    "windGust": nullable(
        "number", "Gust speed (null when the model has none)." + _UNITS, minimum=0
    ),
    "windDirection": nullable(
        "integer",
        "Direction the wind comes from, degrees clockwise "
        "from north; null when windSpeed is 0 (a calm).",
        minimum=0,
        maximum=360,
    ),
    "cloudCover": {**_FRACTION, "description": "Total cloud cover, 0 to 1."},
    "visibility": nullable(
        "number",
        "Visibility, capped at 16 km (10 mi in us and uk units); null when the "
        "model has none." + _UNITS,
        minimum=0,
    ),
    "precipitation": nullable(
        "number", "Precipitation intensity (liquid equivalent)." + _UNITS, minimum=0
    ),
    "precipitationProbability": {
        **_FRACTION,
        "description": "Probability of at least "
        "0.1 mm/h: the share of the model's neighbourhood (about "
        "25 km, one hour either side) where it falls.",
    },
    "precipitationType": _PRECIP_TYPE,
}
_DAY = {
    "time": {**UNIX, "description": "Local midnight starting the calendar day."},
    "summary": {
        "type": "string",
        "description": "The calendar day by periods (morning "
        "00-12, afternoon 12-17, evening 17-22, night 22-24): the hours of its icon, "
        "type and total. Precipitation is called mixed when a second kind (rain, snow, "
        "sleet) makes a quarter of the amount or more.",
    },
    "icon": {
        **_ICON,
        "description": "The precipitation or fog the day's summary names "
        "(11 with thunder, 13 snow, sleet or a mix, 09 drizzle, "
        "else 10; 50 fog), else the mean cloud from 06 to 18; "
        "always `d`.",
    },
    "is_day": {"type": "boolean", "description": "False on a day of polar night."},
    "temperatureHigh": nullable("number", "Maximum from 06:00 to 18:00 local. " + _TEMPERATURE),
    "temperatureLow": nullable(
        "number", "Minimum from 18:00 to 06:00 the next morning. " + _TEMPERATURE
    ),
    "humidity": {**_FRACTION, "description": "Mean over the day."},
    "pressure": nullable("number", "Mean over the day, hPa."),
    "windSpeed": nullable("number", "Mean speed over the day." + _UNITS, minimum=0),
    "windGust": nullable("number", "Highest gust of the day." + _UNITS, minimum=0),
    "windDirection": nullable(
        "integer",
        "Direction of the day's mean wind vector, degrees; null when windSpeed is 0.",
        minimum=0,
        maximum=360,
    ),
    "cloudCover": {**_FRACTION, "description": "Mean over the day."},
    "precipitation": nullable(
        "number", "Total over the day (in for `us`, mm otherwise), 2 decimals.", minimum=0
    ),
    "precipitationProbability": {**_FRACTION, "description": "Highest hourly probability."},
    "precipitationType": {
        **_PRECIP_TYPE,
        "description": "The main type by amount of the "
        "periods the day's summary calls wet (0.2 mm or more), sleet when "
        "it calls them mixed (a wintry mix: icon 13); none when it calls "
        "none wet (a trace is reported untyped, as hours below 0.02 mm/h "
        "are); null when the day's total is unknown (null).",
    },
    "sunriseTime": {
        "type": "integer",
        "description": "NOAA algorithm at -0.833°; absent on "
        "days of polar night or midnight sun (as in Dark Sky).",
    },
    "sunsetTime": {
        "type": "integer",
        "description": "As sunriseTime (absent when the sun does "
        "not set that day); may fall after local midnight.",
    },
    "moonPhase": {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": "Lunation fraction at local noon: 0 new, 0.25 first quarter, "
        "0.5 full, 0.75 last quarter.",
    },
}
_MINUTE = obj(
    {
        "time": UNIX,
        "precipitation": nullable("number", "Precipitation intensity." + _UNITS, minimum=0),
        "precipitationProbability": {**_FRACTION, "description": "0 to 1."},
        "precipitationType": _PRECIP_TYPE,
    }
)


def _block(item: str, description: str) -> dict:
    return obj(
        {
            "summary": {"type": "string", "description": "Sentence in `lang`."},
            "icon": _ICON,
            "data": {"type": "array", "items": ref("schemas", item)},
        },
        description=description,
    )


_ALERT = obj(
    {
        "title": {"type": "string", "description": "The event, e.g. Wind Advisory."},
        "description": {"type": "string", "description": "Description, then instructions."},
        "time": {**UNIX, "description": "Onset (else effective, else sent), Unix timestamp."},
        "expires": nullable("integer", "End (NWS `ends`, else `expires`); null when open-ended."),
        "severity": {
            "type": "string",
            "enum": ["Extreme", "Severe", "Moderate", "Minor", "Unknown"],
            "description": "CAP severity.",
        },
        "regions": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Area names, when known.",
        },
        "uri": {"type": "string", "format": "uri", "description": "Link, when known."},
    },
    required=["title", "description", "time", "expires", "severity"],
)
_FLAGS = obj(
    {
        "units": {
            "type": "string",
            "enum": ["us", "si", "ca", "uk"],
            "description": "Unit system used (the resolved one when `units=auto`).",
        },
        "sources": {
            "type": "array",
            "description": "Model runs in the data, newest first: `gfs`, "
            "`ecmwf-ifs`, or `generated` for the offline default's synthetic runs.",
            "items": obj(
                {"name": {"type": "string"}, "run_time": {"type": "string", "format": "date-time"}}
            ),
        },
        "version": {"type": "string", "description": "Data version (also in X-Data-Version)."},
    }
)
_FORECAST = obj(
    {
        "latitude": LAT,
        "longitude": LON,
        "timezone": {
            "type": "string",
            "description": "IANA timezone of the coordinate (Etc/GMT±N at sea).",
        },
        "offset": {
            "type": "number",
            "description": "UTC offset of the timezone now, in hours (DST-aware), e.g. 5.5 or -4.",
        },
        "elevation": nullable(
            "number",
            "Elevation of the point the values are for: the nearest "
            "gazetteer place within 5 km that has one (temperature and dewpoint "
            "are then adjusted from the model's surface height at 6.5 K/km), "
            "else the model's surface height. ft for `us`, m otherwise.",
        ),
        "currently": ref("schemas", "ForecastPoint"),
        "minutely": ref("schemas", "MinutelyBlock"),
        "hourly": ref("schemas", "HourlyBlock"),
        "daily": ref("schemas", "DailyBlock"),
        "alerts": {
            "type": "array",
            "items": ref("schemas", "Alert"),
            "description": "Alerts not yet expired whose area contains the point; always an array.",
        },
        "flags": ref("schemas", "ForecastFlags"),
    },
    required=["latitude", "longitude", "timezone", "offset", "elevation", "flags"],
    description="Blocks named in `exclude` are absent; all others are present.",
    examples=[
        {
            "latitude": 47.3769,
            "longitude": 8.5417,
            "timezone": "Europe/Zurich",
            "offset": 1.0,
            "elevation": 409,
            "currently": {
                "time": 1795414050,
                "summary": "Mostly Clear",
                "icon": "02n",
                "is_day": False,
                "temperature": -0.57,
                "apparentTemperature": -5.92,
                "dewPoint": -8.63,
                "humidity": 0.54,
                "pressure": 1014.9,
                "windSpeed": 3.44,
                "windGust": 6.49,
                "windDirection": 273,
                "cloudCover": 0.33,
                "visibility": 16.0,
                "precipitation": 0.0,
                "precipitationProbability": 0.0,
                "precipitationType": "none",
            },
            "minutely": {
                "summary": "Mostly clear for the hour.",
                "icon": "02n",
                "data": [
                    {
                        "time": 1795414020,
                        "precipitation": 0.0,
                        "precipitationProbability": 0.0,
                        "precipitationType": "none",
                    }
                ],
            },
            "hourly": {
                "summary": "Light rain starting this afternoon.",
                "icon": "10d",
                "data": [
                    {
                        "time": 1795413600,
                        "summary": "Mostly Clear",
                        "icon": "02n",
                        "is_day": False,
                        "temperature": -0.77,
                        "apparentTemperature": -6.15,
                        "dewPoint": -8.8,
                        "humidity": 0.55,
                        "pressure": 1014.9,
                        "windSpeed": 3.46,
                        "windGust": 6.53,
                        "windDirection": 274,
                        "cloudCover": 0.33,
                        "visibility": 16.0,
                        "precipitation": 0.0,
                        "precipitationProbability": 0.0,
                        "precipitationType": "none",
                    }
                ],
            },
            "daily": {
                "summary": "Light rain today, with highs reaching 8°C tomorrow.",
                "icon": "10d",
                "data": [
                    {
                        "time": 1795388400,
                        "summary": "Light rain starting in the afternoon.",
                        "icon": "10d",
                        "is_day": True,
                        "temperatureHigh": 7.33,
                        "temperatureLow": -3.09,
                        "humidity": 0.64,
                        "pressure": 1015.3,
                        "windSpeed": 3.24,
                        "windGust": 7.7,
                        "windDirection": 270,
                        "cloudCover": 0.59,
                        "precipitation": 2.4,
                        "precipitationProbability": 0.9,
                        "precipitationType": "rain",
                        "sunriseTime": 1795416092,
                        "sunsetTime": 1795448547,
                        "moonPhase": 0.46,
                    }
                ],
            },
            "alerts": [
                {
                    "title": "Wind Advisory",
                    "description": "Gusts to 80 km/h.",
                    "time": 1795410000,
                    "expires": 1795453200,
                    "severity": "Moderate",
                    "regions": ["Zürich"],
                    "uri": "https://example.org/alerts/1",
                }
            ],
            "flags": {
                "units": "si",
                "sources": [{"name": "gfs", "run_time": "2026-11-23T00:00:00Z"}],
                "version": "forecast-3aadc75e5ab7",
            },
        }
    ],
)


def paths() -> dict:
    """The path of docs/api/forecast.md."""
    forecast = operation(
        "getForecast",
        "forecast",
        "Weather forecast at a coordinate",
        FORECAST,
        [
            coordinates("47.3769,8.5417"),
            param(
                "units",
                "query",
                "Unit system: us (imperial), si (metric), ca (metric, km/h "
                "wind), uk (metric, mph wind and miles visibility), auto (the country of the "
                "point: US, LR, MM use us; GB and IE uk; CA ca; every other country, and the "
                "open sea, si). The country is that of the point's timezone (tzdata zone.tab); "
                "offshore, the nearest gazetteer place within 100 km. The units used are in "
                "flags.units.",
                {"type": "string", "enum": ["us", "si", "ca", "uk", "auto"], "default": "us"},
            ),
            param(
                "lang",
                "query",
                "Language of the summaries: the languages of "
                "pirateweather-translations (ar, az, be, bg, bn, bs, ca, cs, cy, da, de, el, en, "
                "eo, es, et, fa, fi, fr, ga, gd, he, hi, hr, hu, id, is, it, ja, ka, kn, ko, kw, "
                "lv, ml, mr, nl, no, pa, pl, pt, ro, ru, sk, sl, sr, sv, ta, te, tet, tr, uk, ur, "
                "vi, x-pig-latin, zh, zh-tw); a region falls back to its language (pt-BR to pt; "
                "zh-TW, zh-HK and zh-Hant to zh-tw; nb to no; sr-Latn to sr, which the package "
                "writes in Latin letters). A well-formed BCP 47 tag (extensions and private use "
                "included) that is not supported falls back to English; a malformed one is 400.",
                {"type": "string", "pattern": LANGUAGE, "maxLength": 64, "default": "en"},
            ),
            param(
                "extend",
                "query",
                "`hourly` extends the hourly block to 168 hours (as far as the data reaches).",
                {"type": "string", "enum": ["hourly"]},
            ),
            param(
                "exclude",
                "query",
                "Comma-separated blocks to omit: an excluded block is "
                "absent from the response. The parameter may be repeated (`exclude=hourly&"
                "exclude=daily` is `exclude=hourly,daily`), and a block named twice is excluded "
                "once; an empty value excludes nothing. An "
                "unknown or empty block name (`hourly,,daily`, a trailing comma) is 400, as is a "
                "space around a name (`hourly, daily`).",
                {
                    "type": "array",
                    "items": {
                        "type": "string",
                        "enum": ["currently", "minutely", "hourly", "daily", "alerts"],
                    },
                },
                style="form",
                explode=False,
                example=["minutely", "alerts"],
            ),
        ],
        responses(
            success("The forecast.", "Forecast"),
            {
                400: "Invalid coordinates or parameters (unknown units, extend or exclude value, "
                "malformed lang), or a point outside the model's domain when the data is a "
                "regional model (the detail names the domain; edge values are never served "
                "as a point's weather).",
                403: "",
                503: unavailable("Forecast"),
            },
        ),
        KEY,
    )
    return {"/forecast/{coordinates}": {"get": forecast}}


SCHEMAS = {
    "ForecastPoint": obj(
        _POINT, description="Conditions at the time of the request (`currently`)."
    ),
    "HourlyPoint": obj(_POINT, description="One hour, from its start."),
    "DailyPoint": obj(
        _DAY,
        required=[k for k in _DAY if k not in ("sunriseTime", "sunsetTime")],
        description="One calendar day in the location's timezone.",
    ),
    "MinutelyPoint": _MINUTE,
    "MinutelyBlock": _block(
        "MinutelyPoint",
        "61 entries, one a minute from the start of the "
        "current minute; the summary says when "
        "precipitation starts or stops, and names its "
        "main kind by amount (mixed when a second kind "
        "makes a quarter of it or more).",
    ),
    "HourlyBlock": _block(
        "HourlyPoint",
        "48 hours from the current local hour (168 with "
        "`extend=hourly`); the summary and the icon cover "
        "the next 24 hours (the periods of today and "
        "tomorrow the summary can name).",
    ),
    "DailyBlock": _block(
        "DailyPoint",
        "7 calendar days from today (fewer when the data "
        "ends sooner: a day with no hour of data is left "
        "out, as hours past its end are); the summary covers "
        "the week, naming the days whose own summary "
        "mentions precipitation.",
    ),
    "Alert": _ALERT,
    "ForecastFlags": _FLAGS,
    "Forecast": _FORECAST,
}
