"""Unit strings as cfgrib, wgrib2 and CF write them, and the conversions to the artifact's SI
units."""

from __future__ import annotations

import re

import numpy as np

# quantity -> {canonical unit spelling: (factor, offset)}: value_si = value * factor + offset.
CONVERSIONS: dict[str, dict[str, tuple[float, float]]] = {
    "temperature_c": {"K": (1.0, -273.15), "degC": (1.0, 0.0), "C": (1.0, 0.0)},
    "pressure_hpa": {"Pa": (0.01, 0.0), "hPa": (1.0, 0.0), "mbar": (1.0, 0.0), "mb": (1.0, 0.0)},
    # No empty unit: 50 could be 50 % or a bad 0-1 value; a file without the attribute is
    # refused (model_netcdf says how to fix it) rather than read wrongly by a factor of 100.
    "fraction": {
        "%": (0.01, 0.0),
        "percent": (0.01, 0.0),
        "1": (1.0, 0.0),
        "(0 - 1)": (1.0, 0.0),
        "0-1": (1.0, 0.0),
        "~": (1.0, 0.0),
    },
    "speed_ms": {
        "m s-1": (1.0, 0.0),
        "km h-1": (1 / 3.6, 0.0),
        "km hr-1": (1 / 3.6, 0.0),
        "kt": (0.514444, 0.0),
        "knots": (0.514444, 0.0),
    },
    # Precipitation rate; 1 kg of water per m2 is 1 mm.
    "rate_mmh": {
        "kg m-2 s-1": (3600.0, 0.0),
        "mm s-1": (3600.0, 0.0),
        "mm h-1": (1.0, 0.0),
        "mm hr-1": (1.0, 0.0),
        "m s-1": (3.6e6, 0.0),
    },
    "amount_mm": {"kg m-2": (1.0, 0.0), "mm": (1.0, 0.0), "m": (1000.0, 0.0)},
    "length_m": {
        "m": (1.0, 0.0),
        "km": (1000.0, 0.0),
        "gpm": (1.0, 0.0),
        # surface geopotential (ECMWF z) divided by standard gravity
        "m2 s-2": (1 / 9.80665, 0.0),
    },
    "energy_jkg": {"J kg-1": (1.0, 0.0)},
    # Categorical flags (0/1) and code tables: taken as they are ("-" and "non-dim" are
    # what wgrib2 -netcdf writes for CRAIN and friends).
    "category": {
        "": (1.0, 0.0),
        "1": (1.0, 0.0),
        "~": (1.0, 0.0),
        "0-1": (1.0, 0.0),
        "(0 - 1)": (1.0, 0.0),
        "numeric": (1.0, 0.0),
        "-": (1.0, 0.0),
        "non-dim": (1.0, 0.0),
    },
}

_POWER = re.compile(r"\*\*|\^")
_TOKEN = re.compile(r"([A-Za-z]+)(-?\d+)?")
# Whole-string spellings of one unit (UDUNITS and CF names among them).
_ALIASES = {
    "deg C": "degC",
    "degrees C": "degC",
    "Celsius": "degC",
    "celsius": "degC",
    "degree_Celsius": "degC",
    "degrees_Celsius": "degC",
    "degree_C": "degC",
    "degrees_C": "degC",
    "deg_C": "degC",
    "degreeC": "degC",
    "°C": "degC",
    "kelvin": "K",
    "Kelvin": "K",
    "degK": "K",
    "deg_K": "K",
    "degree_K": "K",
    "degreeK": "K",
    "degree_kelvin": "K",
    "degree_Kelvin": "K",
    "millibar": "mbar",
    "millibars": "mbar",
    "hectopascal": "hPa",
    "hectopascals": "hPa",
    "pascal": "Pa",
    "pascals": "Pa",
    "m2 s-2": "m2 s-2",
}


def canonical_unit(raw: str) -> str:
    """One spelling per unit: 'm s**-1', 'm/s', 'm s^-1' and 'm.s-1' all become 'm s-1'."""
    text = " ".join(str(raw).strip().split())
    if text in _ALIASES or "code table" in text.lower() or text in ("(0 - 1)", "~", "%"):
        return _ALIASES.get(text, text)
    text = _POWER.sub("", text)
    text = re.sub(r"(?<=[A-Za-z0-9])\.(?=[A-Za-z])", " ", text)
    parts = text.split("/")
    tokens = parts[0].split()
    for denominator in parts[1:]:
        for token in denominator.split():
            match = _TOKEN.fullmatch(token)
            if not match:
                return text
            power = int(match.group(2) or 1)
            tokens.append(f"{match.group(1)}{-power}")
    return " ".join(tokens)


def converter(quantity: str, raw_unit: str) -> tuple[float, float] | None:
    """(factor, offset) turning values in `raw_unit` into the quantity's SI unit, or None."""
    unit = canonical_unit(raw_unit)
    if quantity == "category" and "code table" in unit.lower():
        return 1.0, 0.0
    return CONVERSIONS[quantity].get(unit)


def apply(values: np.ndarray, factor: float, offset: float) -> np.ndarray:
    """values * factor + offset as float32 (in place when possible)."""
    out = np.asarray(values, dtype=np.float32)
    if factor != 1.0:
        out = out * np.float32(factor)
    if offset != 0.0:
        out = out + np.float32(offset)
    return out
