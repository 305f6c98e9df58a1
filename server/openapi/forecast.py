"""OpenAPI paths and schemas of the forecast (interface.md 4.7)."""

from __future__ import annotations

from server.openapi.parts import (
    ICONS, KEY, LANGUAGE, LAT, LON, PENDING, UNIX, coordinates, nullable, obj, operation, param,
    ref, responses, success, unavailable,)

UNITS_TABLE = """
| Measurement | us | si | ca | uk |
|---|---|---|---|---|
| Temperature | °F | °C | °C | °C |
| Wind speed | mph | m/s | km/h | mph |
| Precipitation | in/hr | mm/hr | mm/hr | mm/hr |
| Visibility | mi | km | km | mi |
| Elevation | ft | m | m | m |
"""


FORECAST = """\
Current conditions, minutely precipitation for the next hour, hourly (48 h, longer with
`extend=hourly`) and daily (7 calendar days in the location's timezone) forecasts, and active
alerts. `offset` is the timezone's UTC offset in hours now. `flags` reports the units used,
the sources with their run times and the data version. Units by system:
""" + UNITS_TABLE


_UNITS = " Unit per `flags.units`: see the units table in the operation description."
_ICON = {"type": "string", "enum": ICONS,
         "description": "Condition code plus d (day) or n (night): 01 clear, 02 few clouds, 03 "
                        "scattered clouds, 04 broken or overcast, 09 showers, 10 rain, 11 "
                        "thunderstorm, 13 snow or sleet, 50 fog or mist."}
_PRECIP_TYPE = {"type": "string", "enum": ["none", "rain", "snow", "sleet"],
                "description": "Freezing rain and ice pellets count as sleet."}
_FRACTION = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_POINT = {
    "time": UNIX,
    "summary": {"type": "string", "description": "Human-readable, in `lang`."},
    "icon": _ICON,
    "is_day": {"type": "boolean", "description": "True during daylight."},
    "temperature": nullable("number", "Air temperature." + _UNITS),
    "apparentTemperature": nullable("number", "Feels-like temperature." + _UNITS),
    "humidity": {**_FRACTION, "description": "Relative humidity, 0 to 1."},
    "pressure": nullable("number", "Sea-level pressure, hPa."),
    "windSpeed": nullable("number", "Wind speed." + _UNITS, minimum=0),
    "windDirection": nullable("integer", "Direction the wind comes from, degrees.", minimum=0,
                              maximum=360),
    "cloudCover": {**_FRACTION, "description": "Cloud cover, 0 to 1."},
    "visibility": nullable("number", "Visibility, capped at 16 km (10 mi)." + _UNITS,
                           minimum=0),
}
_HOUR = {**_POINT,
         "precipitation": nullable("number", "Precipitation intensity." + _UNITS, minimum=0),
         "precipitationType": _PRECIP_TYPE}
_DAY = {
    "time": {**UNIX, "description": "Local midnight starting the calendar day, Unix timestamp."},
    "summary": {"type": "string"}, "icon": {**_ICON, "description": "Dominant condition; daily "
                                                                    "icons always end in d."},
    "is_day": {"type": "boolean"},
    "temperatureHigh": nullable("number", "Maximum from 06:00 to 18:00 local." + _UNITS),
    "temperatureLow": nullable("number", "Minimum from 18:00 to 06:00 the next morning." + _UNITS),
    "humidity": _FRACTION, "pressure": nullable("number", "hPa."),
    "windSpeed": nullable("number", "Wind speed." + _UNITS, minimum=0),
    "windDirection": nullable("integer", "Degrees.", minimum=0, maximum=360),
    "cloudCover": _FRACTION,
    "precipitation": nullable("number", "Daily precipitation total." + _UNITS, minimum=0),
    "sunriseTime": nullable("integer", "NOAA algorithm at -0.833°; null on days of polar night "
                                       "or midnight sun."),
    "sunsetTime": nullable("integer", "As sunriseTime."),
    "moonPhase": {"type": "number", "minimum": 0, "maximum": 1,
                  "description": "Lunation fraction at local noon: 0 new, 0.25 first quarter, "
                                 "0.5 full, 0.75 last quarter."},
}
_MINUTE = obj({"time": UNIX,
               "precipitation": nullable("number", "Precipitation intensity." + _UNITS,
                                         minimum=0),
               "precipitationProbability": {**_FRACTION, "description": "0 to 1."},
               "precipitationType": _PRECIP_TYPE})


def _block(item: str, description: str) -> dict:
    return obj({"summary": {"type": "string"}, "icon": _ICON,
                "data": {"type": "array", "items": ref("schemas", item)}},
               description=description)


