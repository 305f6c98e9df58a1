"""OpenAPI paths and schemas of air quality (interface.md 4.6)."""

from __future__ import annotations

from server.openapi.parts import (
    KEY, LAT, LON, PENDING, UNIX, coordinates, nullable, obj, operation, ref, responses,
    success, unavailable,)

def _ug(description: str) -> dict:
    return nullable("number", f"{description}, µg/m³.", minimum=0)


def _pollen(plant: str) -> dict:
    return nullable("number", f"{plant} pollen, grains/m³ (a number concentration: CAMS pollen "
                              "is not a mass, so interface.md's µg/m³ label does not apply). "
                              "Europe only; null when the model has no value (e.g. out of "
                              "season).", minimum=0)


_AQ_RECORD = obj({
    "time": {**UNIX, "description": "Start of the hour, Unix timestamp (s, UTC)."},
    "europeanAqi": nullable("integer", "European AQI: the 2024 EEA bands (good, fair, moderate, "
                                       "poor, very poor, extremely poor) mapped to 0-100, 20 per "
                                       "band, extrapolated above 100, capped at 500.",
                            minimum=0, maximum=500),
    "usAqi": nullable("integer", "US AQI from the 2024 EPA breakpoints (24 h means for PM, 8 h "
                                 "for CO, max of 1 h and 8 h for O3), capped at 500.",
                      minimum=0, maximum=500),
    "pm25": _ug("Fine particulate matter (PM2.5)"),
    "pm10": _ug("Coarse particulate matter (PM10)"),
    "ozone": _ug("Ground-level ozone"),
    "nitrogenDioxide": _ug("Nitrogen dioxide"),
    "sulphurDioxide": _ug("Sulphur dioxide"),
    "carbonMonoxide": _ug("Carbon monoxide"),
    "dustAod": nullable("number", "Dust aerosol optical depth at 550 nm (dimensionless, CAMS "
                                  "global `duaod550`). Europe only.", minimum=0),
    "pollenBirch": _pollen("Birch"), "pollenGrass": _pollen("Grass"),
    "pollenOlive": _pollen("Olive"), "pollenRagweed": _pollen("Ragweed"),
    "pollenAlder": _pollen("Alder"), "pollenMugwort": _pollen("Mugwort"),
}, required=["time", "europeanAqi", "usAqi", "pm25", "pm10", "ozone", "nitrogenDioxide",
             "sulphurDioxide", "carbonMonoxide"],
    description="Air quality of one hour. The Europe-only fields (dustAod, pollen*) are present "
                "inside the CAMS European domain (longitude -25 to 45, latitude 30 to 72) and "
                "absent outside it.")



def paths() -> dict:
    """Paths of interface.md 4.6."""
    air = operation(
        "getAirQuality", "air quality", "Air quality at a coordinate",
        "Current and hourly pollutant concentrations and two AQI indices. Inside the CAMS "
        "European domain (longitude -25 to 45, latitude 30 to 72) records also carry dustAod "
        "and pollen (grains/m³, a number concentration); outside it those fields are absent. "
        "`current` is the current hour; `hourly.data` runs from it to the end of the loaded "
        "forecast." + PENDING.format(area="air quality"),
        [coordinates("47.3769,8.5417")],
        responses(success("Air quality.", "AirQuality"), {
            400: "Invalid coordinates.", 403: "", 503: unavailable("Air quality")}), KEY)
    return {"/air-quality/{coordinates}": {"get": air}}


SCHEMAS = {
    "AirQualityRecord": _AQ_RECORD,
    "AirQuality": obj({
        "latitude": LAT, "longitude": LON, "timezone": {"type": "string"},
        "current": ref("schemas", "AirQualityRecord"),
        "hourly": obj({"data": {"type": "array", "items": ref("schemas", "AirQualityRecord"),
                                "description": "From the current hour to the end of the "
                                               "loaded forecast."}}),
    }, description="`current` is the current hour."),
}
