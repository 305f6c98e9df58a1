"""OpenAPI paths and schemas of air quality (docs/api/air-quality.md)."""

from __future__ import annotations

from server.openapi.parts import (
    KEY,
    LAT,
    LON,
    UNIX,
    coordinates,
    nullable,
    obj,
    operation,
    ref,
    responses,
    success,
    unavailable,
)

_EU_AQI = (
    "European AQI (EEA 2024 bands, hourly concentrations of PM2.5, PM10, NO2, O3 and "
    "SO2): each pollutant's band (good, fair, moderate, poor, very poor) maps linearly "
    "onto 20 points of a 0-100 scale (0-20 good ... 80-100 very poor); above the very "
    "poor limit (extremely poor) the scale continues with the very poor band's slope, "
    "capped at 500. A value on a band limit belongs to the higher band. The index is the "
    "largest of the five, rounded half up to an integer. Band limits (µg/m³): PM2.5 5, "
    "15, 50, 90, 140; PM10 15, 45, 120, 195, 270; NO2 10, 25, 60, 100, 150; O3 60, 100, "
    "120, 160, 180; SO2 20, 40, 125, 190, 275. Null when a pollutant is unknown."
)
_US_AQI = (
    "US AQI (EPA breakpoints with the 2024 PM2.5 revision). Averaging windows end with "
    "the hour itself: PM2.5 and PM10 the mean of the 24 hourly values up to and "
    "including the hour, CO the 8-hour mean, O3 the larger of the 8-hour-mean and the "
    "1-hour sub-index (8-hour O3 counts as 300 above 0.200 ppm; 1-hour O3 applies from "
    "0.125 ppm), NO2 the hour's value, SO2 the hour's value below 305 ppb (truncated); "
    "where the hour's SO2 reaches 305 ppb, the range in which 1-hour SO2 defines no "
    "AQI, the 24-hour mean's sub-index (defined from 305 ppb) and at least 200. A mean "
    "needs 75 % of its hours. "
    "Concentrations are converted at 25 °C (ppb = µg/m³ x 24.45 / molar mass) and "
    "truncated (O3 to 0.001 ppm, PM2.5 and CO to 0.1, PM10, SO2 and NO2 to 1) before "
    "the sub-index formula; sub-indices are rounded half up; the index is the largest, "
    "capped at 500. Null when a pollutant is unknown."
)
_COMMON = (
    "Both indices are computed at request time from the interpolated concentrations "
    "at the point (before the one-decimal rounding of the values shown), so they agree "
    "with the concentrations served; indices are never interpolated between grid cells "
    "(an index is not linear in the concentrations), and the data stores none. "
    "Averaging windows end with the hour itself: the 24-hour mean at hour h is the mean "
    "of hours h-23 to h (the reading of 'the 24 hours before the hour')."
)


def _ug(description: str) -> dict:
    return nullable(
        "number",
        f"{description}, µg/m³, one decimal; bilinear at the point; null "
        "when the model has no value.",
        minimum=0,
    )


def _pollen(plant: str) -> dict:
    return nullable(
        "number",
        f"{plant} pollen, grains/m³ (a number concentration: CAMS pollen "
        "is not a mass, so interface.md's µg/m³ label does not apply), "
        "one decimal. Europe only; null when the model has no value "
        "(e.g. out of season).",
        minimum=0,
    )