_ALERT = obj({
    "title": {"type": "string"}, "description": {"type": "string"},
    "time": {**UNIX, "description": "Start, Unix timestamp."},
    "expires": nullable("integer", "End, Unix timestamp; null when open-ended."),
    "severity": {"type": "string", "enum": ["Extreme", "Severe", "Moderate", "Minor", "Unknown"],
                 "description": "CAP severity."},
    "regions": {"type": "array", "items": {"type": "string"}, "description": "When known."},
    "uri": {"type": "string", "format": "uri", "description": "When known."},
}, required=["title", "description", "time", "expires", "severity"])
_FLAGS = obj({
    "units": {"type": "string", "enum": ["us", "si", "ca", "uk"],
              "description": "Unit system used (the resolved one when `units=auto`)."},
    "sources": {"type": "array", "description": "Models that answered, with their run time.",
                "items": obj({"name": {"type": "string"},
                              "run_time": {"type": "string", "format": "date-time"}})},
    "version": {"type": "string", "description": "Data version (also in X-Data-Version)."},
})
_FORECAST = obj({
    "latitude": LAT, "longitude": LON,
    "timezone": {"type": "string", "description": "IANA timezone of the coordinate."},
    "offset": {"type": "number", "description": "UTC offset of the timezone now, in hours "
                                                "(DST-aware), e.g. 5.5 or -4."},
    "elevation": {"type": "number", "description": "Elevation; ft for `us`, m otherwise."},
    "currently": ref("schemas", "ForecastPoint"),
    "minutely": ref("schemas", "MinutelyBlock"),
    "hourly": ref("schemas", "HourlyBlock"),
    "daily": ref("schemas", "DailyBlock"),
    "alerts": {"type": "array", "items": ref("schemas", "Alert"),
               "description": "Active alerts; always an array, empty when none."},
    "flags": ref("schemas", "ForecastFlags"),
}, required=["latitude", "longitude", "timezone", "offset", "elevation", "flags"],
    description="Blocks named in `exclude` are absent; all others are present.")



def paths() -> dict:
    """Paths of interface.md 4.7."""
    forecast = operation(
        "getForecast", "forecast", "Weather forecast at a coordinate",
        FORECAST + PENDING.format(area="forecast"),
        [coordinates("47.3769,8.5417"),
         param("units", "query", "Unit system: us (imperial), si (metric), ca (metric, km/h "
               "wind), uk (metric, mph wind and miles visibility), auto (US, LR, MM use us; GB "
               "and IE uk; CA ca; every other country si). The units used are in flags.units.",
               {"type": "string", "enum": ["us", "si", "ca", "uk", "auto"], "default": "us"}),
         param("lang", "query", "Language of the text summaries (about 55 languages); a "
               "well-formed but unsupported code falls back to English, a malformed one is "
               "400.", {"type": "string", "pattern": LANGUAGE, "default": "en"}),
         param("extend", "query", "`hourly` extends the hourly block beyond 48 hours, to the "
               "end of the loaded forecast.", {"type": "string", "enum": ["hourly"]}),
         param("exclude", "query", "Comma-separated blocks to omit: an excluded block is "
               "absent from the response. An unknown block name is 400.",
               {"type": "array", "uniqueItems": True, "items": {
                   "type": "string", "enum": ["currently", "minutely", "hourly", "daily",
                                              "alerts"]}},
               style="form", explode=False, example=["minutely", "alerts"])],
        responses(success("The forecast.", "Forecast"), {
            400: "Invalid coordinates or parameters (unknown units, extend or exclude value, "
                 "malformed lang).", 403: "", 503: unavailable("Forecast")}), KEY)
    return {"/forecast/{coordinates}": {"get": forecast}}


SCHEMAS = {
    "ForecastPoint": obj(_POINT, description="Conditions at one time (`currently`)."),
    "HourlyPoint": obj(_HOUR, description="One hour: the `currently` fields plus precipitation."),
    "DailyPoint": obj(_DAY, description="One calendar day in the location's timezone."),
    "MinutelyPoint": _MINUTE,
    "MinutelyBlock": _block("MinutelyPoint", "61 entries, one a minute from the start of the "
                                             "current minute."),
    "HourlyBlock": _block("HourlyPoint", "The next 48 hours; longer with `extend=hourly`."),
    "DailyBlock": _block("DailyPoint", "The next 7 days."),
    "Alert": _ALERT,
    "ForecastFlags": _FLAGS,
    "Forecast": _FORECAST,
}
