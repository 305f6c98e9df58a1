"""Unit systems of the forecast (docs/api/forecast.md#units): SI values in, the system's units
out."""

from __future__ import annotations

from dataclasses import dataclass

MS_TO_MPH, MS_TO_KMH = 2.2369363, 3.6
MM_TO_IN, KM_TO_MI, M_TO_FT = 0.0393701, 0.6213712, 3.2808399


@dataclass(frozen=True)
class UnitSystem:
    """Factors from SI (°C, m/s, mm/h and mm, km, m) to one system's units."""

    name: str
    fahrenheit: bool
    speed: float  # from m/s
    precipitation: float  # from mm (and mm/h)
    visibility: float  # from km
    elevation: float  # from m

    def temperature(self, celsius):
        """°C or °F."""
        return celsius * 1.8 + 32.0 if self.fahrenheit else celsius


SYSTEMS = {
    "us": UnitSystem("us", True, MS_TO_MPH, MM_TO_IN, KM_TO_MI, M_TO_FT),
    "si": UnitSystem("si", False, 1.0, 1.0, 1.0, 1.0),
    "ca": UnitSystem("ca", False, MS_TO_KMH, 1.0, 1.0, 1.0),
    "uk": UnitSystem("uk", False, MS_TO_MPH, 1.0, KM_TO_MI, 1.0),
}
# The system of units=auto by ISO country code; every other is si (docs/api/forecast.md#units-auto).
AUTO = {"US": "us", "LR": "us", "MM": "us", "GB": "uk", "IE": "uk", "CA": "ca"}


def for_country(country_code: str | None) -> UnitSystem:
    """The unit system units=auto picks for a country (si when unknown)."""
    return SYSTEMS[AUTO.get(country_code or "", "si")]