_AQ_RECORD = obj(
    {
        "time": {**UNIX, "description": "Start of the hour, Unix timestamp (s, UTC)."},
        "europeanAqi": nullable("integer", _EU_AQI, minimum=0, maximum=500),
        "usAqi": nullable("integer", _US_AQI, minimum=0, maximum=500),
        "pm25": _ug("Fine particulate matter (PM2.5)"),
        "pm10": _ug("Coarse particulate matter (PM10)"),
        "ozone": _ug("Ground-level ozone (O3)"),
        "nitrogenDioxide": _ug("Nitrogen dioxide (NO2)"),
        "sulphurDioxide": _ug("Sulphur dioxide (SO2)"),
        "carbonMonoxide": _ug("Carbon monoxide (CO)"),
        "dustAod": nullable(
            "number",
            "Dust aerosol optical depth at 550 nm (dimensionless, CAMS "
            "global `duaod550`, regridded onto the European 0.1° cells and "
            "interpolated at the point like every field), three decimals. "
            "Europe only (CAMS Europe's `dust` is a mass concentration, "
            "not this field).",
            minimum=0,
        ),
        "pollenBirch": _pollen("Birch"),
        "pollenGrass": _pollen("Grass"),
        "pollenOlive": _pollen("Olive"),
        "pollenRagweed": _pollen("Ragweed"),
        "pollenAlder": _pollen("Alder"),
        "pollenMugwort": _pollen("Mugwort"),
    },
    required=[
        "time",
        "europeanAqi",
        "usAqi",
        "pm25",
        "pm10",
        "ozone",
        "nitrogenDioxide",
        "sulphurDioxide",
        "carbonMonoxide",
    ],
    description="Air quality of one hour. The Europe-only fields (dustAod, pollen*) are present "
    "inside the CAMS European domain (longitude -25 to 45, latitude 30 to 72, edges "
    "included), with null where the model has no value, and absent outside it. " + _COMMON,
    examples=[
        {
            "time": 1795410000,
            "europeanAqi": 28,
            "usAqi": 55,
            "pm25": 9.1,
            "pm10": 16.6,
            "ozone": 43.7,
            "nitrogenDioxide": 7.2,
            "sulphurDioxide": 0.9,
            "carbonMonoxide": 182.4,
            "dustAod": 0.006,
            "pollenBirch": None,
            "pollenGrass": None,
            "pollenOlive": None,
            "pollenRagweed": None,
            "pollenAlder": None,
            "pollenMugwort": None,
        },
        {
            "time": 1795410000,
            "europeanAqi": 68,
            "usAqi": 149,
            "pm25": 65.0,
            "pm10": 98.8,
            "ozone": 20.8,
            "nitrogenDioxide": 52.0,
            "sulphurDioxide": 1.2,
            "carbonMonoxide": 876.8,
        },
    ],
)

_DESCRIPTION = (
    "Current and hourly pollutant concentrations and two AQI indices from the Copernicus "
    "Atmosphere Monitoring Service (CAMS). Inside the CAMS European domain (longitude -25 to "
    "45, latitude 30 to 72, edges included) the CAMS European forecast (0.1°) answers and "
    "records also carry `dustAod` and the six pollen types; elsewhere the CAMS global forecast "
    "(0.4°) answers and those fields are absent. Values are interpolated bilinearly between "
    "the four surrounding grid cells (an unknown cell drops out). Several model runs are "
    "stitched into one hourly series, newest run first; the global model-level fields' "
    "3-hourly steps are interpolated to hours.\n\n"
    "`current` is the current hour (UTC, the hour that has started); `hourly.data` runs from it "
    "to the end of the loaded forecast (typically 3-4 days). `timezone` is the IANA zone of "
    "the coordinate. Responses may be cached until the end of the current hour (max-age "
    "says how long; the ETag changes with the hour and the data version). When the loaded "
    "data does not cover the current hour the answer is 503 (stale), never another hour's "
    "values. " + _COMMON
)


def paths() -> dict:
    """The path of docs/api/air-quality.md."""
    air = operation(
        "getAirQuality",
        "air quality",
        "Air quality at a coordinate",
        _DESCRIPTION,
        [coordinates("47.3769,8.5417")],
        responses(
            success("Air quality at the point: current hour and hourly forecast.", "AirQuality"),
            {
                400: "Invalid coordinates: not two comma-separated finite numbers, or out of "
                "range.",
                403: "",
                503: unavailable("Air quality"),
            },
        ),
        KEY,
    )
    return {"/air-quality/{coordinates}": {"get": air}}


SCHEMAS = {
    "AirQualityRecord": _AQ_RECORD,
    "AirQuality": obj(
        {
            "latitude": {**LAT, "description": "Latitude asked for, degrees, 5 decimals."},
            "longitude": {**LON, "description": "Longitude asked for, degrees, 5 decimals."},
            "timezone": {
                "type": "string",
                "description": "IANA timezone of the coordinate.",
                "examples": ["Europe/Zurich"],
            },
            "current": ref("schemas", "AirQualityRecord"),
            "hourly": obj(
                {
                    "data": {
                        "type": "array",
                        "items": ref("schemas", "AirQualityRecord"),
                        "minItems": 1,
                        "description": "Every hour from the current one to the end "
                        "of the loaded forecast, oldest first; the "
                        "first item equals `current`.",
                    }
                }
            ),
        },
        description="`current` is the current hour; `hourly.data` starts with it.",
    ),
}
